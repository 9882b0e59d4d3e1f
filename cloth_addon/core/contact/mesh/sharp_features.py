"""A mesh collider's sharp convex edges and corners against the cloth's edges and faces.

Vertex contact (mesh/response.py) keeps every cloth vertex `reach` off the surface, but a sharp
feature of the collider (a table's rim, a box's corner) can still pass between the vertices: into
a cloth edge, or through a cloth triangle. Here, once the solver is done:

    collider edge  x  cloth edge       the closest points of the two segments, both inside their
                                       segments (an end is a vertex: vertex contact's case)
    collider corner  x  cloth triangle the corner's foot on the triangle's plane, inside the face

Each pair's gap g (from the collider feature to the cloth) decides it against the feature's two
cones. Outward: the feature is the collider's closest point to the cloth there (g in the normal
cone, spanned by the adjacent faces' normals); a pair closer than it keeps goes out to that
distance along g. Inward: the cloth point is behind every face at the feature and inside the body
(the collider's own test: far from the feature the faces' planes say nothing); only the nearest
such feature of a cloth item counts, and the point goes out along the normal cone's axis (edges:
the faces' bisector, until g is back in the cone; corners: the cloth face's own normal where that
points into the cone, else the corner's pseudo-normal) to beyond the feature. Anything else is
closest to a face, which vertex contact handles. So every push points out of the body and agrees
with its neighbours' (a push along a flat face's diagonal, or a feature's push into a face beside
it, was what crumpled a tablecloth onto its table in a first attempt: these features are sharp
and convex only, and never push a cloth point that a face holds).

A cloth item keeps reach less its own sag between vertices that are reach away (a chord of the
offset surface: vertex contact holds the cloth no closer) and half the margin, at least the
margin: a cloth resting on a rim stays as vertex contact holds it. A pair moves its item's
vertices by their barycentric weights over inverse masses (the inelastic projection of the
contact point; pinned vertices never move), several pairs at a vertex averaged (Jacobi), a few
rounds, with Coulomb friction on the push relative to the collider's surface. Sharp means the
faces' normals differ by more than SHARP_ANGLE: decided once per topology, from the collider's
first shape.

Candidates: the cloth vertices near each feature (every vertex against every feature in one array
operation, or a k-d tree of the features' pieces), kept while the vertices stay near where they
were looked up; every item at such a vertex, with lower bounds of its gap that fall with its
vertices' motion, so that a call measures only the pairs that may have come near.
"""
import numpy as np

from ... import geometry
from .. import distance, sphere_search

# Edges whose adjacent faces' normals differ by more than this (rad) are sharp. A UV sphere of 14
# or more segments stays below it (its faceting is not a feature: the faces hold the cloth there),
# a box's rims (90 degrees) are far above.
SHARP_ANGLE = np.radians(30.0)

# Jacobi rounds per call: a vertex between several contacts gets the average of their pushes.
ROUNDS = 3

# Candidate pairs by testing every cloth vertex against every feature (one array operation) up to
# this many pairs; above it, through a k-d tree of the features' pieces (the same pairs: at 150,000,
# 400 vertices against Suzanne's 381 sharp edges, the tree costs a fraction of the array's passes).
_DENSE_PAIRS = 50_000

# Candidates are looked up this much further than needed (times the cloth's edge length bound), so
# that they last while the cloth moves less than that.
_SLACK = 0.25


def _padded(keys, values, count, which, fill=None):
    """(len(which), m): the values whose key is each of `which`, padded by repeating the first
    (duplicates change no all-of test); m the most any of them has. Keys without values get
    `fill` (which must then be given)."""
    order = np.argsort(keys, kind="stable")
    start = np.searchsorted(keys[order], np.arange(count + 1))
    have = (start[1:] - start[:-1])[which]
    width = max(int(have.max(initial=1)), 1)
    slot = np.minimum(np.arange(width)[None, :], np.maximum(have, 1)[:, None] - 1)
    if len(keys) == 0:
        return np.broadcast_to(np.asarray(fill)[..., None], (len(which), width)).copy()
    out = values[order[np.minimum(start[which][:, None] + slot, len(keys) - 1)]]
    if np.any(have == 0):
        out[have == 0] = np.asarray(fill)[have == 0, None] if np.ndim(fill) else fill
    return out


