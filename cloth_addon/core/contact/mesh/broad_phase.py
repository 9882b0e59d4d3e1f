"""A mesh collider's broad phase: the triangles each particle may come near in a substep.

A particle is tested against every triangle that may come within 2 reach + |step| of where it ends
(reach = thickness + margin, step: the particle's motion), over the collider's sweep: every
triangle its path could cross and every triangle near where the response puts it. The pairs come
from what `remember_near` found (once a substep, from the contact stage) where that covers the
query, else they are looked up for the particles it does not cover: small meshes test every
pair's plane and bounding box at once, larger ones first take the triangles whose centroid lies
within R + that distance + shift (a k-d tree; R: largest centroid-to-corner distance, shift: the
collider's largest vertex motion); then a lower bound of the distance (standing still) or the
swept bounding box (moving) keeps the near ones. Particles deep inside a closed part also get
every triangle that can hold their closest point.
"""

import numpy as np

from ... import geometry

# Meshes of up to this many triangles are paired with particles by testing every pair (one array
# operation); larger ones through the centroid tree first. A box's few triangles are so large that
# the tree would pair nearly every particle with all of them anyway.
_DENSE_TRIANGLES = 64

# remember_near looks this much further than asked, so that the next substeps of a cloth that
# moves little can keep what it found.
_SPARE = 1.25


