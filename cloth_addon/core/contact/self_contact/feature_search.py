"""The search for self-contact pairs: which features of the cloth may come within the gap.

Vertex-triangle pairs (a vertex and a triangle it is no corner of) and edge-edge pairs (a < b, no
shared end) whose bounding spheres, grown by a budget per vertex and an allowance per cluster pair,
overlap (k-d trees, sphere_search.py), then kept by their exact gaps. Several cloth objects in one
model: an object whose own layers do not collide lists no pairs of its own (its features are
searched object by object).
"""

import numpy as np

from ... import geometry
from ...geometry import gather, vector_lengths
from .. import distance, sphere_search
from .clusters import most

# Budgets that would bring more sphere pairs than this many per vertex (and more than
# PAIR_FLOOR in all) are cut to the substep's own motion (memory: a large cloth flung about must
# not list every pair of its features).
PAIR_LIMIT = 400
PAIR_FLOOR = 2_000_000


def pair_limit(n):
    """The most sphere pairs a search over n vertices may list."""
    return max(PAIR_LIMIT * n, PAIR_FLOOR)


def spheres(x, features):
    """(centres (k, 3), radii (k,)) of bounding spheres of features (k, m) vertex ids at x."""
    corners = gather(x, features)
    centre = corners[:, 0].copy()  # the mean by columns (a reduction along the short axis is slow)
    for column in range(1, corners.shape[1]):
        centre += corners[:, column]
    centre /= corners.shape[1]
    offset = corners - centre[:, None]
    return centre, np.sqrt(geometry.row_max(np.einsum("ijk,ijk->ij", offset, offset)))




def boxes(low, high, features):
    """(low (k, 3), high (k, 3)): the bounding boxes of features (k, m) vertex ids, from each
    vertex's box low, high (n, 3) (of points x: boxes(x, x, features))."""
    lo, hi = low[features[:, 0]], high[features[:, 0]]
    for column in range(1, features.shape[1]):
        np.minimum(lo, low[features[:, column]], out=lo)
        np.maximum(hi, high[features[:, column]], out=hi)
    return lo, hi


def box_distance(low_a, high_a, low_b, high_b, a, b):
    """(k,) m: how far box a of low_a, high_a (., 3) is from box b of low_b, high_b, for the index
    pairs a, b (k,) (0 where they meet): never more than the distance between anything inside
    them."""
    apart = np.maximum(np.maximum(low_a[a] - high_b[b], low_b[b] - high_a[a]), 0.0)
    return np.sqrt(np.einsum("ij,ij->i", apart, apart))


def edge_gaps(x, edges, a, b):
    """(gap (k, 3) from edge b's closest point to edge a's, s (k,), t (k,))."""
    ea, eb = edges[a], edges[b]
    return distance.segment_gap(gather(x, ea[:, 0]), gather(x, ea[:, 1]), gather(x, eb[:, 0]),
                                gather(x, eb[:, 1]))



