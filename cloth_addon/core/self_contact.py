"""Self-contact: the cloth's layers kept a gap apart, and never passing through each other.

Per substep, with x0 the (crossing-free) start and x1 the solver's end:

1. Candidates (kept over substeps while they hold). Vertex-triangle and edge-edge pairs that
   can come within the gap d. Motion is split into the cloth's mean displacement, which no pair
   feels, and each vertex's deviation from it. Each vertex gets a budget (a few times its
   deviation over a substep, plus a slack); a k-d tree finds the pairs whose exact gap at the
   reference positions is within d plus their features' budgets, and stores that gap. While no
   vertex deviates from the reference by more than its budget, every other pair stays further
   apart than d, and a candidate's gap is at least its reference gap less its features'
   deviations since: a scalar test per pair drops most before any geometry. A vertex that
   outruns its budget gets a larger one and the pairs that brings within reach are added
   (`cover`); a falling or swinging sheet keeps its set for several substeps. Features that
   share a vertex are never pairs.
2. Proximity (`separate`, a few passes, interleaved with the colliders by the contact stage).
   Pairs closer than d at the end are pushed apart along the side they were on at the start:
   an inelastic position projection weighted by inverse mass (Jacobi-averaged per vertex),
   with Coulomb friction on the pair's relative tangential motion, capped by the normal
   correction (Bridson, Fedkiw, Anderson 2002). Pairs already closer than d in the rest shape
   are the cloth's own neighbourhood and are left alone.
3. The guarantee (`untangle`). Continuous collision detection (ccd.py) finds every candidate
   pair that touches during the substep on the straight paths x0 -> x1. The vertices of
   touching pairs form impact zones (Provot 1997; Bridson et al. 2002) that move rigidly with
   their mass-weighted mean displacement (translation only), so nothing inside a zone can cross;
   zones that still touch others merge, up to ZONE_ROUNDS times; whatever still touches then
   stays where it started the substep. A substep that starts without crossings ends without
   them, whatever the solver, iterations, substeps, gap or speed, provided every motion is a
   straight line over the substep (which position-based stepping makes it).
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from . import ccd, geometry

# Proximity passes per substep (each followed by the colliders).
PASSES = 3
# Impact-zone merges before the fall-back (vertices back at the start of the substep).
ZONE_ROUNDS = 12
# A vertex's candidate budget: GROW times its deviation over the substep that found them, plus
# SLACK times the gap, so that the set lasts a few substeps and covers what the response moves.
GROW = 2.0
SLACK = 0.25
# The candidates are found afresh when more than this fraction of the vertices outrun their
# budgets at once (rather than growing the budgets of those).
REBUILD = 0.25
# Budgets that would bring more sphere pairs than this many per vertex (and more than
# PAIR_FLOOR in all) are cut to the substep's own motion (memory: a large cloth flung about must
# not list every pair of its features).
PAIR_LIMIT = 400
PAIR_FLOOR = 2_000_000
# In an impact zone, a vertex that a collider holds counts this many times its mass, so that a
# zone landing on the floor mostly stops with it rather than being pushed into it.
HELD_WEIGHT = 20.0
# Touch tolerance of the continuous test, as a fraction of the gap (and never below 1 um).
_TOUCH = 1e-3


def _spheres(x, features):
    """(centres (k, 3), radii (k,)) of bounding spheres of features (k, m) vertex ids at x."""
    corners = x[features]
    centre = corners.mean(axis=1)
    offset = corners - centre[:, None]
    return centre, np.sqrt(np.einsum("ijk,ijk->ij", offset, offset).max(axis=1))


def _member(keys, table):
    """(k,) bool: keys found in the sorted array table."""
    if len(table) == 0:
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[at] == keys


def _scatter(index, vectors, n):
    """(n, 3) per-vertex mean of the (k, 3) vectors sent to vertex index (k,) (Jacobi average)."""
    count = np.bincount(index, minlength=n).astype(np.float64)
    out = np.empty((n, 3))
    for axis in range(3):
        out[:, axis] = np.bincount(index, vectors[:, axis], n)
    return out / np.maximum(count, 1.0)[:, None]


class SelfContact:
    """Self-contact of one ClothModel (and of several cloth objects simulated as one model).

    distance: m, the gap kept between layers; friction: Coulomb coefficient between layers.
    """

    def __init__(self, model, distance: float, friction: float):
        if not distance > 0.0:
            raise ValueError(f"self-contact distance must be > 0, got {distance!r}")
        self.model = model
        self.distance = float(distance)
        self.friction = float(friction)
        self.edges, self.triangles, _ = model.contact_features
        self._rest_exclusions()
        self.stats = {"vf": 0, "ee": 0, "zones": 0, "rounds": 0, "frozen": 0}

    # -- set-up ----------------------------------------------------------------------------
    def _rest_exclusions(self):
        """Pairs already closer than the gap in the rest shape: the cloth's own neighbourhood,
        which proximity must not push apart (continuous detection still watches them)."""
        rest, d = self.model.rest_positions, self.distance
        vf_p, vf_t, vf_gap, ea, eb, ee_gap = self._near(rest, np.full(len(rest), 0.5 * d))
        close = vf_gap < d
        self._vf_excluded = np.sort(vf_p[close] * max(len(self.triangles), 1) + vf_t[close])
        close = ee_gap < d
        self._ee_excluded = np.sort(ea[close] * max(len(self.edges), 1) + eb[close])

    # -- broad phase -------------------------------------------------------------------------
    def _near(self, x, reach, moved=None):
        """Vertex-triangle pairs (p, t, gap) and edge-edge pairs (a < b, gap) at positions x (n, 3)
        closer than reach_p + reach_q (reach: (n,) m per vertex; a feature takes its vertices'
        largest); gap: (k,) m, the exact distance between the two features. Pairs sharing a
        vertex are left out. moved: optional (n,) bool, only pairs with one of these vertices.
        Raises geometry.TooManyPairs rather than list more sphere pairs than PAIR_LIMIT per
        vertex (or PAIR_FLOOR)."""
        tris, edges = self.triangles, self.edges
        limit = max(PAIR_LIMIT * len(x), PAIR_FLOOR)
        vf_p = vf_t = ea = eb = np.zeros(0, dtype=np.int64)
        vf_gap = ee_gap = np.zeros(0)
        if len(tris):
            centre, radius = _spheres(x, tris)
            tri_reach = reach[tris].max(axis=1)
            if moved is None:
                vf_p, vf_t = geometry.sphere_pairs(x, reach, centre, radius + tri_reach, limit)
            else:
                # moved vertices against every triangle, and every vertex against moved triangles
                rows, hit = np.flatnonzero(moved), np.flatnonzero(moved[tris].any(axis=1))
                p1, t1 = geometry.sphere_pairs(x[rows], reach[rows], centre, radius + tri_reach, limit)
                p2, t2 = geometry.sphere_pairs(x, reach, centre[hit], radius[hit] + tri_reach[hit], limit)
                key = np.unique(np.concatenate([rows[p1] * len(tris) + t1, p2 * len(tris) + hit[t2]]))
                vf_p, vf_t = key // len(tris), key % len(tris)
            keep = np.all(tris[vf_t] != vf_p[:, None], axis=1)
            vf_p, vf_t = vf_p[keep], vf_t[keep]
            corners = tris[vf_t]
            q, _, _ = geometry.closest_points(x[vf_p], x[corners[:, 0]], x[corners[:, 1]], x[corners[:, 2]])
            vf_gap = np.linalg.norm(x[vf_p] - q, axis=1)
            keep = vf_gap <= reach[vf_p] + tri_reach[vf_t]
            vf_p, vf_t, vf_gap = vf_p[keep], vf_t[keep], vf_gap[keep]
        if len(edges):
            middle, half = _spheres(x, edges)
            extent = half + reach[edges].max(axis=1)
            rows = np.arange(len(edges)) if moved is None else np.flatnonzero(moved[edges].any(axis=1))
            ea, eb = geometry.sphere_pairs(middle[rows], extent[rows], middle, extent, limit)
            ea = rows[ea]
            if moved is not None:  # a pair of two moved edges is found from both ends
                key = np.unique(np.minimum(ea, eb) * len(edges) + np.maximum(ea, eb))
                ea, eb = key // len(edges), key % len(edges)
            a, b = edges[ea], edges[eb]
            keep = (ea < eb) & (a[:, 0] != b[:, 0]) & (a[:, 0] != b[:, 1]) & (a[:, 1] != b[:, 0]) & \
                (a[:, 1] != b[:, 1])
            ea, eb = ea[keep], eb[keep]
            ee_gap = np.linalg.norm(self._edge_gaps(x, ea, eb)[0], axis=1)
            keep = ee_gap <= extent[ea] - half[ea] + extent[eb] - half[eb]
            ea, eb, ee_gap = ea[keep], eb[keep], ee_gap[keep]
        return vf_p, vf_t, vf_gap, ea, eb, ee_gap

    def candidates(self, x0, x1):
        """Find candidate pairs afresh from the start x0 and the current end x1 of a substep,
        (n, 3) m.

        x0 becomes the reference. Each vertex's budget is GROW times its deviation from the
        cloth's mass-weighted mean motion x0 -> x1, plus the slack; pairs closer at x0 than d
        plus their vertices' largest budgets are candidates, with their exact gaps at x0 (later
        positions only need the features' deviations since, _spread, to bound a gap from below).
        They hold for any positions at which no vertex deviates by more than its budget (`cover`
        checks, and grows the budgets that a vertex outruns)."""
        d = self.distance
        deviation = self._deviation(x1 - x0)
        try:
            budget = GROW * deviation + SLACK * d
            found = self._near(x0, budget + 0.5 * d)
        except geometry.TooManyPairs:
            # a cloth in violent motion: budgets for this substep alone; if even those list too
            # many pairs, TooManyPairs reaches prepare/untangle, which hold the cloth still
            budget = deviation + SLACK * d
            found = self._near(x0, budget + 0.5 * d)
        self._reference, self._budget = x0.copy(), budget
        self._add(*found, fresh=True)
        self._built = len(self.vf[0]) + len(self.ee[0])
        self.stats["builds"] = self.stats.get("builds", 0) + 1

    def _add(self, p, t, vf_gap, a, b, ee_gap, fresh=False):
        """Append candidate pairs, with what the tests need of them."""
        vf_proximity = ~_member(p * max(len(self.triangles), 1) + t, self._vf_excluded)
        ee_proximity = ~_member(a * max(len(self.edges), 1) + b, self._ee_excluded)
        for name, values in (("_vf_p", p), ("_vf_t", t), ("_vf_gap", vf_gap), ("_vf_tris", self.triangles[t]),
                             ("_vf_proximity", vf_proximity), ("_ee_a", a), ("_ee_b", b), ("_ee_gap", ee_gap),
                             ("_ee_a_ends", self.edges[a]), ("_ee_b_ends", self.edges[b]),
                             ("_ee_proximity", ee_proximity)):
            old = getattr(self, name, None)
            setattr(self, name, values if old is None or fresh else np.concatenate([old, values]))
        self.vf, self.ee = (self._vf_p, self._vf_t), (self._ee_a, self._ee_b)
        self._ee_ends = (self._ee_a_ends, self._ee_b_ends)
        self.stats["vf"], self.stats["ee"] = len(self._vf_p), len(self._ee_a)

    def _deviation(self, motion):
        """(n,) m: each vertex's motion (n, 3) apart from the cloth's mass-weighted mean motion."""
        mass = self.model.mass
        mean = (mass @ motion) / mass.sum()
        return np.sqrt(np.einsum("ij,ij->i", motion - mean, motion - mean))

    def _spread(self, x):
        """Per feature, how far its vertices at x (n, 3) deviate from the reference at most, apart
        from the mean motion: ((n,) vertices, (t,) triangles, (e,) edges), m."""
        vertex = self._deviation(x - self._reference)
        return vertex, vertex[self.triangles].max(axis=1), vertex[self.edges].max(axis=1)

    def cover(self, x0, x) -> bool:
        """Make the candidates hold at positions x (n, 3) of the substep that starts at x0: two
        features that are no pair are then further apart than the gap at x, and on any straight
        path between two positions covered since the last build. A vertex that deviated from the
        reference by more than its budget gets a larger one, and the pairs that this brings
        within reach are added; when many vertices need that, or the set has grown a lot, it is
        built afresh. Returns whether pairs were added."""
        reference = getattr(self, "_reference", None)
        if reference is None or len(x) != len(reference):
            self.candidates(x0, x)
            return True
        deviation = self._deviation(x - reference)
        over = deviation > self._budget
        if not over.any():
            return False
        if over.sum() > REBUILD * len(x) or len(self.vf[0]) + len(self.ee[0]) > 2 * self._built + 1000:
            self.candidates(x0, x)
            return True
        d = self.distance
        before = self._budget + 0.5 * d
        budget = np.where(over, GROW * deviation + SLACK * d, self._budget)
        try:
            p, t, vf_gap, a, b, ee_gap = self._near(reference, budget + 0.5 * d, over)
        except geometry.TooManyPairs:
            self.candidates(x0, x)
            return True
        self._budget = budget
        # only the pairs that were out of reach before are new
        new = vf_gap > before[p] + before[self.triangles[t]].max(axis=1)
        fresh = ee_gap > before[self.edges[a]].max(axis=1) + before[self.edges[b]].max(axis=1)
        self._add(p[new], t[new], vf_gap[new], a[fresh], b[fresh], ee_gap[fresh])
        self.stats["grown"] = self.stats.get("grown", 0) + 1
        return True

    def prepare(self, x0, x1) -> None:
        """Candidates that hold for the substep x0 -> x1 (n, 3); if they cannot be listed within
        memory, x1 is set back to x0 (this substep does not move the cloth)."""
        try:
            self.cover(x0, x0)
            self.cover(x0, x1)
        except geometry.TooManyPairs:
            self._hold(x0, x1)

    def _hold(self, x0, x1) -> None:
        """The last resort: every free vertex stays where the substep started, in place on x1."""
        free = self.model.inv_mass > 0.0
        x1[free] = x0[free]
        self.stats["held"] = self.stats.get("held", 0) + 1

    # -- proximity -------------------------------------------------------------------------------
    def _edge_gaps(self, x, a, b):
        """(gap (k, 3) from edge b's closest point to edge a's, s (k,), t (k,))."""
        ea, eb = self.edges[a], self.edges[b]
        return geometry.segment_gap(x[ea[:, 0]], x[ea[:, 1]], x[eb[:, 0]], x[eb[:, 1]])

    def separate(self, x, x0) -> None:
        """One proximity pass, in place on x (n, 3): pairs closer than the gap pushed apart to it,
        on the side they were on at x0, with friction on their relative sliding."""
        d, w = self.distance, self.model.inv_mass
        index, vectors = [], []
        p, t, a, b = self._shortlist(x)
        if len(p):
            tris = self.triangles[t]
            q, bary, _ = geometry.closest_points(x[p], x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]])
            gap = x[p] - q
            dist = np.linalg.norm(gap, axis=1)
            near = dist < d
            if np.any(near):
                p, tris, q, bary, gap, dist = p[near], tris[near], q[near], bary[near], gap[near], dist[near]
                # the side at the start: the start triangle's normal, signed by where p was
                n0 = np.cross(x0[tris[:, 1]] - x0[tris[:, 0]], x0[tris[:, 2]] - x0[tris[:, 0]])
                side = np.sign(np.einsum("ij,ij->i", x0[p] - x0[tris[:, 0]], n0))
                q0 = np.einsum("ij,ijk->ik", bary, x0[tris])
                normal = self._direction(gap, dist, x0[p] - q0, side[:, None] * n0)
                self._push(index, vectors, x, x0, np.concatenate([p[:, None], tris], axis=1),
                           np.concatenate([np.ones((len(p), 1)), -bary], axis=1), normal,
                           d - np.einsum("ij,ij->i", gap, normal), w)
        if len(a):
            gap, s, t = self._edge_gaps(x, a, b)
            dist = np.linalg.norm(gap, axis=1)
            near = dist < d
            if np.any(near):
                a, b, gap, s, t, dist = a[near], b[near], gap[near], s[near], t[near], dist[near]
                gap0, _, _ = self._edge_gaps(x0, a, b)
                normal = self._direction(gap, dist, gap0, gap0)
                who = np.concatenate([self.edges[a], self.edges[b]], axis=1)
                weights = np.stack([1.0 - s, s, t - 1.0, -t], axis=1)
                self._push(index, vectors, x, x0, who, weights, normal,
                           d - np.einsum("ij,ij->i", gap, normal), w)
        if index:
            idx = np.concatenate(index)
            x += _scatter(idx, np.concatenate(vectors), len(x))

    def _shortlist(self, x):
        """The proximity candidates (p, t, a, b) that may be closer than the gap at x (n, 3): the
        pair's gap at the reference, less how far both features deviated since, is below d."""
        d = self.distance
        vertex, triangle, edge = self._spread(x)
        (p, t), (a, b) = self.vf, self.ee
        near = self._vf_proximity & (self._vf_gap < d + vertex[p] + triangle[t])
        close = self._ee_proximity & (self._ee_gap < d + edge[a] + edge[b])
        return p[near], t[near], a[close], b[close]

    @staticmethod
    def _direction(gap, dist, gap0, fallback):
        """(k, 3) unit push direction: along the gap, turned to the side the pair had at the start;
        the fallback where the gap has no direction."""
        unit = gap / np.maximum(dist, 1e-300)[:, None]
        flipped = np.einsum("ij,ij->i", unit, gap0) < 0.0
        unit[flipped] *= -1.0
        tiny = dist <= 1e-12
        if np.any(tiny):
            f = fallback[tiny]
            unit[tiny] = f / np.maximum(np.linalg.norm(f, axis=1), 1e-300)[:, None]
        return unit

    def _push(self, index, vectors, x, x0, who, weights, normal, depth, w):
        """Inelastic projection of k contacts on their m vertices each: who (k, m) vertex ids,
        weights (k, m) signed barycentric weights (+ on one side, - on the other), normal (k, 3),
        depth (k,) m to correct; friction cuts the relative tangential slide."""
        inv = w[who]
        denom = np.einsum("ij,ij->i", weights * weights, inv)
        movable = denom > 0.0
        if not np.any(movable):
            return
        who, weights, normal, depth, inv, denom = (v[movable] for v in (who, weights, normal, depth, inv,
                                                                         denom))
        lam = depth / denom
        step = (weights * inv * lam[:, None])[:, :, None] * normal[:, None, :]  # (k, m, 3)
        if self.friction > 0.0:
            # relative slide of the two sides over the substep, tangential part
            slide = np.einsum("ij,ijk->ik", weights, x[who] - x0[who])
            slide -= np.einsum("ij,ij->i", slide, normal)[:, None] * normal
            length = np.linalg.norm(slide, axis=1)
            cut = np.minimum(1.0, self.friction * np.abs(depth) / np.maximum(length, 1e-300))
            mu = (cut / denom)[:, None] * slide  # the impulse that stops that share of the slide
            step -= (weights * inv)[:, :, None] * mu[:, None, :]
        index.append(who.ravel())
        vectors.append(step.reshape(-1, 3))

    # -- the guarantee ---------------------------------------------------------------------------
    def _touching(self, x0, x1, changed=None):
        """(k, 4) vertices of the candidate pairs that touch during x0 -> x1 (vertex-triangle:
        the vertex, then the triangle's corners; edge-edge: both edges' ends). changed: optional
        (n,) bool, the only vertices whose paths changed since the last call: pairs without one
        are known not to touch."""
        tol = max(_TOUCH * self.distance, 1e-6)
        motion = x1 - x0
        groups = []
        # A pair can only touch if its gap at the reference is within what its features deviated
        # since, at x0, plus what they move apart from the mean over the substep.
        vertex, triangle, edge = self._spread(x0)
        step = self._deviation(motion)
        vertex = vertex + step
        triangle = triangle + step[self.triangles].max(axis=1)
        edge = edge + step[self.edges].max(axis=1)
        (p, t), tris = self.vf, self._vf_tris
        keep = self._vf_gap <= vertex[p] + triangle[t] + tol
        if changed is not None:
            keep &= changed[p] | changed[tris].any(axis=1)
        p, t, tris = p[keep], t[keep], tris[keep]
        if len(p):
            # A pair can only touch if its start spheres are closer than the features move
            # relative to each other (a falling sheet's own pairs move together: none).
            centre, radius = _spheres(x0, self.triangles)
            relative = np.linalg.norm(motion[tris] - motion[p][:, None, :], axis=2).max(axis=1)
            may = np.linalg.norm(x0[p] - centre[t], axis=1) - radius[t] <= relative + tol
            p, tris = p[may], tris[may]
            toi = ccd.vertex_triangle_toi(x0[p], x1[p], x0[tris[:, 0]], x1[tris[:, 0]], x0[tris[:, 1]],
                                          x1[tris[:, 1]], x0[tris[:, 2]], x1[tris[:, 2]], tol)
            hit = np.isfinite(toi)
            groups.append(np.concatenate([p[hit, None], tris[hit]], axis=1))
        (a, b), (ea, eb) = self.ee, self._ee_ends
        keep = self._ee_gap <= edge[a] + edge[b] + tol
        if changed is not None:
            keep &= changed[ea].any(axis=1) | changed[eb].any(axis=1)
        a, b, ea, eb = a[keep], b[keep], ea[keep], eb[keep]
        if len(a):
            middle, half = _spheres(x0, self.edges)
            # a point of either edge moves relative to edge a's first end by at most its edge's
            # largest relative end motion: the two add up
            reference = motion[ea[:, :1]]
            relative = np.linalg.norm(motion[ea] - reference, axis=2).max(axis=1) + \
                np.linalg.norm(motion[eb] - reference, axis=2).max(axis=1)
            may = np.linalg.norm(middle[a] - middle[b], axis=1) - half[a] - half[b] <= relative + tol
            ea, eb = ea[may], eb[may]
            toi = ccd.edge_edge_toi(x0[ea[:, 0]], x1[ea[:, 0]], x0[ea[:, 1]], x1[ea[:, 1]],
                                    x0[eb[:, 0]], x1[eb[:, 0]], x0[eb[:, 1]], x1[eb[:, 1]], tol)
            hit = np.isfinite(toi)
            groups.append(np.concatenate([ea[hit], eb[hit]], axis=1))
        return np.concatenate(groups) if groups else np.zeros((0, 4), dtype=np.int64)

    def untangle(self, x0, x1, held=None) -> int:
        """Make x0 -> x1 free of crossings, in place on x1 (n, 3); x0 must be crossing-free.

        held: optional (n,) bool, vertices a collider holds: a zone holding some translates as
        they do on average (a zone landing on the floor stops with it, not pushed into it).
        Returns how many vertices ended in impact zones."""
        try:
            return self._untangle(x0, x1, held)
        except geometry.TooManyPairs:  # the zones flung the cloth about: the substep is undone
            self._hold(x0, x1)
            return 0

    def _untangle(self, x0, x1, held):
        n = len(x0)
        pinned = self.model.inv_mass == 0.0
        held = np.zeros(n, dtype=bool) if held is None else held & ~pinned
        zone_of = None
        in_zone = np.zeros(n, dtype=bool)
        changed = None
        for rounds in range(1, ZONE_ROUNDS + 1):
            touching = self._touching(x0, x1, changed)
            if len(touching) == 0:
                self.stats["rounds"] = rounds - 1
                return int(in_zone.sum())
            # zones: connected vertex sets of touching pairs, merged with the zones so far
            rows = np.repeat(touching[:, 0], touching.shape[1] - 1)
            cols = touching[:, 1:].ravel()
            if zone_of is not None:
                members = np.flatnonzero(in_zone)
                rows = np.concatenate([rows, members])
                cols = np.concatenate([cols, zone_of[members]])
            graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
            _, label = connected_components(graph, directed=False)
            in_zone[touching.ravel()] = True
            # a zone's representative: its smallest vertex (stable across rounds)
            first = np.full(label.max() + 1, n, dtype=np.int64)
            np.minimum.at(first, label[in_zone], np.flatnonzero(in_zone))
            zone_of = first[label]
            before = x1.copy()
            self._move_zones(x0, x1, in_zone, label, pinned, held)
            changed = np.any(x1 != before, axis=1)
            if not changed.any():
                break  # the zones cannot move any other way (their anchors disagree): fall back
            if self.cover(x0, x1):  # a zone moved out of the candidates' reach
                changed = None
            self.stats["zones"] = int(len(np.unique(label[in_zone])))
        # fall-back: every vertex still touching, and its zone, stays at the start
        stuck = np.zeros(n, dtype=bool)
        changed = None
        for _ in range(n):
            # every pair that touched has a vertex frozen since: only those need a new test
            touching = self._touching(x0, x1, changed)
            if len(touching) == 0:
                break
            before = stuck.copy()
            stuck[touching.ravel()] = True
            if zone_of is not None:
                stuck |= in_zone & np.isin(zone_of, zone_of[stuck & in_zone])
            stuck &= self.model.inv_mass > 0.0  # pins follow their targets whatever happens
            if np.array_equal(x1[stuck], x0[stuck]):
                break  # only pinned vertices still touch: nothing left that may move
            x1[stuck] = x0[stuck]
            changed = stuck & ~before
            if self.cover(x0, x1):
                changed = None
        self.stats["frozen"] = int(stuck.sum())
        self.stats["rounds"] = ZONE_ROUNDS
        return int(in_zone.sum())

    def _move_zones(self, x0, x1, in_zone, label, pinned_all, held_all):
        """Every zone moves rigidly: a zone with pinned vertices by the rotation and translation
        that best carry its pins to their targets (Kabsch), so that a zone at a turning pin turns
        with it; else by its mass-weighted mean displacement, a vertex that a collider holds
        weighing as much as the collider's share (HELD_WEIGHT times its mass)."""
        members = np.flatnonzero(in_zone)
        zones = label[members]
        size = label.max() + 1
        pinned, held = pinned_all[members], held_all[members]
        start, end = x0[members], x1[members]

        def mean(values, weight):
            total = np.bincount(zones, weight, size)
            sums = np.stack([np.bincount(zones, weight * values[:, k], size) for k in range(3)], axis=1)
            return sums / np.maximum(total, 1e-300)[:, None], total > 0.0

        motion = end - start
        # a vertex a collider holds weighs HELD_WEIGHT times its mass: the collider's share
        weight = np.where(pinned, 0.0, self.model.mass[members] * np.where(held, HELD_WEIGHT, 1.0))
        shift, _ = mean(motion, weight)
        pin_from, has_pins = mean(start, pinned.astype(np.float64))
        pin_to, _ = mean(end, pinned.astype(np.float64))
        # cross-covariance of the pins about their centres, one 3 x 3 per zone
        a, b = start - pin_from[zones], end - pin_to[zones]
        cov = np.zeros((size, 3, 3))
        for i in range(3):
            for j in range(3):
                cov[:, i, j] = np.bincount(zones, pinned * a[:, i] * b[:, j], size)
        u, _, vt = np.linalg.svd(cov)
        turn = np.einsum("zij,zjk->zki", u, vt)  # R = V U^T
        flip = np.linalg.det(turn) < 0.0
        if np.any(flip):
            vt[flip, 2] *= -1.0
            turn = np.einsum("zij,zjk->zki", u, vt)
        rigid = pin_to[zones] + np.einsum("kij,kj->ki", turn[zones], start - pin_from[zones])
        moved = np.where(has_pins[zones][:, None], rigid, start + shift[zones])
        keep = ~pinned
        x1[members[keep]] = moved[keep]
