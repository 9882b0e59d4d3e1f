"""A mesh collider's narrow phase: the exact closest points of particles and candidate triangles.

A pair's plane coordinates (height over the triangle's plane, barycentrics of the foot) give the
exact distance where the foot is inside the triangle, and a lower bound elsewhere (`lower_bound`):
only pairs whose bound beats the particle's best are tested further (particles beside an edge or a
corner), from the same plane coordinates. A particle with no pair of the first kind (above a
convex edge or corner of a finely meshed body: 40 pairs or more) first has its pair of least
bound tested, whose distance then prunes the rest.
"""

import numpy as np

from .. import distance
from .surface import DENSE_TRIANGLES

# _closest_outside's three edges AB, AC, BC: their regions, their end vertices' regions, and the
# corners (0 = A, 1 = B, 2 = C) that take weights 1 - r and r at the edge parameter r
_EDGE_REGION = np.array([distance.EDGE_AB, distance.EDGE_CA, distance.EDGE_BC], dtype=np.int8)
_EDGE_ENDS = np.array([[distance.VERTEX_A, distance.VERTEX_B], [distance.VERTEX_A, distance.VERTEX_C],
                       [distance.VERTEX_B, distance.VERTEX_C]], dtype=np.int8)
_EDGE_CORNERS = np.array([[0, 1], [0, 2], [1, 2]])
# A pair is left untested when its lower bound exceeds the best distance found by this factor
# (squared distances): rounding must never drop a pair that would win.
_MARGIN = 1.0 + 1e-9


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
        full, q_full, bary_full, region_full = self._beside(points, rows, tri, plane, outside, dist, best)
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

    def _beside(self, points, rows, tri, plane, outside, dist, best):
        """nearest's pairs whose foot lies outside their triangle and that may beat their point's
        best (m, so far the face pairs', updated in place like dist): (pairs tested (k,),
        ascending, and their q (k, 3), bary (k, 3), region (k,))."""
        height = plane[:, 0]
        best_pair = np.take(best, rows) ** 2
        full = ~(outside <= 0.0) & ~(height * height + np.maximum(outside, 0.0) ** 2 >= best_pair)
        first = full[:0]
        if len(self.surface.triangles) > DENSE_TRIANGLES:
            # The disc's bound prunes only beyond a relative margin: a pair that rounding puts level
            # with the best (at an edge or corner two triangles share) is tested, and the first of
            # equal distances wins, as without it.
            bound = self.lower_bound(plane, tri, outside)
            full &= ~(bound >= _MARGIN * best_pair)
            first = _least_per_row(rows, bound, np.flatnonzero(full & ~np.isfinite(best_pair)))
        full = np.flatnonzero(full)
        if len(first):
            # their distances bound those points' best from above: the rest must beat it
            tested = self.closest_outside(points, rows[first], tri[first], np.take(plane, first, axis=0))
            dist[first] = tested[3]
            np.minimum.at(best, rows[first], tested[3])
            full = full[~(bound[full] >= _MARGIN * np.take(best, rows[full]) ** 2) & (dist[full] == np.inf)]
        found = None
        if len(full):
            *found, dist[full] = self.closest_outside(points, rows[full], tri[full],
                                                      np.take(plane, full, axis=0))
            np.minimum.at(best, rows[full], dist[full])
        if len(first) == 0:
            return (full, *(found or (None, None, None)))
        # one ascending list of the tested pairs
        both = np.concatenate([first, full])
        order = np.argsort(both)
        parts = tested[:3] if found is None else (np.concatenate(pair) for pair in zip(tested[:3], found,
                                                                                      strict=True))
        return (both[order], *(a[order] for a in parts))

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

    def lower_bound(self, plane, tri, outside=None):
        """(m,) m^2: a lower bound of each pair's squared distance from its plane coordinates (m, 3):
        the height squared plus the larger of how far the foot lies beyond the triangle's edge lines
        (`outside`, if known) and beyond the disc round its centroid through its farthest corner.
        On a finely meshed curved body the first alone stays below the exact distance for every
        triangle near a point (their planes turn with the surface); the disc drops all but the
        nearest ring. A coarse mesh (DENSE_TRIANGLES or fewer) takes the first alone: its triangles are
        too large for the disc to prune anything."""
        if outside is None:
            outside = self.outside(plane, tri)
        if len(self.surface.triangles) <= DENSE_TRIANGLES:
            return plane[:, 0] ** 2 + np.maximum(outside, 0.0) ** 2
        g00, g01, g11 = (np.take(g, tri) for g in self.surface.gram)
        # the foot's offset from the centroid, (v - 1/3) ab + (w - 1/3) ac, its length squared
        ov, ow = plane[:, 1] - 1.0 / 3.0, plane[:, 2] - 1.0 / 3.0
        offset = ov * ov * g00
        offset += 2.0 * ov * ow * g01
        offset += ow * ow * g11
        beyond = np.sqrt(np.maximum(offset, 0.0)) - np.take(self.surface.extent, tri)
        beyond = np.maximum(np.maximum(beyond, outside), 0.0)
        return plane[:, 0] ** 2 + beyond * beyond

    def outside(self, plane, tri):
        """(m,) how far the foot of each pair's point on its triangle's plane lies outside the
        triangle, at least (distance to the farthest edge line it is beyond; <= 0 inside)."""
        v, w = plane[:, 1], plane[:, 2]
        alt = np.take(self.surface.altitude, tri, axis=0)
        return np.maximum(np.maximum((v + w - 1.0) * alt[:, 0], -v * alt[:, 1]), -w * alt[:, 2])



def _least_per_row(rows, bound, pairs):
    """(k,) int64, ascending: of the pairs (ascending indices into rows and bound), each row's one
    of least bound (the first of equal ones)."""
    if len(pairs) == 0:
        return pairs
    row, value = rows[pairs], bound[pairs]
    low = np.full(int(row.max()) + 1, np.inf)
    np.minimum.at(low, row, value)
    level = np.flatnonzero(value == low[row])
    first = np.full(len(low), len(bound))
    np.minimum.at(first, row[level], pairs[level])
    return np.sort(first[first < len(bound)])
