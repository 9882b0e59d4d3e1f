"""Self-contact's narrow phase: exact gaps of the shortlisted pairs, and exact touches over a substep.

Proximity: a vertex-triangle pair's closest points (distance.closest_points), an edge-edge pair's
(distance.segment_gap); those closer than the gap d become contacts, each pushed along its gap
turned to the side the pair had at the substep's start (response.py). Continuous: the candidates
that may touch (broad_phase.may_touch, or a search of their own after impact zones moved) are
tested by the exact cubic of their times of impact (ccd.py), after a cheap bound on how far their
distance can shrink over the substep.
"""

import numpy as np

from ... import geometry
from ...geometry import gather, vector_lengths
from .. import ccd, distance
from .feature_search import box_distance, boxes, edge_gaps, pair_limit, spheres


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


def vf_contacts(x, x0, p, tris, d):
    """The vertex-triangle pairs (p (k,), tris (k, 3) corners) closer than d at x (n, 3), as
    contacts (who (m, 4) vertex ids, weights (m, 4) signed barycentric weights, normal (m, 3),
    depth (m,) m to correct), the side taken at x0, or None without any; and every pair's exact
    gap at x, (k,) m."""
    q, bary, _ = distance.closest_points(gather(x, p), *(gather(x, tris[:, k]) for k in range(3)))
    gap = gather(x, p) - q
    dist = vector_lengths(gap)
    near = dist < d
    if not np.any(near):
        return None, dist
    measured = dist
    p, tris, q, bary, gap, dist = p[near], tris[near], q[near], bary[near], gap[near], dist[near]
    # the side at the start: the start triangle's normal, signed by where p was
    a0, b0, c0 = (gather(x0, tris[:, k]) for k in range(3))
    n0 = geometry.cross(b0 - a0, c0 - a0)
    side = np.sign(np.einsum("ij,ij->i", gather(x0, p) - a0, n0))
    q0 = np.einsum("ij,ijk->ik", bary, gather(x0, tris))
    normal = _direction(gap, dist, gather(x0, p) - q0, side[:, None] * n0)
    return (np.concatenate([p[:, None], tris], axis=1), np.concatenate([np.ones((len(p), 1)), -bary], axis=1),
            normal, d - np.einsum("ij,ij->i", gap, normal)), measured


def ee_contacts(x, x0, edges, a, b, d):
    """The edge-edge pairs (a, b (k,) into edges (e, 2)) closer than d at x, as vf_contacts."""
    gap, s, t = edge_gaps(x, edges, a, b)
    dist = vector_lengths(gap)
    near = dist < d
    if not np.any(near):
        return None, dist
    measured = dist
    a, b, gap, s, t, dist = a[near], b[near], gap[near], s[near], t[near], dist[near]
    gap0, _, _ = edge_gaps(x0, edges, a, b)
    normal = _direction(gap, dist, gap0, gap0)
    who = np.concatenate([edges[a], edges[b]], axis=1)
    weights = np.stack([1.0 - s, s, t - 1.0, -t], axis=1)
    return (who, weights, normal, d - np.einsum("ij,ij->i", gap, normal)), measured


def _longest(vectors):
    """(k,) the longest of each row of vectors (k, m, 3)."""
    return np.sqrt(geometry.row_max(np.einsum("ijk,ijk->ij", vectors, vectors)))


def vf_touching(x0, x1, motion, p, corners, tol):
    """(k, 4) [vertex, corners] of the vertex-triangle pairs (p (m,), corners (m, 3)) that touch
    (within tol, m) on the straight paths x0 -> x1 (n, 3); motion: x1 - x0."""
    if len(p) == 0:
        return np.zeros((0, 4), dtype=np.int64)
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


def ee_touching(x0, x1, motion, ea, eb, tol):
    """(k, 4) [ends of a, ends of b] of the edge-edge pairs (ea, eb: (m, 2) ends) that touch."""
    if len(ea) == 0:
        return np.zeros((0, 4), dtype=np.int64)
    # as for vf_touching: two points of the edges move apart by a convex mix of the four
    # differences between an end of one and an end of the other's motions
    ends_a, ends_b = gather(motion, ea), gather(motion, eb)
    relative = _longest(np.concatenate([ends_a - ends_b[:, :1], ends_a - ends_b[:, 1:]], axis=1))
    gap, _, _ = distance.segment_gap(*(gather(x0, e[:, k]) for e in (ea, eb) for k in (0, 1)))
    may = vector_lengths(gap) <= relative + tol
    ea, eb = ea[may], eb[may]
    toi = ccd.edge_edge_toi(*(gather(at, e[:, k]) for e in (ea, eb) for k in (0, 1) for at in (x0, x1)), tol)
    hit = np.isfinite(toi)
    return np.concatenate([ea[hit], eb[hit]], axis=1)


