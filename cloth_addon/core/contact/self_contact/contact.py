"""Self-contact: the cloth's layers kept a gap apart, and never passing through each other.

Per substep, with x0 the (crossing-free) start and x1 the solver's end:

1. Candidates (kept over substeps while they hold). Vertex-triangle and edge-edge pairs that
   can come within the gap d. The rest shape is cut into clusters of at most CLUSTER vertices
   (halved at the median of their longest extent, part by part); each cluster's reference motion
   is its vertices' mass-weighted mean displacement since the reference positions x_ref (the
   end of the substep that built the set: its budgets then reach back to that substep's start
   and forward over the next ones alike), and a
   vertex's deviation is its displacement apart from its own cluster's. For two features a, b
   (a point of each carried by the same barycentric weights) the gap at x is at least

       gap(x_ref) - dev_a - dev_b - max |m_A - m_B| over the clusters A of a's and B of b's vertices

   (dev: the largest deviation of a feature's vertices; m: the clusters' reference motions), so
   a whole cluster falling, sliding or standing still costs its own pairs nothing. Each vertex
   gets a budget (GROW times its deviation over a substep, plus SLACK d) and each two clusters a
   drift allowance (DRIFT_GROW times how far their reference motions differ over that substep,
   plus DRIFT_SLACK d); a k-d tree finds the pairs whose exact gap at x_ref is within d plus their
   features' largest budgets plus their clusters' largest allowance, and stores that gap. Two
   clusters whose reaches (the vertices of every feature with a vertex in the cluster) have
   bounding spheres at x_ref further apart than d plus the reaches' largest budgets plus the
   allowance take no allowance (none of their pairs is within it): their limit on the drift is
   instead how far those spheres are apart beyond d and the budgets; others' limit is their
   allowance. While no vertex deviates by more than its budget and no two clusters drift apart
   by more than their limit, every other pair stays further apart than d, and a candidate's gap
   is at least its reference gap less its features' deviations and its clusters' drift since: a
   scalar test per pair drops most before any geometry. Deviations and drifts are norms of
   linear functions of the positions, so that positions within bounds at both ends of a straight
   path are within them all along it. A vertex that outruns its budget gets a larger one and the
   pairs that brings within reach are added (`cover`); two clusters that drift beyond their
   limit get a larger allowance, and the pairs between the features of such clusters that
   brings within reach are added too. When the drifting clusters or the vertices outrunning
   their budgets are too many (REBUILD), or the set has doubled, it is built afresh. Features that
   share a vertex are never pairs. One cluster is the cloth's single mean motion.
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
   zones that still touch others merge, up to ZONE_ROUNDS times (after a move, only pairs with a
   vertex that moved or touched can touch, and those are found by a k-d tree search over the
   bounding spheres of their paths, not among the candidates, which the move may have left
   behind: no rebuild inside the rounds); whatever still touches then
   stays where it started the substep, pinned vertices last: a pin that would still drive its
   features through the cloth waits at its start for that substep and is aimed at its target
   again by the next. A substep that starts without crossings ends without them, whatever the
   solver, iterations, substeps, gap, speed or pin motion, provided every motion is a straight
   line over the substep (which position-based stepping makes it).
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist

from ... import geometry
from ...geometry import gather, vector_lengths
from .. import ccd, distance, sphere_search

# Proximity passes per substep (each followed by the colliders).
PASSES = 3
# Impact-zone merges before the fall-back (vertices back at the start of the substep).
ZONE_ROUNDS = 12
# Vertices per cluster (at most): the rest shape is cut into clusters of about this many, each
# with its own reference motion; larger ones on a cloth of more than CLUSTER * MAX_CLUSTERS
# vertices (the drifts between clusters are (c, c) tables, built every substep).
CLUSTER = 32
MAX_CLUSTERS = 1024
# A vertex's candidate budget: GROW times its deviation over the substep that found them, plus
# SLACK times the gap, so that the set lasts a few substeps and covers what the response moves.
GROW = 2.0
SLACK = 0.25
# The same for the drift between two clusters' reference motions.
DRIFT_GROW = 2.0
DRIFT_SLACK = 0.25
# The candidates are found afresh when more than this fraction of the vertices outrun their
# budgets at once, or belong to clusters that drift beyond their limits (rather than growing
# the budgets and allowances of those).
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


def _clusters(points, size):
    """(n,) int64 cluster of each of points (n, 3): the points halved at the median of their
    longest extent, part by part, until no part has more than `size` (>= 1)."""
    n = len(points)
    label = np.zeros(n, dtype=np.int64)
    count = 1
    while True:  # one pass per halving level: log2(n / size) of them
        sizes = np.bincount(label, minlength=count)
        split = np.flatnonzero(sizes > size)
        if not len(split):
            return label
        low, high = np.full((count, 3), np.inf), np.full((count, 3), -np.inf)
        np.minimum.at(low, label, points)
        np.maximum.at(high, label, points)
        key = points[np.arange(n), np.argmax(high - low, axis=1)[label]]
        order = np.lexsort((key, label))
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - start[label[order]]
        new = np.full(count, -1)
        new[split] = count + np.arange(len(split))
        upper = (new[label] >= 0) & (rank >= sizes[label] // 2)
        label[upper] = new[label[upper]]
        count += len(split)


def _pairwise(mean):
    """(c, c) distances between the rows of mean (c, 3)."""
    return cdist(mean, mean)  # in C, without the (c, c, 3) offsets


def _most(values, index):
    """(k,) the largest of values (m,) over each row of index (k, w): column by column, which is
    many times faster than a reduction along a short axis (geometry.row_max)."""
    out = values[index[:, 0]]
    for column in range(1, index.shape[1]):
        np.maximum(out, values[index[:, column]], out=out)
    return out


def _largest(values, columns):
    """(k,) the largest of values (m,) at each column of index (w, k)."""
    out = values[columns[0]]
    for row in columns[1:]:
        np.maximum(out, values[row], out=out)
    return out


def _longest(vectors):
    """(k,) the longest of each row of vectors (k, m, 3)."""
    return np.sqrt(geometry.row_max(np.einsum("ijk,ijk->ij", vectors, vectors)))


def _spheres(x, features):
    """(centres (k, 3), radii (k,)) of bounding spheres of features (k, m) vertex ids at x."""
    corners = gather(x, features)
    centre = corners[:, 0].copy()  # the mean by columns (a reduction along the short axis is slow)
    for column in range(1, corners.shape[1]):
        centre += corners[:, column]
    centre /= corners.shape[1]
    offset = corners - centre[:, None]
    return centre, np.sqrt(geometry.row_max(np.einsum("ijk,ijk->ij", offset, offset)))


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


def _vf_touching(x0, x1, motion, p, corners, tol):
    """(k, 4) [vertex, corners] of the vertex-triangle pairs (p (m,), corners (m, 3)) that touch
    (within tol, m) on the straight paths x0 -> x1 (n, 3); motion: x1 - x0."""
    # Every point of the triangle moves by a convex mix of its corners' motions, so the pair's
    # distance shrinks over the substep by at most the largest corner motion relative to the
    # vertex's: only pairs closer than that at x0 can touch (a falling sheet's own pairs: none).
    relative = _longest(gather(motion, corners) - gather(motion, p)[:, None, :])
    start = gather(x0, p)
    q, _, _ = distance.closest_points(start, *(gather(x0, corners[:, k]) for k in range(3)))
    may = vector_lengths(start - q) <= relative + tol
    p, corners = p[may], corners[may]
    toi = ccd.vertex_triangle_toi(gather(x0, p), gather(x1, p),
                                  *(gather(at, corners[:, k]) for k in range(3) for at in (x0, x1)), tol)
    hit = np.isfinite(toi)
    return np.concatenate([p[hit, None], corners[hit]], axis=1)


def _ee_touching(x0, x1, motion, ea, eb, tol):
    """(k, 4) [ends of a, ends of b] of the edge-edge pairs (ea, eb: (m, 2) ends) that touch."""
    # as for _vf_touching: two points of the edges move apart by a convex mix of the four
    # differences between an end of one and an end of the other's motions
    ends_a, ends_b = gather(motion, ea), gather(motion, eb)
    relative = _longest(np.concatenate([ends_a - ends_b[:, :1], ends_a - ends_b[:, 1:]], axis=1))
    gap, _, _ = distance.segment_gap(*(gather(x0, e[:, k]) for e in (ea, eb) for k in (0, 1)))
    may = vector_lengths(gap) <= relative + tol
    ea, eb = ea[may], eb[may]
    toi = ccd.edge_edge_toi(*(gather(at, e[:, k]) for e in (ea, eb) for k in (0, 1) for at in (x0, x1)), tol)
    hit = np.isfinite(toi)
    return np.concatenate([ea[hit], eb[hit]], axis=1)


class SelfContact:
    """Self-contact of one ClothModel (and of several cloth objects simulated as one model).

    distance: m, the gap kept between layers; friction: Coulomb coefficient between layers;
    parts: for several cloth objects, (label (n,) int, own (k,) bool): each vertex's object and
    whether that object's own layers collide (None: every pair of features can be a contact).
    """

    def __init__(self, model, distance: float, friction: float, parts=None):
        if not distance > 0.0:
            raise ValueError(f"self-contact distance must be > 0, got {distance!r}")
        self.model = model
        self.distance = float(distance)
        self.friction = float(friction)
        self.edges, self.triangles, _ = model.contact_features
        self._parts(parts)
        self._make_clusters(max(CLUSTER, -(-model.n_particles // MAX_CLUSTERS)))
        self._rest_exclusions()
        self.stats = {"vf": 0, "ee": 0, "zones": 0, "rounds": 0, "frozen": 0, "pins_held": 0,
                      "clusters": self._c}

    # -- set-up ----------------------------------------------------------------------------
    def _parts(self, parts):
        """parts: None, or (label (n,) int: the cloth object of each vertex, own (k,) bool: whether
        that object's own layers collide). Two features of one object whose `own` is False are no
        pair (the objects still collide with each other): _blocks lists, per object, the vertices
        and the triangles and edges its features are searched against."""
        self._label = None
        if parts is None:
            return
        label, own = np.asarray(parts[0], dtype=np.int64), np.asarray(parts[1], dtype=bool)
        if (label.shape != (self.model.n_particles,) or own.ndim != 1
                or (len(label) and (label.min() < 0 or label.max() >= len(own)))):
            raise ValueError("SelfContact parts must be ((n,) object labels, (k,) bools)")
        if np.all(own):
            return
        self._label, self._own = label, own
        tri_part = label[self.triangles[:, 0]] if len(self.triangles) else np.zeros(0, np.int64)
        edge_part = label[self.edges[:, 0]] if len(self.edges) else np.zeros(0, np.int64)
        self._tri_part, self._edge_part = tri_part, edge_part
        # per object k: (its vertices, the triangles they meet, its edges, the edges of objects after k)
        self._blocks = [(np.flatnonzero(label == k),
                         np.arange(len(tri_part)) if own[k] else np.flatnonzero(tri_part != k),
                         np.flatnonzero(edge_part == k), np.flatnonzero(edge_part > k))
                        for k in range(len(own))]

    def _allowed(self, first, second, kind):
        """(m,) bool: which pairs may be contacts (all without parts); kind "vf": vertices first and
        triangles second, "ee": edges both."""
        if self._label is None:
            return np.ones(len(first), dtype=bool)
        a = self._label[first] if kind == "vf" else self._edge_part[first]
        b = self._tri_part[second] if kind == "vf" else self._edge_part[second]
        return (a != b) | self._own[a]

    def _make_clusters(self, size):
        """Clusters of the rest shape, each with its own reference motion (its vertices'
        mass-weighted mean displacement, through the (c, n) averaging matrix _mean), and the
        vertices of every feature that has one in it (its reach, _reach_vertex, grouped by
        cluster from _reach_start)."""
        n = self.model.n_particles
        cluster = _clusters(self.model.rest_positions, size)
        self._cluster, self._c = cluster, int(cluster.max(initial=-1)) + 1
        mass = np.asarray(self.model.mass, dtype=np.float64)
        total = np.bincount(cluster, mass, self._c)
        # a cluster of massless vertices (all pinned, say) takes their plain mean
        plain = total <= 0.0
        weight = np.where(plain[cluster], 1.0, mass)
        total = np.bincount(cluster, weight, self._c)
        self._mean = sp.csr_matrix((weight / total[cluster], (cluster, np.arange(n))), shape=(self._c, n))
        keys = [cluster * n + np.arange(n)]
        for features in (self.triangles, self.edges):
            for i in range(features.shape[1]):
                for j in range(features.shape[1]):
                    keys.append(cluster[features[:, i]] * n + features[:, j])
        keys = np.unique(np.concatenate(keys))
        self._reach_vertex, self._reach_cluster = keys % n, keys // n
        self._reach_start = np.searchsorted(self._reach_cluster, np.arange(self._c))
        self._tri_clusters = cluster[self.triangles] if len(self.triangles) else np.zeros((0, 3), np.int64)
        self._edge_clusters = cluster[self.edges] if len(self.edges) else np.zeros((0, 2), np.int64)
        # the same, one row per corner or end (gathers along contiguous rows)
        self._tri_cluster_rows = np.ascontiguousarray(self._tri_clusters.T)
        self._edge_cluster_rows = np.ascontiguousarray(self._edge_clusters.T)

    def _rest_exclusions(self):
        """Pairs already closer than the gap in the rest shape: the cloth's own neighbourhood,
        which proximity must not push apart (continuous detection still watches them)."""
        rest, d = self.model.rest_positions, self.distance
        vf_p, vf_t, vf_gap, ea, eb, ee_gap = self._near(rest, np.zeros(len(rest)))
        close = vf_gap < d
        self._vf_excluded = np.sort(vf_p[close] * max(len(self.triangles), 1) + vf_t[close])
        close = ee_gap < d
        self._ee_excluded = np.sort(ea[close] * max(len(self.edges), 1) + eb[close])

    # -- broad phase -------------------------------------------------------------------------
    def _vf_pairs(self, p, t):
        """(3, k) flat (c, c) indices of the cluster pairs of vertex-triangle pairs (p, t) (one
        row per corner: contiguous rows gather fastest)."""
        first = self._cluster[p] * self._c
        return np.stack([first + corner[t] for corner in self._tri_cluster_rows])

    def _vf_most(self, table, p, t):
        """(k,) the largest entry of table (c * c,) over the cluster pairs of vertex-triangle pairs
        (p, t), without listing them (_vf_pairs)."""
        first, corners = self._cluster[p] * self._c, self._tri_cluster_rows
        out = table[first + corners[0][t]]
        for corner in corners[1:]:
            np.maximum(out, table[first + corner[t]], out=out)
        return out

    def _ee_most(self, table, a, b):
        """(k,) the largest entry of table (c * c,) over the cluster pairs of edge-edge pairs
        (a, b), without listing them (_ee_pairs)."""
        ends = self._edge_cluster_rows
        a0, a1, b0, b1 = ends[0][a] * self._c, ends[1][a] * self._c, ends[0][b], ends[1][b]
        out = table[a0 + b0]
        for index in (a0 + b1, a1 + b0, a1 + b1):
            np.maximum(out, table[index], out=out)
        return out

    def _ee_pairs(self, a, b):
        """(4, k) flat (c, c) indices of the cluster pairs of edge-edge pairs (a, b)."""
        ends = self._edge_cluster_rows
        return np.stack([ends[i][a] * self._c + ends[j][b] for i in (0, 1) for j in (0, 1)])

    def _vf_pairs_with(self, moved, points, point_radius, centres, centre_radius, limit):
        """(p, t) in ascending order: the vertex-triangle pairs with a vertex of moved (n,) bool
        whose spheres (points (n, 3) and point_radius (n,) of the vertices, centres (t, 3) and
        centre_radius (t,) of the triangles) overlap: moved vertices against every triangle,
        and every vertex against the triangles with a moved corner."""
        tris = self.triangles
        rows, hit = np.flatnonzero(moved), np.flatnonzero(geometry.row_any(moved[tris]))
        p1, t1 = sphere_search.sphere_pairs(gather(points, rows), point_radius[rows], centres, centre_radius,
                                       limit)
        p2, t2 = sphere_search.sphere_pairs(points, point_radius, gather(centres, hit), centre_radius[hit],
                                       limit)
        key = np.unique(np.concatenate([rows[p1] * len(tris) + t1, p2 * len(tris) + hit[t2]]))
        return key // len(tris), key % len(tris)

    def _ee_pairs_with(self, moved, centres, radius, limit, extra=0.0):
        """(a <= b) in ascending order: the edge-edge pairs with a vertex of moved (n,) bool whose
        spheres (centres (e, 3), radius (e,)) overlap, the moved edges' reaching `extra` m
        further (a pair of two moved edges is found from both ends, and listed once)."""
        edges = self.edges
        rows = np.flatnonzero(geometry.row_any(moved[edges]))
        i, j = sphere_search.sphere_pairs(gather(centres, rows), radius[rows] + extra, centres, radius, limit)
        i = rows[i]
        key = np.unique(np.minimum(i, j) * len(edges) + np.maximum(i, j))
        return key // len(edges), key % len(edges)

    def _vf_valid(self, p, t):
        """(k,) bool: which vertex-triangle pairs (p, t) can be contacts (the vertex is not a
        corner of the triangle, and their objects may collide)."""
        tris = self.triangles
        return (tris[t, 0] != p) & (tris[t, 1] != p) & (tris[t, 2] != p) & self._allowed(p, t, "vf")

    def _ee_valid(self, a, b):
        """(k,) bool: which edge-edge pairs (a, b) can be contacts (a < b, no shared end, and
        their objects may collide)."""
        ea, eb = self.edges[a], self.edges[b]
        shared = ((ea[:, 0] == eb[:, 0]) | (ea[:, 0] == eb[:, 1]) | (ea[:, 1] == eb[:, 0])
                  | (ea[:, 1] == eb[:, 1]))
        return (a < b) & ~shared & self._allowed(a, b, "ee")

    def _near(self, x, budget, allowance=None, moved=None, within=False):
        """Vertex-triangle pairs (p, t, gap) and edge-edge pairs (a < b, gap) at positions x (n, 3)
        whose gap is at most d plus their features' largest budgets (budget: (n,) m per vertex)
        plus the largest allowance (c, c) of the cluster pairs they span (None: none); gap: (k,)
        m, the exact distance between the two features. Pairs sharing a vertex are left out.
        moved: optional (n,) bool, only pairs with one of these vertices (within: in both of
        their features, the pair's vertex included). Raises
        sphere_search.TooManyPairs rather than list more sphere pairs than PAIR_LIMIT per vertex (or
        PAIR_FLOOR; a search's count is estimated, see sphere_search.sphere_pairs)."""
        tris, edges, d = self.triangles, self.edges, self.distance
        limit = max(PAIR_LIMIT * len(x), PAIR_FLOOR)
        flat = None if allowance is None else allowance.ravel()
        # a feature's reach covers its share of any allowance of its clusters: half of the largest
        # (the allowances are symmetric, so the halves of two clusters add up to theirs)
        row = np.zeros(self._c) if allowance is None else 0.5 * allowance.max(axis=1)
        vf_p = vf_t = ea = eb = np.zeros(0, dtype=np.int64)
        vf_gap = ee_gap = np.zeros(0)
        if len(tris):
            centre, radius = _spheres(x, tris)
            tri_budget = _most(budget, tris)
            tri_reach = tri_budget + _most(row, self._tri_clusters) + 0.5 * d
            reach = budget + row[self._cluster] + 0.5 * d
            if moved is None and self._label is None:
                vf_p, vf_t, spacing = sphere_search.sphere_pairs(x, reach, centre, radius + tri_reach, limit,
                                                                 True)
            elif moved is None:
                # object by object, so that an object whose own layers do not collide (a fast sewn
                # garment, say) lists no pairs of its own
                found = []
                for rows, hit, _, _ in self._blocks:
                    p, t, far = sphere_search.sphere_pairs(gather(x, rows), reach[rows], gather(centre, hit),
                                                      radius[hit] + tri_reach[hit], limit, True)
                    found.append((rows[p], hit[t], far))
                vf_p, vf_t, spacing = (np.concatenate(column) for column in zip(*found, strict=True))
            else:
                if within:  # moved vertices against moved triangles
                    rows, hit = np.flatnonzero(moved), np.flatnonzero(geometry.row_any(moved[tris]))
                    p1, t1 = sphere_search.sphere_pairs(gather(x, rows), reach[rows], gather(centre, hit),
                                                   radius[hit] + tri_reach[hit], limit)
                    key = np.sort(rows[p1] * len(tris) + hit[t1])
                    vf_p, vf_t = key // len(tris), key % len(tris)
                else:
                    vf_p, vf_t = self._vf_pairs_with(moved, x, reach, centre, radius + tri_reach, limit)
                spacing = vector_lengths(gather(x, vf_p) - gather(centre, vf_t))
            keep = self._vf_valid(vf_p, vf_t)
            vf_p, vf_t, spacing = vf_p[keep], vf_t[keep], spacing[keep]
            bound = budget[vf_p] + tri_budget[vf_t] + d
            if flat is not None:
                bound += self._vf_most(flat, vf_p, vf_t)
            # the spheres, before any closest point: a fast vertex's reach finds many far pairs
            keep = spacing - radius[vf_t] <= bound
            vf_p, vf_t, bound = vf_p[keep], vf_t[keep], bound[keep]
            corners = tris[vf_t]
            q, _, _ = distance.closest_points(gather(x, vf_p), *(gather(x, corners[:, k]) for k in range(3)))
            vf_gap = vector_lengths(gather(x, vf_p) - q)
            # in the order of the features' numbers, not of the trees' traversal: the Jacobi sums
            # of the responses then do not depend on how the trees were cut
            keep = np.flatnonzero(vf_gap <= bound)
            keep = keep[np.argsort(vf_p[keep] * len(tris) + vf_t[keep], kind="stable")]
            vf_p, vf_t, vf_gap = vf_p[keep], vf_t[keep], vf_gap[keep]
        if len(edges):
            middle, half = _spheres(x, edges)
            edge_budget = _most(budget, edges)
            extent = half + edge_budget + _most(row, self._edge_clusters) + 0.5 * d
            if moved is None and self._label is None:
                ea, eb, spacing = sphere_search.sphere_pairs_within(middle, extent, limit, True)
            elif moved is None:
                found = []
                for k, (_, _, own_edges, later) in enumerate(self._blocks):
                    if self._own[k]:
                        i, j, far = sphere_search.sphere_pairs_within(gather(middle, own_edges),
                                                                      extent[own_edges], limit, True)
                        found.append((own_edges[i], own_edges[j], far))
                    i, j, far = sphere_search.sphere_pairs(gather(middle, own_edges), extent[own_edges],
                                                      gather(middle, later), extent[later], limit, True)
                    found.append((own_edges[i], later[j], far))
                ea, eb, spacing = (np.concatenate(column) for column in zip(*found, strict=True))
                ea, eb = np.minimum(ea, eb), np.maximum(ea, eb)
            elif within:
                rows = np.flatnonzero(geometry.row_any(moved[edges]))
                ea, eb = sphere_search.sphere_pairs_within(gather(middle, rows), extent[rows], limit)
                ea, eb = rows[ea], rows[eb]  # rows ascend: ea < eb still
                order = np.argsort(ea * len(edges) + eb)
                ea, eb = ea[order], eb[order]
            else:
                ea, eb = self._ee_pairs_with(moved, middle, extent, limit)
            if moved is not None:
                spacing = vector_lengths(gather(middle, ea) - gather(middle, eb))
            keep = self._ee_valid(ea, eb)
            ea, eb, spacing = ea[keep], eb[keep], spacing[keep]
            bound = edge_budget[ea] + edge_budget[eb] + d
            if flat is not None:
                bound += self._ee_most(flat, ea, eb)
            keep = spacing - half[ea] - half[eb] <= bound
            ea, eb, bound = ea[keep], eb[keep], bound[keep]
            ee_gap = vector_lengths(self._edge_gaps(x, ea, eb)[0])
            keep = np.flatnonzero(ee_gap <= bound)
            keep = keep[np.argsort(ea[keep] * len(edges) + eb[keep], kind="stable")]
            ea, eb, ee_gap = ea[keep], eb[keep], ee_gap[keep]
        return vf_p, vf_t, vf_gap, ea, eb, ee_gap

    def _split(self, motion):
        """Motion (n, 3) as each cluster's mass-weighted mean (c, 3) and each vertex's deviation
        from its cluster's, (n,) m."""
        mean = self._mean @ motion
        rest = motion - mean[self._cluster]
        return mean, np.sqrt(np.einsum("ij,ij->i", rest, rest))

    def _fit(self, budget, allowance, apart=None):
        """(allowance, limit), each (c, c) m, for vertex budgets (n,) and the drift allowances
        (c, c) asked for. Two clusters whose features are further apart at the reference than d
        plus the largest budgets of their reaches need no allowance (0): no pair of theirs can be
        found with it. limit: how far two clusters' reference motions may drift apart while the
        candidates hold, their allowance or, if larger, how far their reaches' bounding spheres
        at the reference are apart beyond d and those budgets. apart: (c, c) m, how far those
        spheres are apart (the reference's, _apart, if None)."""
        apart = self._apart if apart is None else apart
        reach = np.maximum.reduceat(budget[self._reach_vertex], self._reach_start)
        apart = apart - reach[:, None] - reach[None, :] - self.distance
        allowance = np.where(apart > allowance, 0.0, allowance)
        np.fill_diagonal(allowance, 0.0)
        return allowance, np.maximum(allowance, apart)

    def candidates(self, x0, x1):
        """Find candidate pairs afresh from the start x0 and the current end x1 of a substep,
        (n, 3) m.

        x1 becomes the reference. Each vertex's budget is GROW times its deviation from its
        cluster's mean motion x0 -> x1, plus SLACK d, and each two clusters' drift allowance
        DRIFT_GROW times how far their mean motions differ, plus DRIFT_SLACK d; pairs closer at x1 than d
        plus their vertices' largest budgets and their clusters' allowance are candidates, with
        their exact gaps at x1 (later positions only need the features' deviations and their
        clusters' drift since, _spread, to bound a gap from below). They hold for any positions
        at which no vertex deviates by more than its budget and no two clusters drift apart by
        more than their limit (`cover` checks, and grows the budgets that a vertex outruns)."""
        d = self.distance
        # The end is the reference: the budgets then cover the substep's motion back to x0 and
        # GROW times it forwards, a substep more than from x0 at a steady speed.
        reference = x1
        # the bounding spheres of the clusters' reaches, at the reference
        centre = self._mean @ reference
        offset = gather(reference, self._reach_vertex) - gather(centre, self._reach_cluster)
        radius = np.maximum.reduceat(np.sqrt(np.einsum("ij,ij->i", offset, offset)), self._reach_start)
        apart = _pairwise(centre) - radius[:, None] - radius[None, :]
        apart = np.minimum(apart, apart.T)  # symmetric to the last bit, as the allowances must be
        mean, deviation = self._split(x1 - x0)
        drift = _pairwise(mean)
        try:
            budget = GROW * deviation + SLACK * d
            allowance, limit = self._fit(budget, DRIFT_GROW * drift + DRIFT_SLACK * d, apart)
            found = self._near(reference, budget, allowance)
        except sphere_search.TooManyPairs:
            # a cloth in violent motion: budgets for this substep alone; if even those list too
            # many pairs, TooManyPairs reaches prepare/untangle, which hold the cloth still
            budget = deviation + SLACK * d
            allowance, limit = self._fit(budget, drift + DRIFT_SLACK * d, apart)
            found = self._near(reference, budget, allowance)
        # only now: if even the fall-back lists too many pairs, the last set and its reference stay
        self._reference, self._apart = reference.copy(), apart
        self._budget, self._allowance, self._limit = budget, allowance, limit
        self._add(*found, fresh=True)
        self._built = len(self.vf[0]) + len(self.ee[0])
        self.stats["builds"] = self.stats.get("builds", 0) + 1

    def _add(self, p, t, vf_gap, a, b, ee_gap, fresh=False):
        """Append candidate pairs, with what the tests need of them."""
        vf_proximity = ~_member(p * max(len(self.triangles), 1) + t, self._vf_excluded)
        ee_proximity = ~_member(a * max(len(self.edges), 1) + b, self._ee_excluded)
        for name, values in (("_vf_p", p), ("_vf_t", t), ("_vf_gap", vf_gap), ("_vf_tris", self.triangles[t]),
                             ("_vf_proximity", vf_proximity), ("_vf_clusters", self._vf_pairs(p, t)),
                             ("_ee_a", a), ("_ee_b", b), ("_ee_gap", ee_gap),
                             ("_ee_a_ends", self.edges[a]), ("_ee_b_ends", self.edges[b]),
                             ("_ee_proximity", ee_proximity), ("_ee_clusters", self._ee_pairs(a, b))):
            old = getattr(self, name, None)
            axis = 1 if name.endswith("_clusters") else 0  # (w, k): one row per cluster pair
            setattr(self, name, values if old is None or fresh else np.concatenate([old, values], axis=axis))
        self.vf, self.ee = (self._vf_p, self._vf_t), (self._ee_a, self._ee_b)
        self._ee_ends = (self._ee_a_ends, self._ee_b_ends)
        self.stats["vf"], self.stats["ee"] = len(self._vf_p), len(self._ee_a)

    def _spread(self, x):
        """How far the vertices at x (n, 3) deviate from the reference, apart from their
        clusters' mean motions, per feature at most: ((n,) vertices, (t,) triangles, (e,) edges),
        m; and how far the clusters' mean motions drifted apart, (c, c) m."""
        mean, vertex = self._split(x - self._reference)
        return vertex, _most(vertex, self.triangles), _most(vertex, self.edges), _pairwise(mean)

    def cover(self, x0, x) -> bool:
        """Make the candidates hold at positions x (n, 3) of the substep that starts at x0, and at
        x0: two features that are no pair are then further apart than the gap at both, and on the
        straight path between them. A vertex that deviated from the reference by more than its
        budget gets a larger one, two clusters that drifted apart beyond their limit a larger
        allowance, and the pairs that this brings within reach are added; when many vertices
        need that, or the set has grown a lot, it is built afresh. Returns whether pairs were
        added."""
        reference = getattr(self, "_reference", None)
        if reference is None or len(x) != len(reference):
            self.candidates(x0, x)
            return True
        # Both ends: deviations and drifts are norms of linear functions of the positions, so
        # within bounds at both ends they are within them all along the path; and growing
        # budgets lowers the limits of the drifts, which x0 must still meet.
        mean0, deviation0 = self._split(x0 - reference)
        mean, deviation = self._split(x - reference)
        deviation = np.maximum(deviation, deviation0)
        drift = np.maximum(_pairwise(mean), _pairwise(mean0))
        over = deviation > self._budget
        if not over.any() and not np.any(drift > self._limit):
            return False
        if over.sum() > REBUILD * len(x) or len(self.vf[0]) + len(self.ee[0]) > 2 * self._built + 1000:
            self.candidates(x0, x)
            return True
        d = self.distance
        budget = np.where(over, GROW * deviation + SLACK * d, self._budget)
        allowance = self._allowance
        _, limit = self._fit(budget, allowance)
        drifting = drift > limit
        drifting |= drifting.T  # (both are symmetric but for rounding)
        if np.any(drifting):
            # The clusters that drifted beyond their limit get larger allowances, and only the
            # pairs between their features need a search: a few cluster pairs where one part of
            # the cloth comes down on another, not the whole set.
            self.stats["drifted"] = self.stats.get("drifted", 0) + 1
            allowance = np.where(drifting, DRIFT_GROW * drift + DRIFT_SLACK * d, allowance)
            allowance, limit = self._fit(budget, allowance)
            drifting = _member(self._cluster, np.flatnonzero(drifting.any(axis=1)))  # now per vertex
            if np.any(drift > limit) or drifting.sum() > REBUILD * len(x):
                self.candidates(x0, x)
                return True
            self.stats["drift_grown"] = self.stats.get("drift_grown", 0) + 1
        try:
            found = [self._near(reference, budget, allowance, over)] if over.any() else []
            if np.any(drifting):
                p, t, vf_gap, a, b, ee_gap = self._near(reference, budget, allowance, drifting & ~over,
                                                        within=True)
                # pairs with a vertex that outran its budget came with the search above
                vf = ~(over[p] | _most(over, self.triangles[t]))
                ee = ~(_most(over, self.edges[a]) | _most(over, self.edges[b]))
                found.append((p[vf], t[vf], vf_gap[vf], a[ee], b[ee], ee_gap[ee]))
            p, t, vf_gap, a, b, ee_gap = (np.concatenate(column) for column in zip(*found, strict=True))
        except sphere_search.TooManyPairs:
            self.candidates(x0, x)
            return True
        # only the pairs that were out of reach before are new
        flat = self._allowance.ravel()
        old = self._budget
        new = vf_gap > old[p] + _most(old, self.triangles[t]) + d + self._vf_most(flat, p, t)
        fresh = ee_gap > _most(old, self.edges[a]) + _most(old, self.edges[b]) + d + \
            self._ee_most(flat, a, b)
        self._budget, self._allowance, self._limit = budget, allowance, limit
        self._add(p[new], t[new], vf_gap[new], a[fresh], b[fresh], ee_gap[fresh])
        self.stats["grown"] = self.stats.get("grown", 0) + 1
        return True

    def prepare(self, x0, x1) -> None:
        """Candidates that hold for the substep x0 -> x1 (n, 3); if they cannot be listed within
        memory, x1 is set back to x0 (this substep does not move the cloth)."""
        try:
            self.cover(x0, x1)
        except sphere_search.TooManyPairs:
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
        return distance.segment_gap(gather(x, ea[:, 0]), gather(x, ea[:, 1]), gather(x, eb[:, 0]),
                                    gather(x, eb[:, 1]))

    def separate(self, x, x0) -> None:
        """One proximity pass, in place on x (n, 3): pairs closer than the gap pushed apart to it,
        on the side they were on at x0, with friction on their relative sliding."""
        if getattr(self, "_reference", None) is None:
            return  # no candidates: the first search did not fit in memory, and the substep held
        d, w = self.distance, self.model.inv_mass
        index, vectors = [], []
        p, t, a, b = self._shortlist(x)
        if len(p):
            tris = self.triangles[t]
            q, bary, _ = distance.closest_points(gather(x, p), *(gather(x, tris[:, k]) for k in range(3)))
            gap = gather(x, p) - q
            dist = vector_lengths(gap)
            near = dist < d
            if np.any(near):
                p, tris, q, bary, gap, dist = p[near], tris[near], q[near], bary[near], gap[near], dist[near]
                # the side at the start: the start triangle's normal, signed by where p was
                a0, b0, c0 = (gather(x0, tris[:, k]) for k in range(3))
                n0 = geometry.cross(b0 - a0, c0 - a0)
                side = np.sign(np.einsum("ij,ij->i", gather(x0, p) - a0, n0))
                q0 = np.einsum("ij,ijk->ik", bary, gather(x0, tris))
                normal = self._direction(gap, dist, gather(x0, p) - q0, side[:, None] * n0)
                self._push(index, vectors, x, x0, np.concatenate([p[:, None], tris], axis=1),
                           np.concatenate([np.ones((len(p), 1)), -bary], axis=1), normal,
                           d - np.einsum("ij,ij->i", gap, normal), w)
        if len(a):
            gap, s, t = self._edge_gaps(x, a, b)
            dist = vector_lengths(gap)
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
        pair's gap at the reference, less how far both features deviated since and how far their
        clusters drifted apart, is below d."""
        d = self.distance
        vertex, triangle, edge, drift = self._spread(x)
        drift = drift.ravel()
        (p, t), (a, b) = self.vf, self.ee
        near = self._vf_proximity & (self._vf_gap < d + vertex[p] + triangle[t] +
                                     _largest(drift, self._vf_clusters))
        close = self._ee_proximity & (self._ee_gap < d + edge[a] + edge[b] +
                                      _largest(drift, self._ee_clusters))
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
            unit[tiny] = f / np.maximum(vector_lengths(f), 1e-300)[:, None]
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
            slide = np.einsum("ij,ijk->ik", weights, gather(x, who) - gather(x0, who))
            slide -= np.einsum("ij,ij->i", slide, normal)[:, None] * normal
            length = vector_lengths(slide)
            cut = np.minimum(1.0, self.friction * np.abs(depth) / np.maximum(length, 1e-300))
            mu = (cut / denom)[:, None] * slide  # the impulse that stops that share of the slide
            step -= (weights * inv)[:, :, None] * mu[:, None, :]
        index.append(who.ravel())
        vectors.append(step.reshape(-1, 3))

    # -- the guarantee ---------------------------------------------------------------------------
    def _touching(self, x0, x1):
        """(k, 4) vertices of the candidate pairs that touch during x0 -> x1 (vertex-triangle:
        the vertex, then the triangle's corners; edge-edge: both edges' ends)."""
        if getattr(self, "_reference", None) is None:
            return np.zeros((0, 4), dtype=np.int64)  # as in separate
        tol = max(_TOUCH * self.distance, 1e-6)
        motion = x1 - x0
        groups = []
        # A pair can only touch if its gap at the reference is within what its features deviated
        # since, at x0, plus what they move apart from their clusters' means over the substep,
        # plus how far their clusters drift apart at most (at either end: the drift is linear).
        vertex, triangle, edge, drift = self._spread(x0)
        mean, step = self._split(motion)
        drift = np.maximum(drift, _pairwise(self._mean @ (x0 - self._reference) + mean)).ravel()
        vertex = vertex + step
        triangle = triangle + _most(step, self.triangles)
        edge = edge + _most(step, self.edges)
        (p, t), tris = self.vf, self._vf_tris
        keep = self._vf_gap <= vertex[p] + triangle[t] + _largest(drift, self._vf_clusters) + tol
        groups.append(_vf_touching(x0, x1, motion, p[keep], tris[keep], tol))
        (a, b), (ea, eb) = self.ee, self._ee_ends
        keep = self._ee_gap <= edge[a] + edge[b] + _largest(drift, self._ee_clusters) + tol
        groups.append(_ee_touching(x0, x1, motion, ea[keep], eb[keep], tol))
        return np.concatenate(groups) if groups else np.zeros((0, 4), dtype=np.int64)

    def _swept_touching(self, x0, x1, changed):
        """(k, 4) vertices of the pairs with a vertex of `changed` (n,) bool that touch during
        x0 -> x1 (as _touching), found by a search of their own over the paths' bounding spheres
        rather than among the candidates: after an impact zone moved, the candidates may no
        longer hold for its vertices, and a search limited to them costs a fraction of building
        the set afresh. Pairs without a changed vertex are left out."""
        tol = max(_TOUCH * self.distance, 1e-6)
        limit = max(PAIR_LIMIT * len(x0), PAIR_FLOOR)
        tris, edges = self.triangles, self.edges
        # a vertex's path lies in the sphere about its midpoint; a feature's, in the bounding
        # sphere of its corners at both ends (its positions in between are their convex mixes)
        motion = x1 - x0
        middle = 0.5 * (x0 + x1)
        half = 0.5 * vector_lengths(motion) + tol
        both = np.concatenate([x0, x1], axis=1).reshape(-1, 3)  # row 2 i: x0[i], row 2 i + 1: x1[i]
        groups = []
        if len(tris):
            centre, radius = _spheres(both, (2 * tris[:, :, None] + np.arange(2)).reshape(len(tris), -1))
            p, t = self._vf_pairs_with(changed, middle, half, centre, radius, limit)
            keep = self._vf_valid(p, t)
            groups.append(_vf_touching(x0, x1, motion, p[keep], tris[t[keep]], tol))
        if len(edges):
            centre, radius = _spheres(both, (2 * edges[:, :, None] + np.arange(2)).reshape(len(edges), -1))
            a, b = self._ee_pairs_with(changed, centre, radius, limit, tol)
            keep = self._ee_valid(a, b)
            groups.append(_ee_touching(x0, x1, motion, edges[a[keep]], edges[b[keep]], tol))
        return np.concatenate(groups) if groups else np.zeros((0, 4), dtype=np.int64)

    def untangle(self, x0, x1, held=None) -> int:
        """Make x0 -> x1 free of crossings, in place on x1 (n, 3); x0 must be crossing-free.

        held: optional (n,) bool, vertices a collider holds: a zone holding some translates as
        they do on average (a zone landing on the floor stops with it, not pushed into it).
        Returns how many vertices ended in impact zones."""
        try:
            return self._untangle(x0, x1, held)
        except sphere_search.TooManyPairs:  # the zones flung the cloth about: the substep is undone
            self._hold(x0, x1)
            return 0

    def _untangle(self, x0, x1, held):
        n = len(x0)
        pinned = self.model.inv_mass == 0.0
        held = np.zeros(n, dtype=bool) if held is None else held & ~pinned
        zone_of = None
        in_zone = np.zeros(n, dtype=bool)
        # The candidates hold for x1 as it comes in (prepare); once zones have moved, only pairs
        # with a vertex that moved, or that touched last time, can touch, and those are searched
        # for directly (their vertices may have left the candidates' reach).
        changed = None
        for rounds in range(1, ZONE_ROUNDS + 1):
            touching = self._touching(x0, x1) if changed is None else self._swept_touching(x0, x1, changed)
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
            changed = geometry.row_any(x1 != before)
            moved = changed.any()
            # a touching pair none of whose vertices moved still touches: test it again too
            changed[touching.ravel()] = True
            if not moved:
                break  # the zones cannot move any other way (their anchors disagree): fall back
            self.stats["zones"] = int(len(np.unique(label[in_zone])))
        # fall-back: every vertex still touching, and its zone, stays at the start
        stuck = np.zeros(n, dtype=bool)
        waiting = np.zeros(n, dtype=bool)
        for _ in range(2 * n):
            touching = self._touching(x0, x1) if changed is None else self._swept_touching(x0, x1, changed)
            if len(touching) == 0:
                break
            before = stuck | waiting
            stuck[touching.ravel()] = True
            if zone_of is not None:
                stuck |= in_zone & np.isin(zone_of, zone_of[stuck & in_zone])
            stuck &= ~pinned
            if np.array_equal(x1[stuck], x0[stuck]):
                # Only pins still drive a crossing (a pinned column turned through the cloth
                # wrapped round it): those pins wait where the substep started. The next substep
                # aims them at their own target again, so they catch up as soon as the cloth
                # lets them pass.
                pins = np.zeros(n, dtype=bool)
                pins[touching.ravel()] = True
                waiting |= pins & pinned
            x1[stuck | waiting] = x0[stuck | waiting]
            changed = (stuck | waiting) & ~before
            if not changed.any():
                break  # x1 is x0 wherever a touching pair has a vertex: x0 is crossing-free
            changed[touching.ravel()] = True
        self.stats["frozen"] = int(stuck.sum())
        self.stats["pins_held"] = int(waiting.sum())
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
        start, end = gather(x0, members), gather(x1, members)

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