def _unit(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)


class SharpFeatures:
    """The sharp convex edges and corners of one MeshCollider topology, and their geometry."""

    def __init__(self, vertices, triangles, normal, edge_ends, edge_tris, closed):
        """Classify (once): vertices (v, 3) and oriented unit normals (t, 3) of the collider's first
        shape; its edge table edge_ends (e, 2), edge_tris (e, 2) (-1: no second triangle);
        closed (t,) bool."""
        t0, t1 = edge_tris[:, 0], edge_tris[:, 1]
        paired = (t1 >= 0) & closed[t0] & closed[np.maximum(t1, 0)]
        n0, n1 = normal[t0], normal[np.maximum(t1, 0)]
        # the third corner of each of the edge's faces
        opposite = triangles.sum(axis=1)[np.maximum(edge_tris, 0)] - edge_ends.sum(axis=1)[:, None]
        opposite[~paired] = edge_ends[~paired, :1]  # no second face: not sharp, any vertex will do
        a, b = vertices[edge_ends[:, 0]], vertices[edge_ends[:, 1]]
        scale = np.linalg.norm(b - a, axis=1)
        bent = np.einsum("ij,ij->i", n0, n1) < np.cos(SHARP_ANGLE)
        # convex: the second face's far corner lies behind the first face's plane
        behind = np.einsum("ij,ij->i", vertices[opposite[:, 1]] - a, n0) < -1e-9 * scale
        sharp = np.flatnonzero(paired & bent & behind)
        self.edge_ends, self.edge_tris = edge_ends[sharp], edge_tris[sharp]
        self.edge_opposite = opposite[sharp]

        # Corners: vertices of closed parts whose faces' normals spread wide and whose neighbours all
        # lie behind every adjacent face (a convex cone). A vertex in the middle of a sharp edge (two
        # collinear sharp edges) is left to the edge.
        count = len(vertices)
        incident = triangles.ravel()
        tri_of = np.repeat(np.arange(len(triangles)), 3)
        open_vertex = np.zeros(count, dtype=bool)
        open_vertex[incident[~closed[tri_of]]] = True
        mean = np.zeros((count, 3))
        for axis in range(3):
            mean[:, axis] = np.bincount(incident, normal[tri_of, axis], count)
        mean = _unit(mean)
        used = np.zeros(count, dtype=bool)
        used[incident] = True
        spread = np.ones(count)
        np.minimum.at(spread, incident, np.einsum("ij,ij->i", normal[tri_of], mean[incident]))
        candidate = np.flatnonzero(used & ~open_vertex & (spread < np.cos(0.5 * SHARP_ANGLE)))
        tris = _padded(incident, tri_of, count, candidate)  # (c, m)
        both = np.concatenate([edge_ends, edge_ends[:, ::-1]])
        neighbours = _padded(both[:, 0], both[:, 1], count, candidate)  # (c, m2)
        corner = vertices[candidate]
        cn = normal[tris]  # (c, m, 3)
        reach_out = vertices[neighbours] - corner[:, None, :]  # (c, m2, 3)
        spread = np.einsum("imk,ijk->imj", cn, cn).min(axis=(1, 2))
        lengths = np.linalg.norm(reach_out, axis=2)
        convex = np.all(np.einsum("imk,ijk->imj", cn, reach_out) <= 1e-9 * lengths[:, None, :], axis=(1, 2))
        sharp_at = np.bincount(self.edge_ends.ravel(), minlength=count)[candidate]
        ends = _padded(np.concatenate([self.edge_ends[:, 0], self.edge_ends[:, 1]]),
                       np.concatenate([self.edge_ends[:, 1], self.edge_ends[:, 0]]), count, candidate,
                       fill=candidate)
        straight = np.einsum("ij,ij->i", _unit(vertices[ends[:, 0]] - corner),
                             _unit(vertices[ends[:, -1]] - corner)) < -np.cos(np.radians(1.0))
        # A corner ends sharp edges; without one (a cone's apex) its faces must spread twice as wide:
        # around a vertex of a smooth mesh they spread up to twice the angle between neighbours.
        wide = ((sharp_at > 0) & (spread < np.cos(SHARP_ANGLE))) | (spread < np.cos(2.0 * SHARP_ANGLE))
        keep = wide & convex & ~((sharp_at == 2) & straight)
        self.corners, self.corner_tris, self.corner_neighbours = candidate[keep], tris[keep], neighbours[keep]
        self._of = None
        self._pieces = None
        self._cache = {}  # candidate pairs kept over calls (SharpFeatures._candidates)

    @property
    def empty(self) -> bool:
        return len(self.edge_ends) == 0 and len(self.corners) == 0

    # -- geometry (every shape of the collider) ---------------------------------------------------
    def shape(self, vertices, normal):
        """Per-shape data of the features, from the collider's vertices (v, 3) and unit normals."""
        if self._of is vertices:
            return
        a, b = vertices[self.edge_ends[:, 0]], vertices[self.edge_ends[:, 1]]
        d = b - a
        length2 = np.einsum("ij,ij->i", d, d)
        n = normal[self.edge_tris]  # (k, 2, 3)
        # the directions into each face, square to the edge: g in the normal cone iff g . e <= 0 for both
        into = vertices[self.edge_opposite] - a[:, None, :]
        along = np.einsum("ijk,ik->ij", into, d) / np.maximum(length2, 1e-300)[:, None]
        into -= along[:, :, None] * d[:, None, :]
        bisector = _unit(n[:, 0] + n[:, 1])
        cos = np.clip(np.einsum("ij,ij->i", bisector, n[:, 0]), 1e-6, 1.0)
        self.a, self.d, self.length2 = a, d, length2
        self.edge_normals, self.edge_into, self.bisector = n, _unit(into), bisector
        self.tan_half = np.sqrt(1.0 - cos * cos) / cos  # the normal cone's half-angle
        corner = vertices[self.corners]
        self.corner = corner
        self.corner_normals = normal[self.corner_tris]
        self.corner_edges = _unit(vertices[self.corner_neighbours] - corner[:, None, :])
        self.corner_axis = _unit(self.corner_normals.sum(axis=1))
        self._pieces = None
        self._of = vertices

    # -- candidates ------------------------------------------------------------------------------------
    def _near_edges(self, points, radius):
        """(point rows, sharp edges, clear (k,), distances): the pairs with the point within
        radius (k,) of the edge, and how far; clear: how far around each point no other edge is
        (at least radius)."""
        k, n = len(self.edge_ends), len(points)
        if k == 0 or n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.full(n, np.inf), np.zeros(0)
        dense = n * k <= _DENSE_PAIRS
        if dense:
            rows, edge = np.arange(n).repeat(k), np.tile(np.arange(k), n)
        else:
            rows, edge = self._piece_pairs(points, radius)
        rel = points[rows] - self.a[edge]
        d = self.d[edge]
        t = np.clip(np.einsum("ij,ij->i", rel, d) / np.maximum(self.length2[edge], 1e-300), 0.0, 1.0)
        gap = rel - t[:, None] * d
        gap = np.einsum("ij,ij->i", gap, gap)
        keep = gap <= radius[rows] ** 2
        return rows[keep], edge[keep], self._clear(dense, rows, gap, keep, radius), np.sqrt(gap[keep])

    @staticmethod
    def _clear(dense, rows, gap2, keep, radius):
        """How far around each point no feature but those kept is: the nearest other one (all pairs
        were measured), or the radius searched."""
        if not dense:
            return radius.copy()
        clear = np.full(len(radius), np.inf)
        np.minimum.at(clear, rows[~keep], gap2[~keep])
        return np.sqrt(clear)

    def _piece_pairs(self, points, radius):
        """Candidate (point rows, sharp edges) through a k-d tree of the edges cut into pieces."""
        if self._pieces is None:
            from scipy.spatial import cKDTree  # bundled with the extension, imported lazily

            length = np.sqrt(self.length2)
            pieces = np.minimum(np.maximum(1, np.ceil(length / max(np.median(length) / 4.0, 1e-9))), 64)
            pieces = pieces.astype(np.int64)
            owner = np.repeat(np.arange(len(length)), pieces)
            k = np.arange(len(owner)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
            mid = (k + 0.5) / pieces[owner]
            self._pieces = (owner, cKDTree(self.a[owner] + mid[:, None] * self.d[owner]),
                            float((0.5 * length / pieces).max()))
        owner, tree, half = self._pieces
        rows, piece = sphere_search.ball_pairs(tree, points, radius + half)
        key = np.unique(rows * len(self.edge_ends) + owner[piece])
        return key // len(self.edge_ends), key % len(self.edge_ends)

    def _near_corners(self, points, radius):
        """(point rows, corners, clear (k,), distances) as _near_edges."""
        c, n = len(self.corners), len(points)
        if c == 0 or n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.full(n, np.inf), np.zeros(0)
        dense = n * c <= _DENSE_PAIRS
        if dense:
            rows, corner = np.arange(n).repeat(c), np.tile(np.arange(c), n)
        else:
            from scipy.spatial import cKDTree

            rows, corner = sphere_search.ball_pairs(cKDTree(self.corner), points, radius)
        gap = points[rows] - self.corner[corner]
        gap = np.einsum("ij,ij->i", gap, gap)
        keep = gap <= radius[rows] ** 2
        return rows[keep], corner[keep], self._clear(dense, rows, gap, keep, radius), np.sqrt(gap[keep])

    def _candidates(self, x, needs, slack, kinds):
        """Keep every kind's candidate pairs up to date for x (n, 3).

        kinds: per kind (name, items (m, r) vertex ids, find, incidence, feature count), needs:
        per kind (n,) how near a vertex must come to a feature for its items to be paired with it.
        Pairs are looked up `slack` further than needed (or up to the next feature, where every
        feature was measured) and kept over calls: a vertex is looked up again only when its
        motion since could have brought another feature within need (a cloth at rest on a still
        collider: never), or when the collider moved. Per kind, a dict: "pairs" (cloth items,
        features), "gap" (k,): a lower bound of how much farther than it keeps each pair is (-inf:
        not measured), "rate" (k,): how fast that bound falls with its vertices' motion, "far"
        (k,): a lower bound of how much farther than any item keeps it is (falls as fast as they
        move)."""
        key = (self._of, len(x), tuple(kind[3] for kind in kinds))
        state = self._cache
        known = state.get("key")
        if known is None or known[0] is not key[0] or known[1] != key[1] or any(
                u is not v for u, v in zip(known[2], key[2], strict=True)):
            state.clear()
            state.update(key=key, ref=x.copy())
            fresh = np.ones(len(x), dtype=bool)
        else:
            drift = x - state["ref"]
            drift = np.sqrt(np.einsum("ij,ij->i", drift, drift))
            fresh = np.zeros(len(x), dtype=bool)
            for (name, *_), need in zip(kinds, needs, strict=True):
                fresh |= drift + need > state[name]["radius"]
        if not np.any(fresh):
            return
        ids = np.flatnonzero(fresh)
        state["ref"][ids] = x[ids]
        empty = np.zeros(0, dtype=np.int64)
        for (name, _, find, incidence, count), need in zip(kinds, needs, strict=True):
            kept = state.setdefault(name, {"radius": np.zeros(len(x)), "rows": empty, "feature": empty,
                                           "keys": empty, "gap": np.zeros(0), "rate": np.zeros(0),
                                           "far": np.zeros(0)})
            # Looked up twice the slack further: a pair found before stays to there, a new one
            # comes within the slack (a vertex swinging about the edge of a feature's reach does
            # not change its pairs at every look)
            rows, feature, clear, dist = find(x[ids], need[ids] + 2.0 * slack)
            keep = ~fresh[kept["rows"]]
            before, after = kept["rows"][~keep] * count + kept["feature"][~keep], ids[rows] * count + feature
            take = (dist <= need[ids][rows] + slack) | np.isin(after, before)
            if not np.all(take):
                np.minimum.at(clear, rows[~take], dist[~take])
                rows, feature, after = rows[take], feature[take], after[take]
            kept["radius"][ids] = clear
            if "pairs" not in kept or not np.array_equal(np.sort(before), np.sort(after)):
                kept["rows"] = np.concatenate([kept["rows"][keep], ids[rows]])
                kept["feature"] = np.concatenate([kept["feature"][keep], feature])
                item, at = _expand(kept["rows"], incidence)
                keys = np.unique(item * count + kept["feature"][at])
                # pairs found before keep what was measured of them
                old = kept["keys"]
                where = np.minimum(np.searchsorted(old, keys), max(len(old) - 1, 0))
                known = (old[where] == keys) if len(old) else np.zeros(len(keys), dtype=bool)
                gap, rate = np.full(len(keys), -np.inf), np.ones(len(keys))
                gap[known], rate[known] = kept["gap"][where[known]], kept["rate"][where[known]]
                far = np.full(len(keys), -np.inf)
                far[known] = kept["far"][where[known]]
                kept["keys"], kept["gap"], kept["rate"], kept["far"] = keys, gap, rate, far
                kept["pairs"] = (keys // count, keys % count)
                kept["who"] = None

    def resolve(self, x, x0, inv_mass, reach, floor, features, incidence, inside, friction=0.0,
                motion=None):
        """Push the cloth (x (n, 3), in place) out of the sharp features; x0: (n, 3) where the
        substep started; reach: m, the collider's thickness + the cloth's margin; floor: m, the
        least any cloth point keeps off (the margin); incidence: the vertex -> edge and vertex ->
        triangle tables of the features' edges and triangles (_incidence); inside(points (m, 3))
        -> (m,) bool: which points are inside the collider's body; friction: Coulomb
        coefficient on the slide relative to the collider, whose vertices moved by motion (v, 3)
        over the substep (None: it stood still)."""
        # how far each vertex moved since the last call (the first of a substep: over the substep)
        last = self._cache.get("last")
        moved = x - (x0 if last is None or len(last) != len(x) else last)
        moved = np.sqrt(np.einsum("ij,ij->i", moved, moved))
        kinds, sizes, contacts = [], [], []
        if len(self.edge_ends) and len(features.edges):
            kinds.append(("edges", features.edges, self._near_edges, incidence[0], len(self.edge_ends)))
            sizes.append(0.5 * features.longest)
            contacts.append(self.edge_contacts)
        if len(self.corners) and len(features.triangles):
            kinds.append(("corners", features.triangles, self._near_corners, incidence[1], len(self.corners)))
            sizes.append(features.longest)
            contacts.append(self.corner_contacts)
        # a cloth item within reach of a feature has a vertex within reach + its size of it
        self._candidates(x, [reach + size + moved for size in sizes], _SLACK * features.longest, kinds)
        # Each pair has a lower bound of how much farther than it keeps it is: a pair's distance
        # changes no more than its vertices move, what it keeps by `rate` times that (_keep), so
        # each call takes what they moved since the last, times 1 + rate, from the bound; and one
        # of how much farther than any item keeps (`most`), which falls as fast as they move.
        # Only pairs with both below zero are measured.
        most = max(reach - 0.5 * floor, floor)  # what any item keeps, at most (_keep)
        work = []
        for (name, items, *_), size, contact in zip(kinds, sizes, contacts, strict=True):
            kept = self._cache[name]
            cloth, feature = kept["pairs"]
            if kept.get("who") is None:
                kept["who"] = items[cloth]
                kept["columns"] = [np.ascontiguousarray(column) for column in kept["who"].T]
            shift = np.take(moved, kept["columns"][0])
            for column in kept["columns"][1:]:
                np.maximum(shift, np.take(moved, column), out=shift)
            kept["far"] -= shift
            kept["gap"] -= shift * kept["rate"]
            test = np.flatnonzero((kept["gap"] < 0.0) & (kept["far"] < 0.0))
            if len(test):
                who = kept["who"][test]
                corners = x[who]
                keep, rate = _keep(corners, reach, floor)
                # where the rate is unknown, the bound is on what any item keeps
                kept["rate"][test] = 1.0 + (0.0 if rate is None else rate)
                # a point of the cloth inside the body got there this substep: no deeper than
                # its item's vertices moved, beyond reach and the item's own size
                limit = reach + size + geometry.row_max(moved[who])
                work.append([kept, test, who, feature[test], keep, limit, contact, corners,
                             keep if rate is not None else most])
        # the bounds hold for x as it is now: the next call counts the pushes below as motion
        self._cache["last"] = x.copy()
        for round in range(ROUNDS):
            touched = 0
            for job in work:
                kept, test, who, feature, keep, limit, contact, corners, bound = job
                if corners is None:
                    corners = x[who]
                item = kept["pairs"][0][test]
                hit, weights, direction, depth, dist, at = contact(item, corners, feature, keep, limit,
                                                                   inside)
                if round == 0:
                    kept["gap"][test], kept["far"][test] = dist - bound, dist - most
                surface = None if motion is None else np.einsum("ij,ijk->ik", at[1], motion[at[0]])
                push(x, x0, who[hit], weights, inv_mass, direction, depth, friction, surface)
                touched += len(hit)
                # the next rounds only revisit pairs near contact
                near = np.flatnonzero(dist < keep + reach)
                job[1:6] = test[near], who[near], feature[near], keep[near], limit[near]
                job[7] = None
            if touched == 0:
                break

    def edge_contacts(self, item, ends, sharp, reach, depth_limit, inside):
        """Pushes for the (cloth edges item (k,), ends (k, 2, 3), sharp edge rows) pairs that
        touch, each kept reach (k,) away: (hit rows, weights (h, 2), directions (h, 3), depths (h,),
        distances (k,), the contact points on the collider: (vertex ids (h, 2), weights (h, 2))).
        inside(points (m, 3)) -> (m,) bool: which points are inside the collider's body."""
        p, q = ends[:, 0], ends[:, 1]
        a, d = self.a[sharp], self.d[sharp]
        g, s, t = distance.segment_gap(p, q, a, a + d)
        measured = np.sqrt(np.einsum("ij,ij->i", g, g))
        near = np.flatnonzero((s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)
                              & (measured <= np.maximum(reach, depth_limit)))
        if len(near) == 0:
            return _no_contacts(measured, 2, 2)
        g, s, t, dist, sharp, reach = (v[near] for v in (g, s, t, measured, sharp, reach))
        inward = geometry.row_all(np.einsum("ijk,ik->ij", self.edge_normals[sharp], g) < 0.0)
        inward &= dist <= depth_limit[near]
        if np.any(inward):
            # behind both faces is inside the body only near the edge: not past its ends' faces
            rows = np.flatnonzero(inward)
            at = near[rows]
            inward[rows] = inside(p[at] + s[rows, None] * (q[at] - p[at]))
            _nearest_only(inward, item[near], dist)
        outward = geometry.row_all(np.einsum("ijk,ik->ij", self.edge_into[sharp], g) <= 1e-9 * dist[:, None])
        hit = np.flatnonzero((outward & (dist < reach)) | inward)
        g, s, t, dist, inward, sharp, reach = (v[hit] for v in (g, s, t, dist, inward, sharp, reach))
        bisector = self.bisector[sharp]
        direction = np.where((inward | (dist <= 1e-12 * reach))[:, None], bisector,
                             g / np.maximum(dist, 1e-300)[:, None])
        # Inward: out along the bisector until g is back in the normal cone and reach away
        along = np.einsum("ij,ij->i", g, bisector)
        side = np.sqrt(np.maximum(dist * dist - along * along, 0.0))
        target = np.maximum(np.sqrt(np.maximum(reach * reach - side * side, 0.0)),
                            side / self.tan_half[sharp])
        depth = np.where(inward, target - along, reach - dist)
        feature = (self.edge_ends[sharp], np.stack([1.0 - t, t], axis=1))
        return near[hit], np.stack([1.0 - s, s], axis=1), direction, depth, measured, feature

    def corner_contacts(self, item, corners, corner, reach, depth_limit, inside):
        """Pushes for the (cloth triangles item (k,), corners (k, 3, 3), collider corner rows)
        pairs that touch, each kept reach (k,) away, returned as edge_contacts'."""
        c = self.corner[corner]
        u, v, w = corners[:, 0], corners[:, 1], corners[:, 2]
        # only a face's inside counts (its edges and corners are the other pairs'): the corner's
        # foot on the face's plane, and its height there
        normal = geometry.cross(v - u, w - u)
        normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
        height = np.einsum("ij,ij->i", u - c, normal)
        measured = np.abs(height)
        near = np.flatnonzero(measured <= np.maximum(reach, depth_limit))
        if len(near):
            bary = geometry.barycentric(c[near], u[near], v[near], w[near])
            inner = geometry.row_all(bary > 0.0)  # (NaN for a degenerate face: never)
            near, bary = near[inner], bary[inner]
        # elsewhere a lower bound of the distance, what the caller keeps of it: the height, or
        # the distance to the face's bounding sphere about its centroid
        centre = corners.mean(axis=1)
        spoke = corners - centre[:, None]
        radius = np.sqrt(geometry.row_max(np.einsum("ijk,ijk->ij", spoke, spoke)))
        measured = np.maximum(measured, np.sqrt(np.einsum("ij,ij->i", c - centre, c - centre)) - radius)
        if len(near) == 0:
            return _no_contacts(measured, 3, 1)
        g = height[near, None] * normal[near]
        dist, corner, reach = np.abs(height[near]), corner[near], reach[near]
        inward = geometry.row_all(np.einsum("ijk,ik->ij", self.corner_normals[corner], g) < 0.0)
        inward &= dist <= depth_limit[near]
        if np.any(inward):
            # behind every face at the corner is inside the body only near it
            rows = np.flatnonzero(inward)
            inward[rows] = inside(c[near[rows]] + g[rows])
            _nearest_only(inward, item[near], dist)
        edges = self.corner_edges[corner]
        outward = geometry.row_all(np.einsum("ijk,ik->ij", edges, g) <= 1e-9 * dist[:, None])
        hit = np.flatnonzero((outward & (dist < reach)) | inward)
        g, dist, inward, corner, bary, reach = (v[hit] for v in (g, dist, inward, corner, bary, reach))
        unit = g / np.maximum(dist, 1e-300)[:, None]
        # Inward, g is square to the cloth face: back along it is the shortest way out, taken where
        # it points into the normal cone; else out along the corner's axis, as far as that takes
        # the face's plane beyond the corner.
        back = -unit
        cone = geometry.row_all(np.einsum("ijk,ik->ij", self.corner_edges[corner], back) <= 1e-9)
        axis = self.corner_axis[corner]
        slant = np.maximum(np.einsum("ij,ij->i", axis, back), 0.3)
        inward_direction = np.where(cone[:, None], back, axis)
        inward_depth = (reach + dist) / np.where(cone, 1.0, slant)
        tiny = dist <= 1e-12 * reach
        direction = np.where((inward | tiny)[:, None], np.where(tiny[:, None], axis, inward_direction), unit)
        depth = np.where(inward, inward_depth, reach - dist)
        at = (self.corners[corner, None], np.ones((len(hit), 1)))
        return near[hit], bary, direction, depth, measured, at


def _no_contacts(measured, cloth, collider):
    """edge_contacts' or corner_contacts' answer without a contact."""
    nothing = np.zeros(0, dtype=np.int64)
    return (nothing, np.zeros((0, cloth)), np.zeros((0, 3)), np.zeros(0), measured,
            (np.zeros((0, collider), dtype=np.int64), np.zeros((0, collider))))


def _nearest_only(inward, item, dist):
    """Keep, in place, only each cloth item's nearest inward pair: a point inside the body next to
    several features (a box's corner) goes out past the nearest, not past each at once."""
    rows = np.flatnonzero(inward)
    if len(rows) < 2:
        return
    rows = rows[np.lexsort((dist[rows], item[rows]))]
    inward[rows[1:][item[rows][1:] == item[rows][:-1]]] = False


def _keep(corners, reach, floor):
    """((k,) how far k cloth edges or triangles, corners (k, 2 or 3, 3), keep off a feature:
    reach, less the sag of the item between vertices reach away (a chord of the offset surface:
    vertex contact holds the cloth no closer) and half the floor, but at least floor; (k,) at
    most how fast that grows with its vertices' motion (edges; None for triangles))."""
    rate = None
    if corners.shape[1] == 2:
        half = 0.5 * (corners[:, 1] - corners[:, 0])
        sag2 = np.einsum("ij,ij->i", half, half)
        # an edge shortens by at most twice its ends' motion, and the chord's distance grows
        # ever more slowly as it does (at most its slope now)
        with np.errstate(divide="ignore"):
            rate = np.minimum(np.sqrt(sag2 / np.maximum(reach * reach - sag2, 0.0)), 1e6)
    else:
        # a plane through three points reach away is sqrt(reach^2 - R^2) off, R their circumradius
        u, v, w = corners[:, 0], corners[:, 1], corners[:, 2]
        sides = [np.einsum("ij,ij->i", e, e) for e in (v - u, w - v, u - w)]
        normal = geometry.cross(v - u, w - u)
        area2 = np.einsum("ij,ij->i", normal, normal)  # (2 area)^2
        sag2 = sides[0] * sides[1] * sides[2] / np.maximum(4.0 * area2, 1e-300)
    # (half the floor below the chord: a cloth resting on a rim, whose chords are right there,
    # neither fights vertex contact nor has its pairs measured again at every jitter)
    return np.maximum(np.sqrt(np.maximum(reach * reach - sag2, 0.0)) - 0.5 * floor, floor), rate


def incidence(items, count):
    """Vertex -> items (rows of an (m, r) vertex-id array): (start (count + 1,), item order)."""
    flat = items.ravel()
    order = np.argsort(flat, kind="stable")
    start = np.searchsorted(flat[order], np.arange(count + 1))
    return start, order // items.shape[1]


def _expand(vertices, incidence):
    """(items, rows): every item at each of vertices (k,), with the row of its vertex."""
    start, order = incidence
    first = start[vertices]
    have = start[vertices + 1] - first
    rows = np.repeat(np.arange(len(vertices)), have)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(have) - have, have)
    return order[first[rows] + offset], rows


def push(x, x0, who, weights, inv_mass, direction, depth, friction=0.0, surface=None):
    """Move k cloth features so that their point with barycentric `weights` goes `depth` along
    `direction` (the inelastic projection: shares by weight over inverse mass; pinned vertices,
    inverse mass 0, never move), several at one vertex averaged. In place on x (n, 3).

    Friction cuts the point's tangential slide since x0 (relative to the collider's surface
    motion (k, 3) there, if any) by friction x depth, as the self-contact's pushes do."""
    inv = inv_mass[who]
    denom = np.einsum("ij,ij->i", weights * weights, inv)
    ok = denom > 0.0
    if not np.any(ok):
        return
    who, weights, inv, denom, direction, depth = (v[ok] for v in (who, weights, inv, denom, direction, depth))
    share = (weights * inv) / denom[:, None]
    step = (share * depth[:, None])[:, :, None] * direction[:, None, :]
    if friction and friction > 0.0:
        slide = np.einsum("ij,ijk->ik", weights, x[who] - x0[who])
        if surface is not None:
            slide -= surface[ok]
        slide -= np.einsum("ij,ij->i", slide, direction)[:, None] * direction
        length = np.sqrt(np.einsum("ij,ij->i", slide, slide))
        cut = np.minimum(1.0, friction * np.abs(depth) / np.maximum(length, 1e-300))
        step -= (share * cut[:, None])[:, :, None] * slide[:, None, :]
    index = who.ravel()
    count = np.bincount(index, minlength=len(x)).astype(np.float64)
    for axis in range(3):
        x[:, axis] += np.bincount(index, step[:, :, axis].ravel(), len(x)) / np.maximum(count, 1.0)
