"""A mesh collider's broad phase: the triangles each particle may come near in a substep.

A particle is tested against every triangle that may come within 2 reach + |step| of where it ends
(reach = thickness + margin, step: the particle's motion), over the collider's sweep: every
triangle its path could cross and every triangle near where the response puts it. The pairs come
from what `remember_near` found (once a substep, from the contact stage) where that covers the
query, else they are looked up for the particles it does not cover: small meshes test every
pair's plane and bounding box at once, larger ones first take the triangles whose centroid lies
within that distance + shift + the triangle's radius (k-d trees of the triangles grouped by size;
shift: the collider's largest vertex motion); then a lower bound of the distance (standing still)
or the swept bounding box (moving) keeps the near ones. Particles deep inside a closed part also
get every triangle that can hold their closest point.

What `remember_near` finds reaches beyond any one projection's query (the whole substep's motion,
and a spare for the next substeps); each remembered pair keeps that lower bound of its distance,
so a projection takes only the pairs whose bound, less how far the particle has moved since, is
within its query (one scalar test per pair before any geometry), and a substep that reuses what
an earlier one remembered first keeps only the pairs within its own reach. The solver's
projections ask for less still (`least`): the triangles within the particle's step (the ones its
path may cross) and its nearest one (bounded by the nearest centroid from where it was
remembered, or by the closest point the last projection found on the surface as it is now: on a
finely meshed body the second is the tighter, and fewer triangles pass); only a particle whose
crossing was undone needs every triangle within step + 2 reach. The narrow phase's work follows
the particles' present need, not the remembered reach.

What is remembered is kept up, not rebuilt: when a substep's query reaches beyond it for some
particles (a cloth sliding over a body), only those are looked up again (`renew`), while they are
few. Whether a particle is inside a closed part holds in the ball round it out to the surface,
so a particle still in the ball of its last answer is not searched again (`inside`).
"""

import numpy as np

from ... import geometry
from .surface import DENSE_TRIANGLES

# remember_near looks this much further than asked, so that the next substeps of a cloth that
# moves little can keep what it found.
_SPARE = 1.25

# remember_near looks up afresh only the particles whose query reaches beyond what it remembered
# for them, while they are at most this share of the movable ones (else it starts over).
_RENEW_SHARE = 0.5
_RENEW_SPARE = 1.1


class _Remembered:
    """What remember_near found: geometry, before: the surface's vertices (v, 3) and where its
    sweep started; centre (n, 3) m: the particles when it looked; limit (n,) m: how far it looked
    (-inf: not at all); ids (k,): the particles with pairs; rows (m,) into ids, tri (m,), low (m,)
    m: the pairs and a lower bound of their distance from the centre over the sweep; above (n,) m:
    an upper bound of the distance to the surface now from anchor (n, 3) (the centres, or where
    the particles were when `renew` last looked; inf where a particle has no pairs); inside
    (n,) bool: which particles are inside a closed part at the centre, known where checked (n,) is."""

    def __init__(self, geometry, before, centre, limit, ids, rows, tri, low, above, anchor=None):
        self.geometry, self.before, self.centre, self.limit = geometry, before, centre, limit
        self.ids, self.rows, self.tri, self.low, self.above = ids, rows, tri, low, above
        self.anchor = centre if anchor is None else anchor  # (n, 3): where `above` holds
        self.checked = np.ones(len(centre), dtype=bool)
        self.checked[ids] = False
        self.inside = np.zeros(len(centre), dtype=bool)

    def within(self, limit):
        """The same, holding only the pairs that can be within limit (n,) m of the centres (the
        particles keep their rows, and share what is found out about their sides)."""
        keep = np.flatnonzero(self.low <= np.take(np.take(limit, self.ids), self.rows))
        narrow = _Remembered(self.geometry, self.before, self.centre, limit, self.ids, self.rows[keep],
                             self.tri[keep], self.low[keep], self.above, self.anchor)
        narrow.checked, narrow.inside = self.checked, self.inside
        return narrow


