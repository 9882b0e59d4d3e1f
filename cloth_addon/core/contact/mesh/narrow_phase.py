"""A mesh collider's narrow phase: the exact closest points of particles and candidate triangles.

A pair's plane coordinates (height over the triangle's plane, barycentrics of the foot) give the
exact distance where the foot is inside the triangle, and a lower bound elsewhere: only pairs whose
bound beats the particle's best are tested further (particles beside an edge or a corner), from
the same plane coordinates.
"""

import numpy as np

from .. import distance

# _closest_outside's three edges AB, AC, BC: their regions, their end vertices' regions, and the
# corners (0 = A, 1 = B, 2 = C) that take weights 1 - r and r at the edge parameter r
_EDGE_REGION = np.array([distance.EDGE_AB, distance.EDGE_CA, distance.EDGE_BC], dtype=np.int8)
_EDGE_ENDS = np.array([[distance.VERTEX_A, distance.VERTEX_B], [distance.VERTEX_A, distance.VERTEX_C],
                       [distance.VERTEX_B, distance.VERTEX_C]], dtype=np.int8)
_EDGE_CORNERS = np.array([[0, 1], [0, 2], [1, 2]])


class NarrowPhase:
    """Closest-point queries on a surface.Surface."""

    def __init__(self, surface):
        self.surface = surface

    def closest(self, points, max_distance=np.inf):
        """Closest surface point to each of points (k, 3), m.

        Returns (closest (k, 3), distance (k,), inside (k,) bool: in a closed part, triangle (k,)
        int); rows with nothing within max_distance have distance inf and triangle -1.
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        self.surface.refresh()
        if np.isfinite(max_distance):
            rows, tri = self.surface.pairs(points, float(max_distance))
        else:
            rows = np.repeat(np.arange(len(points)), len(self.surface.triangles))
            tri = np.tile(np.arange(len(self.surface.triangles)), len(points))
        k = len(points)
        closest = np.full((k, 3), np.nan)
        distance = np.full(k, np.inf)
        inside = np.zeros(k, dtype=bool)
        triangle = np.full(k, -1, dtype=np.int64)
        if len(rows) == 0:
            return closest, distance, inside, triangle
        sel, q, d, t, reg, _ = self.nearest(points, rows, tri)
        keep = d <= max_distance
        sel, q, d, t, reg = sel[keep], q[keep], d[keep], t[keep], reg[keep]
        closest[sel], distance[sel], triangle[sel] = q, d, t
        normal = self.surface.pseudo_normal(t, reg)
        inside[sel] = self.surface.closed[t] & (np.einsum("ij,ij->i", points[sel] - q, normal) < 0.0)
        return closest, distance, inside, triangle

    def plane_coordinates(self, points, rows, tri):
        """(m, 3) height of points[rows] over the planes of triangles tri, and its barycentric v, w."""
        # np.take: a fraction of the cost of fancy indexing on these small arrays
        frame = np.take(self.surface.frame, tri, axis=0)
        offset = np.take(self.surface.frame_offset, tri, axis=0)
        return np.einsum("ij,ikj->ik", np.take(points, rows, axis=0), frame) - offset

    def nearest(self, points, rows, tri, plane=None):
        """Per point that has pairs, its nearest pair: (rows (ascending), q, distance, triangle,
        region, bary). plane: the pairs' _plane_coordinates, if known."""
        if plane is None:
            plane = self.plane_coordinates(points, rows, tri)
        height = plane[:, 0]
        # Where the foot on the plane is inside the triangle the height is the exact distance; only
        # pairs whose lower bound beats every such distance of their point need the full
        # closest-point test (mostly points beside an edge or a corner).
        outside = self.outside(plane, tri)
        face = outside <= 0.0
        dist = np.where(face, np.abs(height), np.inf)
        best = np.full(len(points), np.inf)
        np.minimum.at(best, rows, dist)
        bound = height * height + np.maximum(outside, 0.0) ** 2
        full = np.flatnonzero(~face & ~(bound >= np.take(best, rows) ** 2))
        if len(full):
            q_full, bary_full, region_full, dist[full] = self.closest_outside(points, rows[full], tri[full],
                                                                               np.take(plane, full, axis=0))
            np.minimum.at(best, rows[full], dist[full])
        # the first pair of each point at its least distance
        equal = np.flatnonzero(dist == np.take(best, rows))
        win = np.full(len(points), len(rows))
        np.minimum.at(win, rows[equal], equal)
        sel = np.flatnonzero(win < len(rows))
        win = win[sel]
        t, d, height, plane = tri[win], dist[win], height[win], np.take(plane, win, axis=0)
        q = np.take(points, sel, axis=0) - height[:, None] * np.take(self.surface.normal, t, axis=0)
        bary = np.stack([1.0 - plane[:, 1] - plane[:, 2], plane[:, 1], plane[:, 2]], axis=1)
        region = np.full(len(win), distance.FACE, dtype=np.int8)
        if len(full):
            where = np.minimum(np.searchsorted(full, win), len(full) - 1)
            exact = np.flatnonzero(full[where] == win)
            where = where[exact]
            q[exact], bary[exact], region[exact] = q_full[where], bary_full[where], region_full[where]
        return sel, q, d, t, region, bary

    def closest_outside(self, points, rows, tri, plane):
        """Closest points of triangles tri to points[rows] whose foot on the triangle's plane lies
        outside it: (q (k, 3), bary (k, 3), region (k,) int8, distance (k,)).

        The closest point is then on an edge, found from the plane coordinates (h, v, w): with
        p - a = h n + v ab + w ac, each edge's parameter and the in-plane distance to it are
        scalar expressions in v, w and the triangle's Gram entries |ab|^2, ab.ac, |ac|^2 (a few
        passes over (k,) arrays instead of Ericson's region tests on (k, 3) ones). Zero-area
        triangles (no plane coordinates) take distance.closest_points."""
        at = np.take(points, rows, axis=0)
        corners = self.surface.vertices[self.surface.triangles[tri]]
        h, v, w = plane[:, 0], plane[:, 1], plane[:, 2]
        g00, g01, g11 = (np.take(g, tri) for g in self.surface.gram)
        # edges as (start weights, direction weights) in (ab, ac): a + r ab, a + r ac, b + r (ac - ab)
        best = np.full(len(rows), np.inf)
        param = np.zeros(len(rows))
        edge = np.zeros(len(rows), dtype=np.int8)
        with np.errstate(divide="ignore", invalid="ignore"):
            for k, (sv, sw, dv, dw) in enumerate(((0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                                                   (1.0, 0.0, -1.0, 1.0))):
                ov, ow = v - sv, w - sw  # p - start in (ab, ac), its in-plane part
                along = (ov * dv * g00 + (ov * dw + ow * dv) * g01 + ow * dw * g11)
                length = dv * dv * g00 + 2.0 * dv * dw * g01 + dw * dw * g11
                r = np.clip(along / length, 0.0, 1.0)
                ev, ew = ov - r * dv, ow - r * dw
                gap = ev * ev * g00 + 2.0 * ev * ew * g01 + ew * ew * g11
                closer = gap < best
                best[closer], param[closer], edge[closer] = gap[closer], r[closer], k
        bary = np.zeros((len(rows), 3))
        index = np.arange(len(rows))
        bary[index, _EDGE_CORNERS[edge, 0]] = 1.0 - param
        bary[index, _EDGE_CORNERS[edge, 1]] = param
        region = _EDGE_REGION[edge]
        at_start, at_end = param <= 0.0, param >= 1.0
        region[at_start] = _EDGE_ENDS[edge[at_start], 0]
        region[at_end] = _EDGE_ENDS[edge[at_end], 1]
        q = bary[:, :1] * corners[:, 0] + bary[:, 1:2] * corners[:, 1] + bary[:, 2:] * corners[:, 2]
        dist = np.sqrt(h * h + np.maximum(best, 0.0))
        flat = np.flatnonzero(~np.isfinite(dist))
        if len(flat):
            q[flat], bary[flat], region[flat] = distance.closest_points(at[flat],
                                                                        *(corners[flat, k] for k in range(3)))
            gap = at[flat] - q[flat]
            dist[flat] = np.sqrt(np.einsum("ij,ij->i", gap, gap))
        return q, bary, region, dist

    def outside(self, plane, tri):
        """(m,) how far the foot of each pair's point on its triangle's plane lies outside the
        triangle, at least (distance to the farthest edge line it is beyond; <= 0 inside)."""
        v, w = plane[:, 1], plane[:, 2]
        alt = np.take(self.surface.altitude, tri, axis=0)
        return np.maximum(np.maximum((v + w - 1.0) * alt[:, 0], -v * alt[:, 1]), -w * alt[:, 2])