def touching(broad, x0, x1, tol):
    """(k, 4) vertices of the candidate pairs (broad_phase.BroadPhase) that touch during x0 -> x1
    (vertex-triangle: the vertex, then the triangle's corners; edge-edge: both edges' ends)."""
    motion = x1 - x0
    (p, tris), (ea, eb) = broad.may_touch(x0, motion, tol)
    return np.concatenate([vf_touching(x0, x1, motion, p, tris, tol),
                           ee_touching(x0, x1, motion, ea, eb, tol)])


class SweptSearch:
    """The impact zones' own searches of one model (`touching`), over the bounding spheres of the
    paths rather than among the candidates. Within one untangle x0 stays and x1 changes only
    where zones moved, so the features' spheres are kept between calls and measured again only
    where a vertex moved (and so are their paths' bounding boxes). search:
    feature_search.FeatureSearch."""

    def __init__(self, search):
        self.search = search
        self._x0 = self._x1 = None
        # per feature kind (triangles, edges): (centres, radii) of the paths' bounding spheres,
        # (low, high) of their bounding boxes
        self._spheres = self._boxes = None

    def _measure(self, x0, x1, low, high):
        """Bring the kept path spheres and boxes of the triangles and edges up to x0 -> x1 (n, 3);
        low, high: (n, 3) each vertex's path box."""
        kinds = (self.search.triangles, self.search.edges)
        fresh = self._x0 is None or self._x0.shape != x0.shape or not np.array_equal(self._x0, x0)
        if not fresh:
            moved = geometry.row_any(x1 != self._x1)
            if not moved.any():
                return
        both = np.stack([x0, x1], axis=1).reshape(-1, 3)  # row 2 i: x0[i], row 2 i + 1: x1[i]
        if fresh:
            self._x0, self._x1 = x0.copy(), x1.copy()
            self._spheres = [_path_spheres(both, features) for features in kinds]
            self._boxes = [boxes(low, high, features) for features in kinds]
            return
        self._x1[moved] = x1[moved]
        for features, (centre, radius), (lo, hi) in zip(kinds, self._spheres, self._boxes, strict=True):
            rows = np.flatnonzero(geometry.row_any(moved[features])) if len(features) else []
            if len(rows):
                centre[rows], radius[rows] = _path_spheres(both, features[rows])
                lo[rows], hi[rows] = boxes(low, high, features[rows])

    def touching(self, x0, x1, changed, tol):
        """(k, 4) vertices of the pairs with a vertex of `changed` (n,) bool that touch during
        x0 -> x1 (as `touching`): after an impact zone moved, the candidates may no longer hold
        for its vertices, and a search limited to them costs a fraction of building the set
        afresh. Pairs without a changed vertex are left out."""
        search = self.search
        limit = pair_limit(len(x0))
        tris, edges = search.triangles, search.edges
        low, high = np.minimum(x0, x1), np.maximum(x0, x1)
        self._measure(x0, x1, low, high)
        (tri_spheres, edge_spheres), ((tri_low, tri_high), (edge_low, edge_high)) = self._spheres, self._boxes
        # a vertex's path lies in the sphere about its midpoint; a feature's, in the bounding
        # sphere of its corners at both ends (its positions in between are their convex mixes)
        motion = x1 - x0
        middle = 0.5 * (x0 + x1)
        half = 0.5 * vector_lengths(motion) + tol
        # Spheres about long paths reach far to their sides: the pairs whose features' boxes over
        # the substep are more than 2 tol apart cannot touch, and are dropped before any gap.
        groups = []
        if len(tris):
            p, t = search.vf_pairs_with(changed, middle, half, *tri_spheres, limit)
            keep = search.vf_valid(p, t)
            p, t = p[keep], t[keep]
            meet = box_distance(low, high, tri_low, tri_high, p, t) <= 2.0 * tol
            groups.append(vf_touching(x0, x1, motion, p[meet], tris[t[meet]], tol))
        if len(edges):
            a, b = search.ee_pairs_with(changed, *edge_spheres, limit, tol)
            keep = search.ee_valid(a, b)
            a, b = a[keep], b[keep]
            meet = box_distance(edge_low, edge_high, edge_low, edge_high, a, b) <= 2.0 * tol
            groups.append(ee_touching(x0, x1, motion, edges[a[meet]], edges[b[meet]], tol))
        return np.concatenate(groups) if groups else np.zeros((0, 4), dtype=np.int64)


def _path_spheres(both, features):
    """(centres (k, 3), radii (k,)): bounding spheres of the features (k, m) vertex ids at both
    ends of a substep; both: (2 n, 3), row 2 i the start of vertex i, row 2 i + 1 its end."""
    if len(features) == 0:
        return np.zeros((0, 3)), np.zeros(0)
    return spheres(both, (2 * features[:, :, None] + np.arange(2)).reshape(len(features), -1))
