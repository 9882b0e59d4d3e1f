"""MeshCollider: any triangle mesh (closed or open, convex or not, moving or deforming).

Same `project(positions, previous, movable, margin, friction)` as the analytic colliders
(colliders.py). One call, on the particles the collider may move:

1. Broad phase: a particle is tested against every triangle that may come within
   2 reach + |step| of where it ends (reach = thickness + margin, step: the particle's motion),
   over the collider's sweep. That covers every triangle the particle's path could cross and
   every triangle near where the response puts it. The pairs come from `prepare` (the contact
   stage calls it once a substep) where what it remembered covers the query, else they are looked
   up: small meshes test every pair's plane and bounding box at once, larger ones first take the
   triangles whose centroid lies within R + that distance + shift (a cKDTree; R: largest
   centroid-to-corner distance, shift: the collider's largest vertex motion); then a lower bound
   of the distance (standing still) or the swept bounding box (moving) keeps the near ones.
2. Continuous check: the signed distance of the particle to each candidate triangle's plane at
   the start (collider where the last `project` saw it) and at the end (collider now). A sign
   change whose interpolated crossing point lies inside the triangle is a crossing; the earliest
   one counts and the particle goes back to the side it came from, along that triangle's normal
   to `reach` off its plane. Exact for translating colliders, first-order for rotating or
   deforming ones. Closed parts only stop particles entering from outside, and only those that
   came out again or are nearest a face turned away from the one they entered (past the middle
   of a thin part): the others step 3 pushes out through the nearest surface, so that cloth a
   fast body sweeps into slides round it.
3. Proximity: the exact closest point. A pair's plane coordinates (height over the triangle's
   plane, barycentrics of the foot) give it where the foot is inside the triangle, and a lower
   bound elsewhere: only pairs whose bound beats the particle's best are tested by Ericson's
   regions (particles beside an edge or a corner). On a closed part (every edge shared
   by two triangles) the side is decided by the angle-weighted pseudo-normal of the closest
   feature (Baerentzen & Aanaes 2005), which is exact for closed manifolds; inside points go
   out. On an open part the particle keeps its side (crossings were undone in step 2): a plane
   or a shelf collides from both faces. Particles closer than reach go to distance reach.
4. Friction as in colliders.py, on the motion relative to the collider's surface there.

The collider's motion is what changed since the last `project` call: `update()` then the next
call sees the whole move (Simulation with substeps: the first substep of the frame).

`feature_contacts` keeps the cloth's edges off the mesh's sharp convex edges and its triangles off
the mesh's convex corners (sharp_features.py), which can pass between the cloth's vertices.
"""

import numpy as np

from ... import geometry
from .. import distance, sphere_search
from ..collider import Collider
from ..friction import apply_friction, friction_coefficient
from . import sharp_features

# Meshes of up to this many triangles are paired with particles by testing every pair (one array
# operation); larger ones through the centroid tree first. A box's few triangles are so large that
# the tree would pair nearly every particle with all of them anyway.
_DENSE_TRIANGLES = 64

# prepare() looks this much further than asked, so that the next substeps of a cloth that moves
# little can keep what it found.
_SPARE = 1.25

# Barycentric slack of the crossing test, so a path through a shared edge hits one of the two.
_CROSS_SLACK = 1e-7

# _closest_outside's three edges AB, AC, BC: their regions, their end vertices' regions, and the
# corners (0 = A, 1 = B, 2 = C) that take weights 1 - r and r at the edge parameter r
_EDGE_REGION = np.array([distance.EDGE_AB, distance.EDGE_CA, distance.EDGE_BC], dtype=np.int8)
_EDGE_ENDS = np.array([[distance.VERTEX_A, distance.VERTEX_B], [distance.VERTEX_A, distance.VERTEX_C],
                       [distance.VERTEX_B, distance.VERTEX_C]], dtype=np.int8)
_EDGE_CORNERS = np.array([[0, 1], [0, 2], [1, 2]])


def _as_vertices(vertices, count=None) -> np.ndarray:
    array = np.array(vertices, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"MeshCollider vertices must have shape (v, 3), got {array.shape}")
    if count is not None and len(array) != count:
        raise ValueError(f"MeshCollider.update needs {count} vertices (same topology), got {len(array)}; "
                         "build a new MeshCollider when the topology changes")
    if not np.all(np.isfinite(array)):
        raise ValueError("MeshCollider vertices must be finite")
    return array