class FeatureSearch:
    """Pair searches over the contact features of one model.

    triangles (t, 3), edges (e, 2): the model's contact features; distance: m, the gap; clusters:
    clusters.Clusters; parts: as for SelfContact."""

    def __init__(self, n_particles, triangles, edges, distance, clusters, parts=None):
        self.n_particles = n_particles
        self.triangles, self.edges, self.distance = triangles, edges, distance
        self.clusters = clusters
        # the corners and ends as contiguous columns (gathers from them cost half of row gathers)
        self._corners = tuple(np.ascontiguousarray(triangles[:, k]) for k in range(triangles.shape[1]))
        self._ends = tuple(np.ascontiguousarray(edges[:, k]) for k in range(edges.shape[1]))
        # a lower limit on a search's sphere pairs than memory's (pair_limit), or None
        self.work_limit = None
        self._set_parts(parts)

    # -- several cloth objects ---------------------------------------------------------------
    def _set_parts(self, parts):
        """parts: None, or (label (n,) int: the cloth object of each vertex, own (k,) bool: whether
        that object's own layers collide). Two features of one object whose `own` is False are no
        pair (the objects still collide with each other): _blocks lists, per object, the vertices
        and the triangles and edges its features are searched against."""
        self._label = None
        if parts is None:
            return
        label, own = np.asarray(parts[0], dtype=np.int64), np.asarray(parts[1], dtype=bool)
        if (label.shape != (self.n_particles,) or own.ndim != 1
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

    # -- searches ----------------------------------------------------------------------------
    def vf_pairs_with(self, moved, points, point_radius, centres, centre_radius, limit):
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

    def ee_pairs_with(self, moved, centres, radius, limit, extra=0.0):
        """(a <= b) in ascending order: the edge-edge pairs with a vertex of moved (n,) bool whose
        spheres (centres (e, 3), radius (e,)) overlap, the moved edges' reaching `extra` m
        further (a pair of two moved edges is found from both ends, and listed once)."""
        edges = self.edges
        rows = np.flatnonzero(geometry.row_any(moved[edges]))
        i, j = sphere_search.sphere_pairs(gather(centres, rows), radius[rows] + extra, centres, radius, limit)
        i = rows[i]
        key = np.unique(np.minimum(i, j) * len(edges) + np.maximum(i, j))
        return key // len(edges), key % len(edges)

    def vf_valid(self, p, t):
        """(k,) bool: which vertex-triangle pairs (p, t) can be contacts (the vertex is not a
        corner of the triangle, and their objects may collide)."""
        valid = self._allowed(p, t, "vf")
        for corner in self._corners:
            valid &= corner[t] != p
        return valid

    def ee_valid(self, a, b):
        """(k,) bool: which edge-edge pairs (a, b) can be contacts (a < b, no shared end, and
        their objects may collide)."""
        valid = (a < b) & self._allowed(a, b, "ee")
        start, end = self._ends
        a0, a1, b0, b1 = start[a], end[a], start[b], end[b]
        for one, other in ((a0, b0), (a0, b1), (a1, b0), (a1, b1)):
            valid &= one != other
        return valid

    def near(self, x, budget, allowance=None, moved=None, within=False):
        """Vertex-triangle pairs (p, t, gap) and edge-edge pairs (a < b, gap) at positions x (n, 3)
        whose gap is at most d plus their features' largest budgets (budget: (n,) m per vertex)
        plus the largest allowance (c, c) of the cluster pairs they span (None: none); gap: (k,)
        m, the exact distance between the two features. Pairs sharing a vertex are left out.
        moved: optional (n,) bool, only pairs with one of these vertices (within: in both of
        their features, the pair's vertex included). Raises
        sphere_search.TooManyPairs rather than list more sphere pairs than PAIR_LIMIT per vertex (or
        PAIR_FLOOR; a search's count is estimated, see sphere_search.sphere_pairs)."""
        limit = pair_limit(len(x)) if self.work_limit is None else min(self.work_limit, pair_limit(len(x)))
        flat = None if allowance is None else allowance.ravel()
        # a feature's reach covers its share of any allowance of its clusters: half of the largest
        # (the allowances are symmetric, so the halves of two clusters add up to theirs)
        row = np.zeros(self.clusters.count) if allowance is None else 0.5 * allowance.max(axis=1)
        vf_p = vf_t = ea = eb = np.zeros(0, dtype=np.int64)
        vf_gap = ee_gap = np.zeros(0)
        # edges first: a cloth has more of them than triangles, and their search is the one that
        # is refused (a refusal after the triangles' search would waste it)
        if len(self.edges):
            ea, eb, ee_gap = self._near_ee(x, budget, flat, row, moved, within, limit)
        if len(self.triangles):
            vf_p, vf_t, vf_gap = self._near_vf(x, budget, flat, row, moved, within, limit)
        return vf_p, vf_t, vf_gap, ea, eb, ee_gap

    def _near_vf(self, x, budget, flat, row, moved, within, limit):
        """near's vertex-triangle pairs; flat: the allowance (c * c,) or None, row: (c,) each
        cluster's half of its largest allowance."""
        tris, d = self.triangles, self.distance
        centre, radius = spheres(x, tris)
        tri_budget = most(budget, tris)
        tri_reach = tri_budget + most(row, self.clusters.of_triangles) + 0.5 * d
        reach = budget + row[self.clusters.label] + 0.5 * d
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
                vf_p, vf_t = self.vf_pairs_with(moved, x, reach, centre, radius + tri_reach, limit)
            spacing = vector_lengths(gather(x, vf_p) - gather(centre, vf_t))
        keep = self.vf_valid(vf_p, vf_t)
        vf_p, vf_t, spacing = vf_p[keep], vf_t[keep], spacing[keep]
        bound = budget[vf_p] + tri_budget[vf_t] + d
        if flat is not None:
            bound += self.clusters.vf_most(flat, vf_p, vf_t)
        # the spheres, before any closest point: a fast vertex's reach finds many far pairs
        keep = spacing - radius[vf_t] <= bound
        vf_p, vf_t, bound = vf_p[keep], vf_t[keep], bound[keep]
        low, high = boxes(x, x, tris)  # as for the edges (_near_ee)
        keep = box_distance(x, x, low, high, vf_p, vf_t) <= bound
        vf_p, vf_t, bound = vf_p[keep], vf_t[keep], bound[keep]
        corners = tris[vf_t]
        q, _, _ = distance.closest_points(gather(x, vf_p), *(gather(x, corners[:, k]) for k in range(3)))
        vf_gap = vector_lengths(gather(x, vf_p) - q)
        # in the order of the features' numbers, not of the trees' traversal: the Jacobi sums
        # of the responses then do not depend on how the trees were cut
        keep = np.flatnonzero(vf_gap <= bound)
        keep = keep[np.argsort(vf_p[keep] * len(tris) + vf_t[keep], kind="stable")]
        return vf_p[keep], vf_t[keep], vf_gap[keep]

    def _near_ee(self, x, budget, flat, row, moved, within, limit):
        """near's edge-edge pairs (as _near_vf)."""
        edges, d = self.edges, self.distance
        middle, half = spheres(x, edges)
        edge_budget = most(budget, edges)
        extent = half + edge_budget + most(row, self.clusters.of_edges) + 0.5 * d
        if moved is None and self._label is None:
            ea, eb, spacing = sphere_search.sphere_pairs_within(middle, extent, limit, True)
        elif moved is None:
            ea, eb, spacing = self._ee_by_object(middle, extent, limit)
        elif within:
            rows = np.flatnonzero(geometry.row_any(moved[edges]))
            ea, eb = sphere_search.sphere_pairs_within(gather(middle, rows), extent[rows], limit)
            ea, eb = rows[ea], rows[eb]  # rows ascend: ea < eb still
            order = np.argsort(ea * len(edges) + eb)
            ea, eb = ea[order], eb[order]
        else:
            ea, eb = self.ee_pairs_with(moved, middle, extent, limit)
        if moved is not None:
            spacing = vector_lengths(gather(middle, ea) - gather(middle, eb))
        keep = self.ee_valid(ea, eb)
        ea, eb, spacing = ea[keep], eb[keep], spacing[keep]
        bound = edge_budget[ea] + edge_budget[eb] + d
        if flat is not None:
            bound += self.clusters.ee_most(flat, ea, eb)
        keep = spacing - half[ea] - half[eb] <= bound
        ea, eb, bound = ea[keep], eb[keep], bound[keep]
        # then the distance between their bounding boxes, a lower bound of the gap and a few
        # lookups against the segments' closest points
        low, high = boxes(x, x, edges)
        keep = box_distance(low, high, low, high, ea, eb) <= bound
        ea, eb, bound = ea[keep], eb[keep], bound[keep]
        ee_gap = vector_lengths(edge_gaps(x, edges, ea, eb)[0])
        keep = np.flatnonzero(ee_gap <= bound)
        keep = keep[np.argsort(ea[keep] * len(edges) + eb[keep], kind="stable")]
        return ea[keep], eb[keep], ee_gap[keep]

    def _ee_by_object(self, middle, extent, limit):
        """(a <= b, spacing): the edge spheres (middle (e, 3), extent (e,)) that overlap, object
        by object: an object's own edges only if its own layers collide."""
        found = []
        for k, (_, _, own_edges, later) in enumerate(self._blocks):
            if self._own[k]:
                i, j, far = sphere_search.sphere_pairs_within(gather(middle, own_edges), extent[own_edges],
                                                              limit, True)
                found.append((own_edges[i], own_edges[j], far))
            i, j, far = sphere_search.sphere_pairs(gather(middle, own_edges), extent[own_edges],
                                                   gather(middle, later), extent[later], limit, True)
            found.append((own_edges[i], later[j], far))
        ea, eb, spacing = (np.concatenate(column) for column in zip(*found, strict=True))
        return np.minimum(ea, eb), np.maximum(ea, eb), spacing
