"""A mesh collider's response to its vertex contacts: crossings undone, then proximity, with friction.

Continuous check: the signed distance of the particle to each candidate triangle's plane at the
start (collider where the substep's sweep starts) and at the end (collider now). A sign change
whose interpolated crossing point lies inside the triangle is a crossing; the earliest one counts
and the particle goes back to the side it came from, along that triangle's normal to `reach` off
its plane. Exact for translating colliders, first-order for rotating or deforming ones. Closed
parts only stop particles entering from outside, and only those that came out again or are
nearest a face turned away from the one they entered (past the middle of a thin part): the others
proximity pushes out through the nearest surface, so that cloth a fast body sweeps into slides
round it.

Proximity: the exact closest point (narrow_phase.py). On a closed part (every edge shared by two
triangles) the side is decided by the angle-weighted pseudo-normal of the closest feature
(Baerentzen & Aanaes 2005), which is exact for closed manifolds; inside points go out. On an open
part the particle keeps its side (crossings were undone first): a plane or a shelf collides from
both faces. Particles closer than reach go to distance reach. Friction as in friction.py, on the
motion relative to the collider's surface there.
"""

import numpy as np

from ... import geometry
from ..friction import apply_friction

# Barycentric slack of the crossing test, so a path through a shared edge hits one of the two.
_CROSS_SLACK = 1e-7