class MeshCollider(Collider):
    """A triangle mesh that particles are kept `thickness + margin` away from.

    vertices: (v, 3) float64, m, world space. triangles: (t, 3) int, corner indices (any
    orientation for open meshes; a closed mesh may be oriented either way, it is fixed by its
    signed volume). thickness: m, added to the cloth's margin. friction: coefficient or None for
    Settings.friction. Call `update(vertices)` when the collider moves or deforms.
    """

    def __init__(self, vertices, triangles, thickness=0.0, friction=None):
        vertices = _as_vertices(vertices)
        tris = np.asarray(triangles)
        if tris.ndim != 2 or tris.shape[1] != 3 or len(tris) == 0:
            raise ValueError(f"MeshCollider triangles must be a non-empty (t, 3) array, got {tris.shape}")
        if not np.issubdtype(tris.dtype, np.integer):
            raise ValueError("MeshCollider triangles must be integer vertex indices")
        if tris.min() < 0 or tris.max() >= len(vertices):
            raise ValueError(f"MeshCollider triangle index out of range for {len(vertices)} vertices")
        if not float(thickness) >= 0.0:
            raise ValueError(f"MeshCollider.thickness must be >= 0, got {thickness!r}")
        self.triangles = tris.astype(np.int64)
        self.thickness = float(thickness)
        self.friction = friction
        self._topology()
        self.vertices = vertices
        self.previous_vertices = vertices  # where the last project() saw the collider
        self._geometry_of = None
        self._cache = None  # MeshCollider.prepare's candidates
        self._sharp = None  # sharp_features.SharpFeatures, classified on first use
        self._incidence = None  # (cloth edges, their incidence, cloth triangles, theirs)
        self._last_contacts = None  # the last projection's closest points (_known_contacts)
        self._resolved = None  # (what the last resolve projected against, what it returned)

    # -- topology (fixed) -----------------------------------------------------------------
    def _topology(self):
        tris = self.triangles
        n = int(tris.max()) + 1
        # Edge k of a triangle goes from corner k to corner k+1: AB, BC, CA (geometry.EDGE_*).
        starts, ends = tris.ravel(), tris[:, [1, 2, 0]].ravel()
        keys = np.minimum(starts, ends) * n + np.maximum(starts, ends)
        unique, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        self._tri_edges = inverse.reshape(-1, 3)
        self._edge_count = len(unique)
        self._edge_ends = np.stack([unique // n, unique % n], axis=1)
        # the (up to) two triangles of every edge, -1 where it has only one
        order = np.argsort(inverse, kind="stable")
        first = np.searchsorted(inverse[order], np.arange(len(unique)))
        self._edge_tris = np.full((len(unique), 2), -1, dtype=np.int64)
        self._edge_tris[:, 0] = order[first] // 3
        two = counts >= 2
        self._edge_tris[two, 1] = order[first[two] + 1] // 3
        # A triangle is part of a closed surface when each of its edges has exactly two triangles.
        self.closed = np.all(counts[self._tri_edges] == 2, axis=1)

    # -- moving ---------------------------------------------------------------------------
    def update(self, vertices) -> None:
        """Move or deform the collider: (v, 3) new vertex positions, same topology, m."""
        vertices = _as_vertices(vertices, len(self.vertices))
        # Same positions keep the same array: everything that compares identities (the per-geometry
        # data, the contact stage's sweep, the candidate cache) then knows the collider stood still.
        if not np.array_equal(vertices, self.vertices):
            self.vertices = vertices

    def _refresh(self):
        """Per-geometry data (normals, pseudo-normals, centroid tree), rebuilt when vertices change."""
        if self._geometry_of is self.vertices:
            return
        from scipy.spatial import cKDTree  # scipy is bundled with the extension, imported lazily

        v, tris = self.vertices, self.triangles
        normal = geometry.triangle_normals(v, tris)
        if np.any(self.closed):
            # Signed volume of the closed part: negative means its triangles face inwards.
            a, b, c = (v[tris[self.closed, k]] for k in range(3))
            if np.einsum("ij,ij->", a, np.cross(b, c)) < 0.0:
                normal[self.closed] *= -1.0
        # Angle-weighted vertex pseudo-normals and edge pseudo-normals (sum of the two faces).
        corners = v[tris]
        angles = np.empty((len(tris), 3))
        for k in range(3):  # the three corners of every triangle at once
            u = corners[:, (k + 1) % 3] - corners[:, k]
            w = corners[:, (k + 2) % 3] - corners[:, k]
            cos = np.einsum("ij,ij->i", u, w) / np.maximum(
                np.linalg.norm(u, axis=1) * np.linalg.norm(w, axis=1), 1e-300)
            angles[:, k] = np.arccos(np.clip(cos, -1.0, 1.0))
        vertex_normal = np.zeros((len(v), 3))
        edge_normal = np.zeros((self._edge_count, 3))
        for axis in range(3):
            vertex_normal[:, axis] = np.bincount(tris.ravel(), (angles * normal[:, axis, None]).ravel(),
                                                 len(v))
            edge_normal[:, axis] = np.bincount(self._tri_edges.ravel(),
                                               np.repeat(normal[:, axis], 3), self._edge_count)
        centroid = corners.mean(axis=1)
        self._normal, self._vertex_normal, self._edge_normal = normal, vertex_normal, edge_normal
        # Per triangle, the pseudo-normal of each region (distance.FACE, VERTEX_A..C, EDGE_AB..CA).
        self._features = np.concatenate([normal[:, None], vertex_normal[tris], edge_normal[self._tri_edges]],
                                        axis=1).reshape(-1, 3)
        self._radius = float(np.linalg.norm(corners - centroid[:, None], axis=2).max())
        self._tree = cKDTree(centroid)
        self._lo, self._hi = corners.min(axis=1), corners.max(axis=1)
        self._bounds = geometry.bounds(v)
        # Plane coordinates: (p - a) . [n, g1, g2] = (height over the plane, barycentric v, w), with
        # g1, g2 the in-plane duals of the edges AB, AC; NaN for zero-area triangles.
        e1, e2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
        d00, d01, d11 = (np.einsum("ij,ij->i", x, y) for x, y in ((e1, e1), (e1, e2), (e2, e2)))
        self._gram = (d00, d01, d11)  # for _closest_outside
        denom = d00 * d11 - d01 * d01
        twice_area = np.sqrt(np.maximum(denom, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = np.where(denom > 0.0, denom, np.nan)[:, None]
            duals = ((d11[:, None] * e1 - d01[:, None] * e2) / denom,
                     (d00[:, None] * e2 - d01[:, None] * e1) / denom)
            # distance of each corner to the line of the opposite edge
            opposite = corners[:, [2, 0, 1]] - corners[:, [1, 2, 0]]
            self._altitude = twice_area[:, None] / np.linalg.norm(opposite, axis=2)
        self._frame = np.stack([normal, *duals], axis=1)
        self._frame_offset = np.einsum("ikj,ij->ik", self._frame, corners[:, 0])
        self._offset = self._frame_offset[:, 0]
        closed = corners[self.closed].reshape(-1, 3)
        self._closed_box = (closed.min(axis=0), closed.max(axis=0)) if len(closed) else None
        self._geometry_of = self.vertices

    def _pseudo_normal(self, tri, region):
        """(k, 3) pseudo-normal of the closest feature (face, edge or vertex) of triangles `tri`."""
        return np.take(self._features, tri * 7 + region, axis=0)

    def _pairs(self, points, radius):
        """(particle rows, triangle indices) of centroids within `radius` (scalar or (k,)) of points."""
        return sphere_search.ball_pairs(self._tree, points, radius)

    def _apart(self, distance, before, *points):
        """Whether the bounding box of the point sets (k, 3) (a cloth's start and end: its paths)
        lies more than `distance` (m) from the mesh's over its sweep from `before` (v, 3) to
        now, along some axis."""
        low, high = self._bounds
        if before is not self.vertices:
            start = geometry.bounds(before)
            low, high = np.minimum(low, start[0]), np.maximum(high, start[1])
        boxes = [geometry.bounds(p) for p in points if len(p)]
        if not boxes:
            return True
        p_low = np.min([box[0] for box in boxes], axis=0)
        p_high = np.max([box[1] for box in boxes], axis=0)
        return bool(np.any(p_low > high + distance) or np.any(p_high < low - distance))

    # -- the Collider interface ---------------------------------------------------------------
    def pose(self) -> np.ndarray:
        return self.vertices

    def move_to(self, pose) -> None:
        if pose is not self.vertices:
            self.update(pose)

    def sweep_start(self, remembered):
        return self.previous_vertices  # its own record: where the last frame left it

    def frame_done(self) -> None:
        self.previous_vertices = self.vertices

    def prepare(self, x0, motion, margin, movable, sweep_from=None) -> None:
        # a projection looks step + 2 reach around its end, itself up to `motion` from x0
        reach = self.thickness + margin
        self.remember_near(x0, 2.0 * (motion + reach), movable, sweep_from)

    def resolve(self, x, x0, movable, margin, sweep_from=None, features=None, inv_mass=None,
                friction=0.0) -> None:
        key = (x0, sweep_from, self.vertices, margin)
        last = self._resolved
        # The solver's last iterate comes to the stage's finish as this collider left it, and a
        # projection does not move its own result again (but for rounding, or a particle between
        # two faces of a concave corner, which the next substep's iterations take up).
        skip = (last is not None and all(a is b for a, b in zip(last[0], key, strict=True))
                and np.array_equal(last[1], x))
        if not skip:
            self.project(x, x0, movable, margin, None, sweep_from=sweep_from)
            self._resolved = (key, x.copy())
        if features is not None:
            self.feature_contacts(x, x0, inv_mass, margin, features, friction, sweep_from)

    # -- queries ----------------------------------------------------------------------------
    def closest(self, points, max_distance=np.inf):
        """Closest surface point to each of points (k, 3), m.

        Returns (closest (k, 3), distance (k,), inside (k,) bool: in a closed part, triangle (k,)
        int); rows with nothing within max_distance have distance inf and triangle -1.
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        self._refresh()
        if np.isfinite(max_distance):
            rows, tri = self._pairs(points, self._radius + float(max_distance))
        else:
            rows = np.repeat(np.arange(len(points)), len(self.triangles))
            tri = np.tile(np.arange(len(self.triangles)), len(points))
        k = len(points)
        closest = np.full((k, 3), np.nan)
        distance = np.full(k, np.inf)
        inside = np.zeros(k, dtype=bool)
        triangle = np.full(k, -1, dtype=np.int64)
        if len(rows) == 0:
            return closest, distance, inside, triangle
        sel, q, d, t, reg, _ = self._nearest(points, rows, tri)
        keep = d <= max_distance
        sel, q, d, t, reg = sel[keep], q[keep], d[keep], t[keep], reg[keep]
        closest[sel], distance[sel], triangle[sel] = q, d, t
        normal = self._pseudo_normal(t, reg)
        inside[sel] = self.closed[t] & (np.einsum("ij,ij->i", points[sel] - q, normal) < 0.0)
        return closest, distance, inside, triangle

    def _plane_coordinates(self, points, rows, tri):
        """(m, 3) height of points[rows] over the planes of triangles tri, and its barycentric v, w."""
        if self._all_prepared(tri):
            frame, offset, _ = self._cache[8]
        else:  # np.take: a fraction of the cost of fancy indexing on these small arrays
            frame, offset = np.take(self._frame, tri, axis=0), np.take(self._frame_offset, tri, axis=0)
        return np.einsum("ij,ikj->ik", np.take(points, rows, axis=0), frame) - offset

    def _all_prepared(self, tri):
        """Whether tri is every pair prepare found, unchanged (their triangle data is gathered)."""
        return self._cache is not None and tri is self._cache[7]

    def _nearest(self, points, rows, tri, plane=None):
        """Per point that has pairs, its nearest pair: (rows (ascending), q, distance, triangle,
        region, bary). plane: the pairs' _plane_coordinates, if known."""
        if plane is None:
            plane = self._plane_coordinates(points, rows, tri)
        height = plane[:, 0]
        # Where the foot on the plane is inside the triangle the height is the exact distance; only
        # pairs whose lower bound beats every such distance of their point need the full
        # closest-point test (mostly points beside an edge or a corner).
        outside = self._outside(plane, tri)
        face = outside <= 0.0
        dist = np.where(face, np.abs(height), np.inf)
        best = np.full(len(points), np.inf)
        np.minimum.at(best, rows, dist)
        bound = height * height + np.maximum(outside, 0.0) ** 2
        full = np.flatnonzero(~face & ~(bound >= np.take(best, rows) ** 2))
        if len(full):
            q_full, bary_full, region_full, dist[full] = self._closest_outside(points, rows[full], tri[full],
                                                                               np.take(plane, full, axis=0))
            np.minimum.at(best, rows[full], dist[full])
        # the first pair of each point at its least distance
        equal = np.flatnonzero(dist == np.take(best, rows))
        win = np.full(len(points), len(rows))
        np.minimum.at(win, rows[equal], equal)
        sel = np.flatnonzero(win < len(rows))
        win = win[sel]
        t, d, height, plane = tri[win], dist[win], height[win], np.take(plane, win, axis=0)
        q = np.take(points, sel, axis=0) - height[:, None] * np.take(self._normal, t, axis=0)
        bary = np.stack([1.0 - plane[:, 1] - plane[:, 2], plane[:, 1], plane[:, 2]], axis=1)
        region = np.full(len(win), distance.FACE, dtype=np.int8)
        if len(full):
            where = np.minimum(np.searchsorted(full, win), len(full) - 1)
            exact = np.flatnonzero(full[where] == win)
            where = where[exact]
            q[exact], bary[exact], region[exact] = q_full[where], bary_full[where], region_full[where]
        return sel, q, d, t, region, bary

    def _closest_outside(self, points, rows, tri, plane):
        """Closest points of triangles tri to points[rows] whose foot on the triangle's plane lies
        outside it: (q (k, 3), bary (k, 3), region (k,) int8, distance (k,)).

        The closest point is then on an edge, found from the plane coordinates (h, v, w): with
        p - a = h n + v ab + w ac, each edge's parameter and the in-plane distance to it are
        scalar expressions in v, w and the triangle's Gram entries |ab|^2, ab.ac, |ac|^2 (a few
        passes over (k,) arrays instead of Ericson's region tests on (k, 3) ones). Zero-area
        triangles (no plane coordinates) take distance.closest_points."""
        at = np.take(points, rows, axis=0)
        corners = self.vertices[self.triangles[tri]]
        h, v, w = plane[:, 0], plane[:, 1], plane[:, 2]
        g00, g01, g11 = (np.take(g, tri) for g in self._gram)
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

    # -- collision ----------------------------------------------------------------------------
    def remember_near(self, positions, radius, movable, sweep_from=None) -> None:
        """Remember the triangles near each particle, so that later `project` and `contact_normals`
        calls test only those while the collider stays where it is now.

        positions: (n, 3) m; radius: scalar or (n,) m, how far around each particle to look;
        movable: (n,) bool; sweep_from: (v, 3) or None, as for `project` (the triangles are taken
        over their sweep from there to now). A later call still checks every particle: one whose
        query reaches beyond what was remembered is looked up afresh. Keeps what an earlier call
        remembered when that covers this one."""
        before = self.previous_vertices if sweep_from is None else sweep_from
        self._refresh()
        radius = np.broadcast_to(np.asarray(radius, dtype=np.float64), len(positions))
        if len(positions) and self._apart(float(radius.max()) * _SPARE, before, positions):
            return  # nothing near: a projection that finds a particle near the mesh looks it up
        cache = self._cache
        if self._cached(before, len(positions)) and cache[1] is before:
            gap = positions - cache[2]
            if np.all(np.sqrt(np.einsum("ij,ij->i", gap, gap)) + radius <= cache[3], where=movable):
                return  # what is remembered already covers it (a cloth at rest on a still mesh)
        positions = np.array(positions, dtype=np.float64)
        limit = np.where(movable, radius * _SPARE, -np.inf)
        idx = np.flatnonzero(movable)
        rows, tri = self._near(positions[idx], limit[idx], before)
        has = np.zeros(len(positions), dtype=bool)
        has[idx[rows]] = True
        ids = np.flatnonzero(has)
        rank = np.cumsum(has) - 1
        # the pairs' triangle data, gathered once for the calls that use every remembered pair
        per_pair = (np.take(self._frame, tri, axis=0), np.take(self._frame_offset, tri, axis=0),
                    np.take(self._altitude, tri, axis=0))
        self._cache = (self.vertices, before, positions, limit, has, ids, rank[idx[rows]], tri, per_pair,
                       self._inside(positions, movable & ~has))

    def project(self, positions, previous, movable, margin=0.0, friction=0.0, sweep_from=None):
        """Push particles out of the mesh and undo crossings (in place on `positions`).

        sweep_from: optional (v, 3) vertices where the collider was when the particles were at
        `previous` (the contact stage projects several times per substep); without it, where
        the last call saw it, and this call becomes the new reference."""
        if sweep_from is None:
            before = self.previous_vertices
            self.previous_vertices = self.vertices
        else:
            before = sweep_from
        self._refresh()
        reach = self.thickness + float(margin)
        self._vertex_contacts(positions, previous, movable, reach, friction, before)

    def feature_contacts(self, positions, previous, inv_mass, margin, features, friction=0.0,
                         sweep_from=None) -> None:
        """Keep the cloth's edges off the mesh's sharp convex edges and its triangles off the
        mesh's convex corners (sharp_features.py), in place on positions (n, 3).

        previous: (n, 3) where the substep started; inv_mass: (n,) 1/kg, 0 for pinned particles;
        features: the model's contact_features; friction: the Coulomb coefficient there;
        sweep_from: (v, 3) where the collider was at the substep's start (None: where it is)."""
        self._refresh()
        if self._sharp is None:
            self._sharp = sharp_features.SharpFeatures(self.vertices, self.triangles, self._normal,
                                                      self._edge_ends, self._edge_tris, self.closed)
        sharp = self._sharp
        if sharp.empty:
            return
        sharp.shape(self.vertices, self._normal)
        edges, triangles = features.edges, features.triangles
        known = self._incidence
        if known is None or known[0] is not edges or known[2] is not triangles:
            n = len(positions)
            known = self._incidence = (edges, sharp_features.incidence(edges, n), triangles,
                                       sharp_features.incidence(triangles, n))
        moved = None if sweep_from is None or sweep_from is self.vertices else self.vertices - sweep_from
        margin = float(margin)
        sharp.resolve(positions, previous, inv_mass, self.thickness + margin, margin, features,
                      (known[1], known[3]), self._inside_body, friction, moved)

    def _inside_body(self, points):
        """(m,) bool: which of points (m, 3) are inside a closed part of the mesh."""
        return self._inside(points, np.ones(len(points), dtype=bool))

    def contact_normals(self, positions, margin, movable, start=None):
        """Particles touching the mesh: (rows (k,), unit normals (k, 3), surface displacement
        (k, 3) at the contact from vertices `start` (v, 3) to now, or None).

        Right after a projection (the contact stage's friction) the particles it left where they
        are keep the closest points it found; only those moved since are looked up again."""
        self._refresh()
        reach = self.thickness + float(margin)
        known = self._known_contacts(positions, reach, movable)
        if known is None:
            rows, q, dist, triangle, region, bary = self._contacts(positions, movable, reach)
        else:
            # the particles where the last projection left them keep the closest points it found
            (rows, q, dist, triangle, region, bary), afresh = known
            afresh &= movable
            fresh = self._contacts(positions, afresh, reach) if afresh.any() else None
            if fresh is not None and len(fresh[0]):
                order = np.argsort(np.concatenate([rows, fresh[0]]), kind="stable")
                rows, q, dist, triangle, region, bary = (np.concatenate([a, b])[order] for a, b in
                                                         zip((rows, q, dist, triangle, region, bary), fresh,
                                                             strict=True))
        on = np.flatnonzero(dist <= 1e-9)
        normal = (positions[rows] - q) / np.where(dist > 1e-9, dist, 1.0)[:, None]
        if len(on):  # on the surface itself: the feature's pseudo-normal
            pn = self._pseudo_normal(triangle[on], region[on])
            normal[on] = pn / np.maximum(np.linalg.norm(pn, axis=1), 1e-300)[:, None]
        moved = None
        if start is self.vertices:
            moved = np.zeros((len(rows), 3))
        elif start is not None:
            corners = (self.vertices - start)[self.triangles[triangle]]
            moved = bary[:, :1] * corners[:, 0] + bary[:, 1:2] * corners[:, 1] + bary[:, 2:] * corners[:, 2]
        return rows, normal, moved

    def _contacts(self, positions, movable, reach):
        """The movable particles within reach of the mesh, ascending, with their closest points:
        (rows (k,), q (k, 3), distance (k,), triangle (k,), region (k,), bary (k, 3))."""
        idx, rows, tri = self._select(positions, movable, reach, self.vertices)
        points = np.take(positions, idx, axis=0)
        plane = self._plane_coordinates(points, rows, tri)
        # a pair farther than reach even by its lower bound is neither a contact nor nearer than one
        bound = plane[:, 0] ** 2 + np.maximum(self._outside(plane, tri), 0.0) ** 2
        near = np.flatnonzero(~(bound > reach * reach))
        if len(near) == 0:
            return (near, np.zeros((0, 3)), np.zeros(0), near, np.zeros(0, dtype=np.int8), np.zeros((0, 3)))
        sel, q, dist, triangle, region, bary = self._nearest(points, rows[near], tri[near], plane[near])
        hit = dist <= reach
        if not np.all(hit):
            sel, q, dist, triangle, region, bary = (a[hit] for a in (sel, q, dist, triangle, region, bary))
        return _in_particle_order(idx[sel], q, dist, triangle, region, bary)

    def _known_contacts(self, positions, reach, movable):
        """What the last projection found, for contact_normals: ((rows, q, distance, triangle,
        region, bary) of the particles it left within reach and that have not moved since, (n,)
        bool: the particles to look at afresh, among them those `movable` now that it did not
        test), or None when it does not cover the question (another geometry or cloth, or a
        reach beyond the pairs it tested)."""
        last = self._last_contacts
        if (last is None or last[0] is not self.vertices or last[1].shape != positions.shape
                or reach > last[2]):
            return None
        _, before, covered, rows, q, triangle, region, bary, tested = last
        shift = positions - before
        shift = np.einsum("ij,ij->i", shift, shift)
        listed = np.zeros(len(positions), dtype=bool)
        listed[rows] = True
        # A particle with no triangle within `covered` then has none within reach while it has
        # moved less than covered - reach since (the other colliders' passes move it a little).
        afresh = np.where(listed, shift > 0.0, shift > (covered - reach) ** 2)
        if tested is not None:
            afresh |= movable & ~tested
        points = np.take(positions, rows, axis=0)
        gap = points - q
        dist = np.sqrt(np.einsum("ij,ij->i", gap, gap))
        keep = np.flatnonzero(~np.take(afresh, rows) & (dist <= reach))
        return (rows[keep], q[keep], dist[keep], triangle[keep], region[keep], bary[keep]), afresh

    def _vertex_contacts(self, positions, previous, movable, reach, friction, before):
        """Cloth vertices against the mesh: crossings undone, then proximity (module docstring)."""
        if self._apart(2.0 * reach, before, positions, previous):
            # no path comes near the mesh (a floor under a cloth on a table): nothing to do, and
            # no particle has a triangle within 2 reach (contact_normals)
            self._no_contacts(positions, 2.0 * reach, None)
            return
        mu = friction_coefficient(self, friction)
        motion = self.vertices - before if before is not self.vertices else None
        # Every triangle the path previous -> positions can cross is within the step of its end,
        # and every triangle near where the response puts it within step + 2 reach.
        step = positions - previous
        step = np.sqrt(np.einsum("ij,ij->i", step, step))
        idx, rows, tri = self._select(positions, movable, step + 2.0 * reach, before)
        if len(rows) == 0:
            # no movable particle has a triangle within 2 reach: none touches (contact_normals)
            self._no_contacts(positions, 2.0 * reach, movable)
            return
        self._last_contacts = None
        # every particle near the mesh (ids are distinct): work in place
        whole = len(idx) == len(positions) and not np.any(idx[1:] < idx[:-1])
        p = positions if whole else np.take(positions, idx, axis=0)
        p0 = previous if whole else np.take(previous, idx, axis=0)
        plane = self._plane_coordinates(p, rows, tri)
        moved = self._crossings(p, p0, rows, tri, plane, before, reach, mu, motion)
        if len(moved):
            again = np.zeros(len(idx), dtype=bool)
            again[moved] = True
            again = np.flatnonzero(np.take(again, rows))
            plane[again] = self._plane_coordinates(p, rows[again], tri[again])
        covered = np.take(step, idx) + 2.0 * reach
        nearest = self._proximity(p, p0, rows, tri, plane, covered, reach, mu, motion)
        if not whole:
            positions[idx] = p
        if nearest is not None:
            # for contact_normals: every triangle within 2 reach of a movable particle was a pair
            sel, *found = nearest
            self._last_contacts = (self.vertices, positions.copy(), 2.0 * reach,
                                   *_in_particle_order(idx[sel], *found), movable)

    def _no_contacts(self, positions, covered, tested):
        """Remember that no particle of positions (n, 3) (of those in the mask `tested`, None:
        all) has a triangle within `covered` m."""
        none = np.zeros(0, dtype=np.int64)
        self._last_contacts = (self.vertices, positions.copy(), covered, none, np.zeros((0, 3)), none,
                               np.zeros(0, dtype=np.int8), np.zeros((0, 3)), tested)

    def _select(self, points, movable, need, before):
        """Candidate pairs: (particle ids (k,), rows (m,) into them, triangles (m,)) with every
        triangle (swept from `before` to now) within `need` (scalar or (n,), m) of each movable
        point of points (n, 3), and for a point deep inside a closed part the triangles that can
        hold its closest point. From the `prepare` cache where it covers the query."""
        if not self._cached(before, len(points)):
            return self._lookup(points, np.flatnonzero(movable), need, before)
        _, _, centre, limit, has, ids, rows, tri, _, inside = self._cache
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
        more, more_rows, more_tri = self._lookup(points, more, need, before)
        return (np.concatenate([ids, more]), np.concatenate([rows, more_rows + len(ids)]),
                np.concatenate([tri, more_tri]))

    def _inside(self, points, which):
        """(n,) bool: which of points (n, 3) (those in the mask `which`) are inside a closed part."""
        inside = np.zeros(len(points), dtype=bool)
        if self._closed_box is None:
            return inside
        low, high = self._closed_box
        at = np.flatnonzero(which & geometry.row_all((points >= low) & (points <= high)))
        if len(at):
            points = points[at]
            sel, q, _, t, region, _ = self._nearest(points, *self._deep_pairs(points))
            signed = np.einsum("ij,ij->i", points[sel] - q, self._pseudo_normal(t, region))
            inside[at[sel[self.closed[t] & (signed < 0.0)]]] = True
        return inside

    def _cached(self, before, count):
        """Whether the prepare cache is for this geometry (swept from `before`) and `count` particles."""
        cache = self._cache
        # (a cache over the sweep also holds every triangle near the collider where it is now)
        return (cache is not None and cache[0] is self.vertices and len(cache[2]) == count
                and (cache[1] is before or before is self.vertices))

    def _lookup(self, points, ids, need, before):
        """_select without the cache, for the particles `ids` (k,) only."""
        p = points[ids]
        rows, tri = self._near(p, np.broadcast_to(need, len(points))[ids], before)
        rows, tri = self._add_deep(p, rows, tri)
        used = np.zeros(len(ids), dtype=bool)
        used[rows] = True
        return ids[used], (np.cumsum(used) - 1)[rows], tri

    def _near(self, points, radius, before):
        """(rows, triangles) int64: the pairs of points (k, 3) and triangles that may
        come within radius (k,) of the point: over the sweep from `before` to now, the triangle's
        bounding box does; standing still, a lower bound of the distance (_outside) does."""
        still = before is self.vertices
        if still:
            lo, hi = self._lo, self._hi
        else:
            start = before[self.triangles]
            lo = np.minimum(self._lo, start.min(axis=1))
            hi = np.maximum(self._hi, start.max(axis=1))
        reach = radius[:, None]
        near = (points + reach >= geometry.bounds(lo)[0]) & (points - reach <= geometry.bounds(hi)[1])
        rows = np.flatnonzero(geometry.row_all(near))
        p, radius = points[rows], radius[rows]
        count = len(self.triangles)
        if count <= _DENSE_TRIANGLES:
            if still:
                pr, tri = np.nonzero(np.abs(p @ self._normal.T - self._offset) <= radius[:, None])
            else:
                pr, tri = np.repeat(np.arange(len(p)), count), np.tile(np.arange(count), len(p))
        else:
            shift = 0.0 if still else float(geometry.vector_lengths(self.vertices - before).max())
            pr, tri = self._pairs(p, self._radius + radius + shift)
        if still:
            plane = self._plane_coordinates(p, pr, tri)
            bound = plane[:, 0] ** 2 + np.maximum(self._outside(plane, tri), 0.0) ** 2
            keep = ~(bound > radius[pr] ** 2)  # zero-area triangles (NaN) stay
        else:
            q = p[pr]
            gap = np.maximum(lo[tri] - q, 0.0) + np.maximum(q - hi[tri], 0.0)
            keep = np.einsum("ij,ij->i", gap, gap) <= radius[pr] ** 2
        return rows[pr[keep]], tri[keep]

    def _outside(self, plane, tri):
        """(m,) how far the foot of each pair's point on its triangle's plane lies outside the
        triangle, at least (distance to the farthest edge line it is beyond; <= 0 inside)."""
        v, w = plane[:, 1], plane[:, 2]
        alt = self._cache[8][2] if self._all_prepared(tri) else np.take(self._altitude, tri, axis=0)
        return np.maximum(np.maximum((v + w - 1.0) * alt[:, 0], -v * alt[:, 1]), -w * alt[:, 2])

    def _add_deep(self, p, rows, tri):
        """Pairs for particles deep inside a closed part (beyond the band the broad phase sees):
        the triangles that can hold their exact closest point, so that they are pushed out too."""
        if not np.any(self.closed):
            return rows, tri
        lonely = np.ones(len(p), dtype=bool)
        lonely[rows] = False
        lonely &= geometry.row_all((p >= self._closed_box[0]) & (p <= self._closed_box[1]))
        if not np.any(lonely):
            return rows, tri
        which = np.flatnonzero(lonely)
        more_rows, more_tri = self._deep_pairs(p[which])
        return np.concatenate([rows, which[more_rows]]), np.concatenate([tri, more_tri])

    def _deep_pairs(self, points):
        """(rows, triangles): for each of points (k, 3), every triangle that can hold its closest point."""
        # The closest triangle's centroid is at most (distance to the nearest centroid) + R away.
        nearest, _ = self._tree.query(points, k=1)
        return self._pairs(points, nearest + self._radius * (1.0 + 1e-9))

    def _crossings(self, p, p0, rows, tri, plane, before, reach, mu, motion):
        """Undo crossings of the surface during the step (particle and collider both moving).

        plane: (m, 3) _plane_coordinates of p[rows]. Returns the rows it moved."""
        pairs = rows, tri, plane
        h1 = plane[:, 0]
        if motion is None:
            h0 = (np.einsum("ij,ij->i", np.take(p0, rows, axis=0), np.take(self._normal, tri, axis=0))
                  - np.take(self._offset, tri))
        else:
            n1 = self._normal[tri]
            n0 = geometry.triangle_normals(before, self.triangles)[tri]
            if np.any(self.closed):
                # The closed part's orientation was fixed on the current geometry; follow it at the start.
                flip = np.einsum("ij,ij->i", n0, n1) < 0.0
                n0[flip] *= -1.0
            h0 = np.einsum("ij,ij->i", p0[rows] - before[self.triangles[tri, 0]], n0)
        above = h0 > 0.0
        crossing = above != (h1 > 0.0)
        crossing &= above | ~np.take(self.closed, tri)  # closed parts: only entering from outside
        crossing = np.flatnonzero(crossing)
        if len(crossing) == 0:
            return rows[:0]
        rows, tri, h0, h1, plane = rows[crossing], tri[crossing], h0[crossing], h1[crossing], plane[crossing]
        t = h0 / (h0 - h1)
        if motion is None:
            # plane coordinates are affine in the point: those of the crossing point directly
            start = self._plane_coordinates(p0, rows, tri)
            v, w = (start[:, k] + t * (plane[:, k] - start[:, k]) for k in (1, 2))
            hit = (v >= -_CROSS_SLACK) & (w >= -_CROSS_SLACK) & (1.0 - v - w >= -_CROSS_SLACK)
        else:
            at = t[:, None]
            tris = self.triangles[tri]
            start, end = before[tris], self.vertices[tris]  # (k, 3 corners, 3)
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
        keep = self._to_undo(p, pairs, rows, tri, sign)
        rows, tri, sign, plane = rows[keep], tri[keep], sign[keep], plane[keep]
        if len(rows) == 0:
            return rows
        side = sign[:, None] * self._normal[tri]
        _, q, _, _, _, bary = self._nearest(p, rows, tri, plane)
        # On a closed part, back out along the crossed triangle's normal from where the particle
        # ended, not to the triangle's nearest point: a particle that slid past the triangle's
        # edge while it crossed (cloth sweeping round a fast ball) keeps that slide. Pinned to the
        # triangle it entered, it could slide at most one triangle a substep, and a ball faster
        # than that dragged the cloth along until it tore (proximity then puts it on the nearest
        # surface). On an open part that slide could carry it past another face (behind the wall
        # of a floor-and-wall corner), which proximity would then keep: there it goes back to
        # the crossed triangle's nearest point.
        closed = self.closed[tri]
        depth = np.where(closed, reach - sign * plane[:, 0], reach - np.einsum("ij,ij->i", p[rows] - q, side))
        p[rows] = np.where(closed[:, None], p[rows] + depth[:, None] * side, q + side * reach)
        self._friction(p, p0, rows, tri, bary, side, depth, mu, motion)
        return rows

    def _to_undo(self, p, pairs, rows, tri, sign):
        """(k,) bool: which crossings (particle rows ascending, triangle tri, side sign of
        _crossings) need undoing: all on open parts; on a closed part only those whose particle
        ended outside it (it passed through) or inside it but nearest to a face turned away from
        the one it entered (past the middle of a thin part). The others proximity pushes out
        through the nearest surface, which lets cloth slide round a body that sweeps into it
        instead of holding each particle to the one triangle it entered. pairs: every candidate
        (rows, tri, plane) of the call."""
        keep = np.ones(len(rows), dtype=bool)
        closed = np.flatnonzero(self.closed[tri])
        if len(closed) == 0:
            return keep
        wanted = np.zeros(len(p), dtype=bool)
        wanted[rows[closed]] = True
        of = np.flatnonzero(wanted[pairs[0]])
        # the entered triangle is among the pairs (it was crossed within the step), so the
        # nearest pair is the nearest triangle of all
        sel, q, _, t, region, _ = self._nearest(p, pairs[0][of], pairs[1][of], pairs[2][of])
        normal = self._pseudo_normal(t, region)
        at = np.searchsorted(rows, sel)  # rows ascend, and sel is a subset of them
        inside = self.closed[t] & (np.einsum("ij,ij->i", p[sel] - q, normal) < 0.0)
        facing = sign[at] * np.einsum("ij,ij->i", normal, self._normal[tri[at]]) > 0.0
        keep[at[inside & facing]] = False
        return keep

    def _proximity(self, p, p0, rows, tri, plane, covered, reach, mu, motion):
        """Push particles within reach of the surface (or inside a closed part) out to reach.

        plane: (m, 3) _plane_coordinates of p[rows]; covered: (k,) m, the pairs hold every triangle
        this close to each of p."""
        sel, q, d, t, reg, bary = self._nearest(p, rows, tri, plane)
        normal = self._pseudo_normal(t, reg)
        offset = np.take(p, sel, axis=0) - q
        signed = np.einsum("ij,ij->i", offset, normal)
        inside = self.closed[t] & (signed < 0.0)
        deep = np.flatnonzero(inside & (d > np.take(covered, sel)))
        if len(deep):
            # deeper inside than the pairs reach: the nearest triangle may be none of them
            at = p[sel[deep]]
            _, q[deep], d[deep], t[deep], reg[deep], bary[deep] = self._nearest(at, *self._deep_pairs(at))
            normal[deep] = self._pseudo_normal(t[deep], reg[deep])
            offset[deep] = at - q[deep]
            inside[deep] = self.closed[t[deep]] & (np.einsum("ij,ij->i", offset[deep], normal[deep]) < 0.0)
        hit = inside | (d < reach)
        nearest = (sel, q, t, reg, bary)
        if not np.any(hit):
            return nearest
        tiny = d <= 1e-12 * max(reach, 1e-3)
        direction = offset / np.where(tiny, 1.0, d)[:, None]
        direction[inside] *= -1.0
        # On the surface itself the offset has no direction: use the feature's pseudo-normal,
        # turned (open parts) towards the side the particle came from.
        if np.any(tiny):
            pn = normal[tiny] / np.maximum(np.linalg.norm(normal[tiny], axis=1), 1e-300)[:, None]
            came = np.einsum("ij,ij->i", p0[sel[tiny]] - q[tiny], pn) < 0.0
            pn[came & ~self.closed[t[tiny]]] *= -1.0
            direction[tiny] = pn
        out = q + direction * reach
        hit = np.flatnonzero(hit)  # (all of them, for a cloth lying on the mesh)
        if len(hit) < len(sel):
            sel, out = sel[hit], out[hit]
        p[sel] = out
        if mu and mu > 0.0:
            t, bary, direction, d, inside = (a[hit] for a in (t, bary, direction, d, inside))
            self._friction(p, p0, sel, t, bary, direction, np.where(inside, reach + d, reach - d), mu, motion)
            return None  # friction moved them along the surface: their closest points changed
        return nearest

    def _friction(self, p, p0, rows, tri, bary, normal, depth, mu, motion):
        """Friction on the motion relative to the collider's surface at the contact point."""
        if not mu or mu <= 0.0:
            return
        start = p0[rows]
        if motion is not None:
            start = start + np.einsum("ij,ijk->ik", bary, motion[self.triangles[tri]])
        moved = p[rows]
        apply_friction(moved, start, np.ones(len(rows), dtype=bool), normal, depth, mu)
        p[rows] = moved


def _in_particle_order(rows, *columns):
    """rows (k,) particle ids and the arrays (k, ...) that go with them, sorted by particle
    (as contact_normals gives them), whatever order the candidates came in."""
    if not np.any(rows[1:] < rows[:-1]):
        return (rows, *columns)
    order = np.argsort(rows)
    return (rows[order], *(column[order] for column in columns))