class MeshBroadPhase:
    """Candidate (particle, triangle) pairs of a surface.Surface; narrow: its NarrowPhase."""

    def __init__(self, surface, narrow):
        self.surface = surface
        self.narrow = narrow
        self.kept = None  # _Remembered: what remember_near found
        self.cache = None  # the part of it this substep's projections look at
        # (geometry, points (n, 3), distance to the surface (n,), inside (n,)): inside's answers
        self.sides = None
        # (geometry, (n, 3) m): a point on the surface near each particle, inf where none is known
        self.footing = None

    def note_surface_points(self, ids, points, count) -> None:
        """Remember points (k, 3) m on the surface as it is now for the particles ids (k,) of a cloth
        of `count`: a projection's closest points. The distance from a particle to its point bounds
        its distance to the surface from above, however far it has moved since (see select)."""
        footing = self.footing
        if not self._current(footing, count):
            footing = self.footing = (self.surface.vertices, np.full((count, 3), np.inf))
        footing[1][ids] = points

    def above(self, points):
        """(n,) m: an upper bound of the distance from each of points (n, 3), a cloth's particles, to
        the surface as it is now, from note_surface_points (inf where none is known)."""
        footing = self.footing
        if not self._current(footing, len(points)):
            return np.full(len(points), np.inf)
        gap = points - footing[1]
        return np.sqrt(np.einsum("ij,ij->i", gap, gap))

    def _current(self, record, count) -> bool:
        """Whether a per-particle record (geometry, (n, ...) arrays...) is for the surface as it is
        now and a cloth of `count` particles."""
        return record is not None and record[0] is self.surface.vertices and len(record[1]) == count

    def remember_near(self, positions, radius, movable, before, nearest=None) -> None:
        """Remember the triangles near each particle, so that later `project` and `contact_normals`
        calls test only those while the collider stays where it is now.

        positions: (n, 3) m; radius: scalar or (n,) m, how far around each particle to look;
        movable: (n,) bool; before: (v, 3) where the collider was (the triangles are taken over
        their sweep from there to now); nearest: (n,) m or None, each position's distance to its
        nearest centroid where known (inf: not known). A later call still checks every particle:
        one whose query reaches beyond what was remembered is looked up afresh. Keeps what an
        earlier call remembered for the particles it covers."""
        self.surface.refresh()
        radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), len(positions))
        if len(positions) and self.surface.apart(float(radius.max()) * _SPARE, before, positions):
            return  # nothing near: a projection that finds a particle near the mesh looks it up
        kept = self.kept
        positions = np.array(positions, dtype=np.float64)
        if self.cached(before, len(positions)) and kept is not None and kept.before is before:
            gap = positions - kept.centre
            limit = np.sqrt(np.einsum("ij,ij->i", gap, gap)) + radius
            if np.all(limit <= kept.limit, where=movable):
                # what is remembered covers it (a cloth at rest on a still mesh): this substep's
                # projections look only at the pairs within its own radius
                self.cache = kept.within(np.where(movable, limit, -np.inf))
                return
            # those with little spare left too, else the substep's projections look them up
            stale = movable & ~(limit * _RENEW_SPARE <= kept.limit)
            if np.count_nonzero(stale) <= _RENEW_SHARE * np.count_nonzero(movable):
                self.renew(positions, radius, movable, stale, limit, nearest)
                return
        # start over: every movable particle looked up, from nothing remembered
        none = np.zeros(0, dtype=np.int64)
        self.kept = _Remembered(self.surface.vertices, before, positions, np.full(len(positions), -np.inf),
                                none, none, none, np.zeros(0), np.full(len(positions), np.inf))
        self.renew(positions, radius, movable, movable, radius, nearest)

    def renew(self, positions, radius, movable, stale, limit, nearest=None):
        """remember_near for the particles `stale` (n,) bool only, whose query reaches beyond what
        was remembered for them: they are looked up afresh around where they are now, the others
        keep their pairs (limit (n,) m: how far each one's query reaches from its old centre;
        nearest as for remember_near)."""
        kept = self.kept
        idx = np.flatnonzero(stale)
        reach = radius[idx] * _SPARE
        new_rows, new_tri, new_low = self.near(positions[idx], reach, kept.before)
        owner = kept.ids[kept.rows]
        keep = np.flatnonzero(~stale[owner])
        owner = np.concatenate([owner[keep], idx[new_rows]])
        has = np.zeros(len(positions), dtype=bool)
        has[owner] = True
        centre, bound = kept.centre.copy(), kept.limit.copy()
        centre[idx], bound[idx] = positions[idx], reach
        ids = np.flatnonzero(has)
        # every particle's bound of its distance to the surface from where it is now (the nearest
        # centroid is on the surface): one from its old centre would grow with its shift and ask
        # its projections for more
        above = np.full(len(positions), np.inf)
        if nearest is not None:
            above[ids] = nearest[ids]
        ask = ids[np.isinf(above[ids])]
        above[ask] = self.surface.tree.query(positions[ask], k=1)[0]
        tri, low = np.concatenate([kept.tri[keep], new_tri]), np.concatenate([kept.low[keep], new_low])
        renewed = _Remembered(kept.geometry, kept.before, centre, bound, ids, (np.cumsum(has) - 1)[owner],
                              tri, low, above, positions)
        renewed.checked, renewed.inside = kept.checked.copy(), kept.inside.copy()
        renewed.checked[idx], renewed.inside[idx] = ~has[idx], False
        self.kept = renewed
        self.cache = renewed.within(np.where(movable, np.where(stale, radius, limit), -np.inf))
        # A particle with no triangle within its limit stays on the side it was on while it stays
        # within the limit: those inside a closed part need the deep search.
        renewed.inside |= self.inside(positions, stale & ~has)

    def select(self, points, movable, need, before, least=None):
        """Candidate pairs: (particle ids (k,), rows (m,) into them, triangles (m,)) with every
        triangle (swept from `before` to now) within `need` (scalar or (n,), m) of each movable
        point of points (n, 3), and for a point deep inside a closed part the triangles that can
        hold its closest point. From the `prepare` cache where it covers the query.

        least: scalar or (n,) m, or None. Given, a point's pairs from the cache need only hold every
        triangle within `least`, and its nearest triangle where that is within `need`: those
        within need of a point resting on a finely meshed body are many, its nearest few."""
        if not self.cached(before, len(points)):
            return self.lookup(points, np.flatnonzero(movable), need, before)
        cache = self.cache
        ids, rows, tri = cache.ids, cache.rows, cache.tri
        gap = points - cache.centre
        shift = np.sqrt(np.einsum("ij,ij->i", gap, gap))  # (n,) m, from the centre
        if least is not None:
            # the nearest triangle is no farther than the centre's bound and the shift since
            moved = shift
            if cache.anchor is not cache.centre:
                moved = points - cache.anchor
                moved = np.sqrt(np.einsum("ij,ij->i", moved, moved))
            # or than a point on the surface found since (the last projection's closest point): a
            # bound without the distance from a centroid to its triangle's nearest point
            above = np.minimum(cache.above + moved, self.above(points))
            need = np.minimum(need, np.maximum(least, above))
        wanted = movable & (shift + need <= cache.limit) & ~cache.inside
        reach = shift + need  # (n,): from the centre, m
        # a pair farther from the centre than the particle's reach from it is farther than need
        pair = np.take(np.take(wanted, ids), rows) & (cache.low <= np.take(np.take(reach, ids), rows))
        if not np.all(pair):
            used = np.zeros(len(ids), dtype=bool)
            used[rows[pair]] = True
            # A particle left with no pair has none within its reach of the centre, so it is on
            # the side it was on there: those inside a closed part need the deep search.
            self.check_inside(ids[np.take(wanted, ids) & ~used])
            rows, tri = (np.cumsum(used) - 1)[rows[pair]], tri[pair]
            ids = ids[used]
        more = np.flatnonzero(movable & (~wanted | cache.inside))
        if len(more) == 0:
            return ids, rows, tri
        more, more_rows, more_tri = self.lookup(points, more, need, before)
        return (np.concatenate([ids, more]), np.concatenate([rows, more_rows + len(ids)]),
                np.concatenate([tri, more_tri]))

    def check_inside(self, which):
        """Find out, for the particles `which` (k,) whose side is not known yet, whether they were
        inside a closed part at the cache's centre (once per cache)."""
        cache = self.cache
        which = which[~cache.checked[which]]
        if len(which):
            mask = np.zeros(len(cache.centre), dtype=bool)
            mask[which] = True
            cache.inside |= self.inside(cache.centre, mask)
            cache.checked[which] = True

    def inside(self, points, which):
        """(n,) bool: which of points (n, 3) (those in the mask `which`) are inside a closed part.

        Each answer holds in the ball round its point out to the surface (no surface crosses it):
        for the cloth's particles (n of them, on this geometry) a point inside the ball of the
        same particle's last answer takes that answer without a search. A cloth hovering over a
        body, within its bounding box but beyond the candidates' reach, is asked every substep."""
        inside = np.zeros(len(points), dtype=bool)
        if self.surface.closed_box is None:
            return inside
        low, high = self.surface.closed_box
        at = np.flatnonzero(which & geometry.row_all((points >= low) & (points <= high)))
        sides = self.sides
        if sides is not None and not self._current(sides, len(points)):
            sides = self.sides = None
        if sides is not None and len(at):
            gap = points[at] - sides[1][at]
            known = np.einsum("ij,ij->i", gap, gap) < sides[2][at] ** 2
            inside[at[known]] = sides[3][at[known]]
            at = at[~known]
        if len(at):
            p = points[at]
            sel, q, d, t, region, _ = self.narrow.nearest(p, *self.deep_pairs(p))
            signed = np.einsum("ij,ij->i", p[sel] - q, self.surface.pseudo_normal(t, region))
            found = self.surface.closed[t] & (signed < 0.0)
            inside[at[sel[found]]] = True
            if sides is None and len(points) > 1:
                sides = self.sides = (self.surface.vertices, np.zeros_like(points), np.zeros(len(points)),
                                      np.zeros(len(points), dtype=bool))
            if sides is not None:
                sides[1][at[sel]], sides[2][at[sel]], sides[3][at[sel]] = p[sel], d, found
        return inside

    def cached(self, before, count):
        """Whether the prepare cache is for this geometry (swept from `before`) and `count` particles."""
        cache = self.cache
        # (a cache over the sweep also holds every triangle near the collider where it is now)
        return (cache is not None and cache.geometry is self.surface.vertices and len(cache.centre) == count
                and (cache.before is before or before is self.surface.vertices))

    def lookup(self, points, ids, need, before):
        """_select without the cache, for the particles `ids` (k,) only."""
        p = points[ids]
        rows, tri, _ = self.near(p, np.broadcast_to(need, len(points))[ids], before)
        rows, tri = self.add_deep(p, rows, tri)
        used = np.zeros(len(ids), dtype=bool)
        used[rows] = True
        return ids[used], (np.cumsum(used) - 1)[rows], tri

    def near(self, points, radius, before):
        """(rows, triangles) int64 and (m,) m, a lower bound of their distance: the pairs of points
        (k, 3) and triangles that may come within radius (k,) of the point: over the sweep from
        `before` to now, the triangle's bounding box does; standing still, a lower bound of the
        distance (_outside) does."""
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
        if count <= DENSE_TRIANGLES:
            if still:
                height = p @ self.surface.normal.T - self.surface.offset
                pr, tri = np.nonzero(np.abs(height) <= radius[:, None])
            else:
                pr, tri = np.repeat(np.arange(len(p)), count), np.tile(np.arange(count), len(p))
        else:
            shift = 0.0 if still else float(geometry.vector_lengths(self.surface.vertices - before).max())
            pr, tri = self.surface.pairs(p, radius + shift)
        if still:
            plane = self.narrow.plane_coordinates(p, pr, tri)
            bound = self.narrow.lower_bound(plane, tri)
            bound[np.isnan(bound)] = 0.0  # zero-area triangles stay
        else:
            q = p[pr]
            gap = np.maximum(lo[tri] - q, 0.0) + np.maximum(q - hi[tri], 0.0)
            bound = np.einsum("ij,ij->i", gap, gap)
        keep = np.flatnonzero(bound <= radius[pr] ** 2)
        return rows[pr[keep]], tri[keep], np.sqrt(bound[keep])

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
        # The closest point is no farther than the nearest centroid (with a rounding margin).
        nearest, _ = self.surface.tree.query(points, k=1)
        return self.surface.pairs(points, nearest * (1.0 + 1e-9) + 1e-12)