class VertexResponse:
    """The response of a surface.Surface; narrow: its NarrowPhase; broad: its MeshBroadPhase."""

    def __init__(self, surface, narrow, broad):
        self.surface = surface
        self.narrow = narrow
        self.broad = broad

    def crossings(self, p, p0, rows, tri, plane, before, reach, mu, motion):
        """Undo crossings of the surface during the step (particle and collider both moving).

        plane: (m, 3) _plane_coordinates of p[rows]. Returns the rows it moved."""
        pairs = rows, tri, plane
        h1 = plane[:, 0]
        if motion is None:
            h0 = (np.einsum("ij,ij->i", np.take(p0, rows, axis=0), np.take(self.surface.normal, tri, axis=0))
                  - np.take(self.surface.offset, tri))
        else:
            n1 = self.surface.normal[tri]
            n0 = geometry.triangle_normals(before, self.surface.triangles)[tri]
            if np.any(self.surface.closed):
                # The closed part's orientation was fixed on the current geometry; follow it at the start.
                flip = np.einsum("ij,ij->i", n0, n1) < 0.0
                n0[flip] *= -1.0
            h0 = np.einsum("ij,ij->i", p0[rows] - before[self.surface.triangles[tri, 0]], n0)
        above = h0 > 0.0
        crossing = above != (h1 > 0.0)
        crossing &= above | ~np.take(self.surface.closed, tri)  # closed parts: only entering from outside
        crossing = np.flatnonzero(crossing)
        if len(crossing) == 0:
            return rows[:0]
        rows, tri, h0, h1, plane = rows[crossing], tri[crossing], h0[crossing], h1[crossing], plane[crossing]
        t = h0 / (h0 - h1)
        if motion is None:
            # plane coordinates are affine in the point: those of the crossing point directly
            start = self.narrow.plane_coordinates(p0, rows, tri)
            v, w = (start[:, k] + t * (plane[:, k] - start[:, k]) for k in (1, 2))
            hit = (v >= -_CROSS_SLACK) & (w >= -_CROSS_SLACK) & (1.0 - v - w >= -_CROSS_SLACK)
        else:
            at = t[:, None]
            tris = self.surface.triangles[tri]
            start, end = before[tris], self.surface.vertices[tris]  # (k, 3 corners, 3)
            corners = [start[:, k] + at * (end[:, k] - start[:, k]) for k in range(3)]
            x = p0[rows] + at * (p[rows] - p0[rows])
            hit = geometry.row_all(geometry.barycentric(x, *corners) >= -_CROSS_SLACK)
        if not np.any(hit):
            return rows[:0]
        rows, tri, t, h0, plane = rows[hit], tri[hit], t[hit], h0[hit], plane[hit]
        order = np.lexsort((t, rows))
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]  # the earliest, rows ascending
        rows, tri, h0, plane = rows[first], tri[first], h0[first], plane[first]
        sign = np.where(h0 >= 0.0, 1.0, -1.0)
        keep = self.to_undo(p, pairs, rows, tri, sign)
        rows, tri, sign, plane = rows[keep], tri[keep], sign[keep], plane[keep]
        if len(rows) == 0:
            return rows
        side = sign[:, None] * self.surface.normal[tri]
        _, q, _, _, _, bary = self.narrow.nearest(p, rows, tri, plane)
        # On a closed part, back out along the crossed triangle's normal from where the particle
        # ended, not to the triangle's nearest point: a particle that slid past the triangle's
        # edge while it crossed (cloth sweeping round a fast ball) keeps that slide. Pinned to the
        # triangle it entered, it could slide at most one triangle a substep, and a ball faster
        # than that dragged the cloth along until it tore (proximity then puts it on the nearest
        # surface). On an open part that slide could carry it past another face (behind the wall
        # of a floor-and-wall corner), which proximity would then keep: there it goes back to
        # the crossed triangle's nearest point.
        closed = self.surface.closed[tri]
        depth = np.where(closed, reach - sign * plane[:, 0], reach - np.einsum("ij,ij->i", p[rows] - q, side))
        p[rows] = np.where(closed[:, None], p[rows] + depth[:, None] * side, q + side * reach)
        self.friction(p, p0, rows, tri, bary, side, depth, mu, motion)
        return rows

    def to_undo(self, p, pairs, rows, tri, sign):
        """(k,) bool: which crossings (particle rows ascending, triangle tri, side sign of
        _crossings) need undoing: all on open parts; on a closed part only those whose particle
        ended outside it (it passed through) or inside it but nearest to a face turned away from
        the one it entered (past the middle of a thin part). The others proximity pushes out
        through the nearest surface, which lets cloth slide round a body that sweeps into it
        instead of holding each particle to the one triangle it entered. pairs: every candidate
        (rows, tri, plane) of the call."""
        keep = np.ones(len(rows), dtype=bool)
        closed = np.flatnonzero(self.surface.closed[tri])
        if len(closed) == 0:
            return keep
        wanted = np.zeros(len(p), dtype=bool)
        wanted[rows[closed]] = True
        of = np.flatnonzero(wanted[pairs[0]])
        # the entered triangle is among the pairs (it was crossed within the step), so the
        # nearest pair is the nearest triangle of all
        sel, q, _, t, region, _ = self.narrow.nearest(p, pairs[0][of], pairs[1][of], pairs[2][of])
        normal = self.surface.pseudo_normal(t, region)
        at = np.searchsorted(rows, sel)  # rows ascend, and sel is a subset of them
        inside = self.surface.closed[t] & (np.einsum("ij,ij->i", p[sel] - q, normal) < 0.0)
        facing = sign[at] * np.einsum("ij,ij->i", normal, self.surface.normal[tri[at]]) > 0.0
        keep[at[inside & facing]] = False
        return keep

    def proximity(self, p, p0, rows, tri, plane, covered, reach, mu, motion):
        """Push particles within reach of the surface (or inside a closed part) out to reach.

        plane: (m, 3) _plane_coordinates of p[rows]; covered: (k,) m, the pairs hold every triangle
        this close to each of p. Returns (nearest, footing): nearest (rows into p (j,), closest
        points q (j, 3), triangles, regions, barycentric coordinates), or None once friction has
        moved the particles along the surface; footing (rows (j,), q (j, 3)): points on the
        surface, whatever friction did."""
        sel, q, d, t, reg, bary = self.narrow.nearest(p, rows, tri, plane)
        normal = self.surface.pseudo_normal(t, reg)
        offset = np.take(p, sel, axis=0) - q
        signed = np.einsum("ij,ij->i", offset, normal)
        inside = self.surface.closed[t] & (signed < 0.0)
        deep = np.flatnonzero(inside & (d > np.take(covered, sel)))
        if len(deep):
            # deeper inside than the pairs reach: the nearest triangle may be none of them
            at = p[sel[deep]]
            found = self.narrow.nearest(at, *self.broad.deep_pairs(at))
            _, q[deep], d[deep], t[deep], reg[deep], bary[deep] = found
            normal[deep] = self.surface.pseudo_normal(t[deep], reg[deep])
            offset[deep] = at - q[deep]
            outward = np.einsum("ij,ij->i", offset[deep], normal[deep])
            inside[deep] = self.surface.closed[t[deep]] & (outward < 0.0)
        hit = inside | (d < reach)
        nearest = (sel, q, t, reg, bary)
        footing = (sel, q)
        if not np.any(hit):
            return nearest, footing
        tiny = d <= 1e-12 * max(reach, 1e-3)
        direction = offset / np.where(tiny, 1.0, d)[:, None]
        direction[inside] *= -1.0
        # On the surface itself the offset has no direction: use the feature's pseudo-normal,
        # turned (open parts) towards the side the particle came from.
        if np.any(tiny):
            pn = normal[tiny] / np.maximum(np.linalg.norm(normal[tiny], axis=1), 1e-300)[:, None]
            came = np.einsum("ij,ij->i", p0[sel[tiny]] - q[tiny], pn) < 0.0
            pn[came & ~self.surface.closed[t[tiny]]] *= -1.0
            direction[tiny] = pn
        out = q + direction * reach
        hit = np.flatnonzero(hit)  # (all of them, for a cloth lying on the mesh)
        if len(hit) < len(sel):
            sel, out = sel[hit], out[hit]
        p[sel] = out
        if mu and mu > 0.0:
            t, bary, direction, d, inside = (a[hit] for a in (t, bary, direction, d, inside))
            self.friction(p, p0, sel, t, bary, direction, np.where(inside, reach + d, reach - d), mu, motion)
            return None, footing  # friction moved them along the surface: their closest points changed
        return nearest, footing

    def friction(self, p, p0, rows, tri, bary, normal, depth, mu, motion):
        """Friction on the motion relative to the collider's surface at the contact point."""
        if not mu or mu <= 0.0:
            return
        start = p0[rows]
        if motion is not None:
            start = start + np.einsum("ij,ijk->ik", bary, motion[self.surface.triangles[tri]])
        moved = p[rows]
        apply_friction(moved, start, np.ones(len(rows), dtype=bool), normal, depth, mu)
        p[rows] = moved