class MeshBroadPhase:
    """Candidate (particle, triangle) pairs of a surface.Surface; narrow: its NarrowPhase."""

    def __init__(self, surface, narrow):
        self.surface = surface
        self.narrow = narrow
        self.cache = None  # what remember_near found

    def remember_near(self, positions, radius, movable, before) -> None:
        """Remember the triangles near each particle, so that later `project` and `contact_normals`
        calls test only those while the collider stays where it is now.

        positions: (n, 3) m; radius: scalar or (n,) m, how far around each particle to look;
        movable: (n,) bool; before: (v, 3) where the collider was (the triangles are taken over
        their sweep from there to now). A later call still checks every particle: one whose
        query reaches beyond what was remembered is looked up afresh. Keeps what an earlier call
        remembered when that covers this one."""
        self.surface.refresh()
        radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), len(positions))
        if len(positions) and self.surface.apart(float(radius.max()) * _SPARE, before, positions):
            return  # nothing near: a projection that finds a particle near the mesh looks it up
        cache = self.cache
        if self.cached(before, len(positions)) and cache[1] is before:
            gap = positions - cache[2]
            if np.all(np.sqrt(np.einsum("ij,ij->i", gap, gap)) + radius <= cache[3], where=movable):
                return  # what is remembered already covers it (a cloth at rest on a still mesh)
        positions = np.array(positions, dtype=np.float64)
        limit = np.where(movable, radius * _SPARE, -np.inf)
        idx = np.flatnonzero(movable)
        rows, tri = self.near(positions[idx], limit[idx], before)
        has = np.zeros(len(positions), dtype=bool)
        has[idx[rows]] = True
        ids = np.flatnonzero(has)
        rank = np.cumsum(has) - 1
        # the pairs' triangle data, gathered once for the calls that use every remembered pair
        per_pair = (np.take(self.surface.frame, tri, axis=0), np.take(self.surface.frame_offset, tri, axis=0),
                    np.take(self.surface.altitude, tri, axis=0))
        self.cache = (self.surface.vertices, before, positions, limit, has, ids, rank[idx[rows]], tri,
                      self.inside(positions, movable & ~has))
        self.surface.prepared = (tri, *per_pair)

    def select(self, points, movable, need, before):
        """Candidate pairs: (particle ids (k,), rows (m,) into them, triangles (m,)) with every
        triangle (swept from `before` to now) within `need` (scalar or (n,), m) of each movable
        point of points (n, 3), and for a point deep inside a closed part the triangles that can
        hold its closest point. From the `prepare` cache where it covers the query."""
        if not self.cached(before, len(points)):
            return self.lookup(points, np.flatnonzero(movable), need, before)
        _, _, centre, limit, has, ids, rows, tri, inside = self.cache
        gap = points - centre
        fresh = movable & (np.sqrt(np.einsum("ij,ij->i", gap, gap)) + need > limit)
        # A particle with no triangle within its limit stays on the side it was on while it stays
        # within the limit: only those that were inside a closed part need the deep search.
        fresh |= movable & inside
        keep = np.take(movable & ~fresh, ids)
        if not np.all(keep):
            pair = keep[rows]
            rows, tri = (np.cumsum(keep) - 1)[rows[pair]], tri[pair]
            ids = ids[keep]
        more = np.flatnonzero(fresh)
        if len(more) == 0:
            return ids, rows, tri
        more, more_rows, more_tri = self.lookup(points, more, need, before)
        return (np.concatenate([ids, more]), np.concatenate([rows, more_rows + len(ids)]),
                np.concatenate([tri, more_tri]))

    def inside(self, points, which):
        """(n,) bool: which of points (n, 3) (those in the mask `which`) are inside a closed part."""
        inside = np.zeros(len(points), dtype=bool)
        if self.surface.closed_box is None:
            return inside
        low, high = self.surface.closed_box
        at = np.flatnonzero(which & geometry.row_all((points >= low) & (points <= high)))
        if len(at):
            points = points[at]
            sel, q, _, t, region, _ = self.narrow.nearest(points, *self.deep_pairs(points))
            signed = np.einsum("ij,ij->i", points[sel] - q, self.surface.pseudo_normal(t, region))
            inside[at[sel[self.surface.closed[t] & (signed < 0.0)]]] = True
        return inside

    def cached(self, before, count):
        """Whether the prepare cache is for this geometry (swept from `before`) and `count` particles."""
        cache = self.cache
        # (a cache over the sweep also holds every triangle near the collider where it is now)
        return (cache is not None and cache[0] is self.surface.vertices and len(cache[2]) == count
                and (cache[1] is before or before is self.surface.vertices))

    def lookup(self, points, ids, need, before):
        """_select without the cache, for the particles `ids` (k,) only."""
        p = points[ids]
        rows, tri = self.near(p, np.broadcast_to(need, len(points))[ids], before)
        rows, tri = self.add_deep(p, rows, tri)
        used = np.zeros(len(ids), dtype=bool)
        used[rows] = True
        return ids[used], (np.cumsum(used) - 1)[rows], tri

    def near(self, points, radius, before):
        """(rows, triangles) int64: the pairs of points (k, 3) and triangles that may
        come within radius (k,) of the point: over the sweep from `before` to now, the triangle's
        bounding box does; standing still, a lower bound of the distance (_outside) does."""
        still = before is self.surface.vertices
        if still:
            lo, hi = self.surface.lo, self.surface.hi
        else:
            start = before[self.surface.triangles]
            lo = np.minimum(self.surface.lo, start.min(axis=1))
            hi = np.maximum(self.surface.hi, start.max(axis=1))
        reach = radius[:, None]
        near = (points + reach >= geometry.bounds(lo)[0]) & (points - reach <= geometry.bounds(hi)[1])
        rows = np.flatnonzero(geometry.row_all(near))
        p, radius = points[rows], radius[rows]
        count = len(self.surface.triangles)
        if count <= _DENSE_TRIANGLES:
            if still:
                height = p @ self.surface.normal.T - self.surface.offset
                pr, tri = np.nonzero(np.abs(height) <= radius[:, None])
            else:
                pr, tri = np.repeat(np.arange(len(p)), count), np.tile(np.arange(count), len(p))
        else:
            shift = 0.0 if still else float(geometry.vector_lengths(self.surface.vertices - before).max())
            pr, tri = self.surface.pairs(p, self.surface.radius + radius + shift)
        if still:
            plane = self.narrow.plane_coordinates(p, pr, tri)
            bound = plane[:, 0] ** 2 + np.maximum(self.narrow.outside(plane, tri), 0.0) ** 2
            keep = ~(bound > radius[pr] ** 2)  # zero-area triangles (NaN) stay
        else:
            q = p[pr]
            gap = np.maximum(lo[tri] - q, 0.0) + np.maximum(q - hi[tri], 0.0)
            keep = np.einsum("ij,ij->i", gap, gap) <= radius[pr] ** 2
        return rows[pr[keep]], tri[keep]

    def add_deep(self, p, rows, tri):
        """Pairs for particles deep inside a closed part (beyond the band the broad phase sees):
        the triangles that can hold their exact closest point, so that they are pushed out too."""
        if not np.any(self.surface.closed):
            return rows, tri
        lonely = np.ones(len(p), dtype=bool)
        lonely[rows] = False
        lonely &= geometry.row_all((p >= self.surface.closed_box[0]) & (p <= self.surface.closed_box[1]))
        if not np.any(lonely):
            return rows, tri
        which = np.flatnonzero(lonely)
        more_rows, more_tri = self.deep_pairs(p[which])
        return np.concatenate([rows, which[more_rows]]), np.concatenate([tri, more_tri])

    def deep_pairs(self, points):
        """(rows, triangles): for each of points (k, 3), every triangle that can hold its closest point."""
        # The closest triangle's centroid is at most (distance to the nearest centroid) + R away.
        nearest, _ = self.surface.tree.query(points, k=1)
        return self.surface.pairs(points, nearest + self.surface.radius * (1.0 + 1e-9))

