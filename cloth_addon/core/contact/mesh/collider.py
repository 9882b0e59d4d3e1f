"""MeshCollider: any triangle mesh (closed or open, convex or not, moving or deforming).

Same `project(positions, previous, movable, margin, friction)` as the analytic colliders
(analytic.py), and the Collider interface (collider.py). One projection, on the particles the
collider may move, in stages:

1. Broad phase (broad_phase.py): the triangles each particle may come near.
2. Continuous check, then proximity, with friction (response.py), on exact closest points
   (narrow_phase.py) of the surface's geometry (surface.py).

The collider's motion is what changed since the last `project` call: `update()` then the next
call sees the whole move (Simulation with substeps: the contact stage spreads it over them).

`feature_contacts` keeps the cloth's edges off the mesh's sharp convex edges and its triangles off
the mesh's convex corners (sharp_features.py), which can pass between the cloth's vertices.
"""

import numpy as np

from ... import geometry
from .. import sphere_search
from ..collider import Collider
from ..friction import friction_coefficient
from . import sharp_features
from .broad_phase import MeshBroadPhase
from .narrow_phase import NarrowPhase
from .response import VertexResponse
from .surface import DENSE_TRIANGLES, Surface

# rim_near tests every point against every boundary edge up to this many pairs, else through
# k-d trees (sphere_search)
_DENSE_RIM_PAIRS = 100_000


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
        self.thickness = float(thickness)
        self.friction = friction
        self.surface = Surface(vertices, tris.astype(np.int64))
        self.narrow = NarrowPhase(self.surface)
        self.broad = MeshBroadPhase(self.surface, self.narrow)
        self.response = VertexResponse(self.surface, self.narrow, self.broad)
        self.previous_vertices = vertices  # where the last project() saw the collider
        self._sharp = None  # sharp_features.SharpFeatures, classified on first use
        self._boundary = None  # (b, 2) the open boundary's edges (rim_near), found on first use
        self._incidence = None  # (cloth edges, their incidence, cloth triangles, theirs)
        self._last_contacts = None  # the last projection's closest points (_known_contacts)
        self._resolved = None  # (what the last resolve projected against, what it returned)

    @property
    def vertices(self) -> np.ndarray:
        """(v, 3) float64 m, where the collider is now (`update` moves it)."""
        return self.surface.vertices

    @property
    def triangles(self) -> np.ndarray:
        return self.surface.triangles

    @property
    def closed(self) -> np.ndarray:
        """(t,) bool: which triangles are part of a closed surface."""
        return self.surface.closed

    def update(self, vertices) -> None:
        """Move or deform the collider: (v, 3) new vertex positions, same topology, m."""
        vertices = _as_vertices(vertices, len(self.vertices))
        # Same positions keep the same array: everything that compares identities (the per-geometry
        # data, the contact stage's sweep, the candidate cache) then knows the collider stood still.
        if not np.array_equal(vertices, self.vertices):
            self.surface.vertices = vertices

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
        full = 2.0 * (motion + reach)
        # A particle's projections ask for the triangles its step may cross and its nearest one
        # (broad_phase.py, `least`), and the contact normals for those within reach: near the
        # surface that is motion + max(reach, its distance + motion) from x0, well inside `full`.
        # Its distance is bounded by its nearest centroid's (only those near the mesh are asked). A
        # mesh of a few triangles (a box) pairs every particle with all of them at once: no gain.
        radius, nearest = full, None
        if len(self.triangles) > DENSE_TRIANGLES:
            nearest = self.surface.nearest_centroid(x0, full)
            radius = np.minimum(full, motion + np.maximum(reach, nearest + motion))
        self.remember_near(x0, radius, movable, sweep_from, nearest)

    def remember_near(self, positions, radius, movable, sweep_from=None, nearest=None) -> None:
        """Remember the triangles near each particle, so that later `project` and `contact_normals`
        calls test only those while the collider stays where it is now (broad_phase.py).
        positions: (n, 3) m; radius: scalar or (n,) m; movable: (n,) bool; sweep_from: (v, 3) or
        None, as for `project`; nearest: (n,) m or None, Surface.nearest_centroid of positions."""
        before = self.previous_vertices if sweep_from is None else sweep_from
        self.broad.remember_near(positions, radius, movable, before, nearest)

    def closest(self, points, max_distance=np.inf):
        """Closest surface point to each of points (k, 3), m (narrow_phase.NarrowPhase.closest)."""
        return self.narrow.closest(points, max_distance)

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
        self.surface.refresh()
        reach = self.thickness + float(margin)
        self._vertex_contacts(positions, previous, movable, reach, friction, before)

    def feature_contacts(self, positions, previous, inv_mass, margin, features, friction=0.0,
                         sweep_from=None) -> None:
        """Keep the cloth's edges off the mesh's sharp convex edges and its triangles off the
        mesh's convex corners (sharp_features.py), in place on positions (n, 3).

        previous: (n, 3) where the substep started; inv_mass: (n,) 1/kg, 0 for pinned particles;
        features: the model's contact_features; friction: the Coulomb coefficient there;
        sweep_from: (v, 3) where the collider was at the substep's start (None: where it is)."""
        sharp = self.sharp_features
        if sharp.empty:
            return
        sharp.shape(self.vertices, self.surface.normal)
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

    @property
    def sharp_features(self) -> sharp_features.SharpFeatures:
        """The mesh's sharp convex edges and corners, classified once from its first shape."""
        self.surface.refresh()
        if self._sharp is None:
            surface = self.surface
            self._sharp = sharp_features.SharpFeatures(self.vertices, self.triangles, surface.normal,
                                                       surface.edge_ends, surface.edge_tris, self.closed)
        return self._sharp

    def rim_near(self, points, distance: float) -> bool:
        """Whether a rim of the mesh may hold any of points (k, 3): it has a sharp convex edge or
        corner (anywhere), or an open boundary edge within `distance` m of one of them (a table
        top modelled as a plane; a floor's far edge is not near the cloth on it). The contact
        stage keeps the solver's vertex step away from the particles such a collider holds
        (docs/PHYSICS.md §9)."""
        if len(points) == 0:
            return False
        if not self.sharp_features.empty:
            return True
        if self._boundary is None:
            self._boundary = self.surface.edge_ends[self.surface.edge_tris[:, 1] < 0]
        if len(self._boundary) == 0:
            return False
        start = self.vertices[self._boundary[:, 0]]
        along = self.vertices[self._boundary[:, 1]] - start
        if len(points) * len(start) > _DENSE_RIM_PAIRS:
            middle, half = start + 0.5 * along, 0.5 * geometry.vector_lengths(along)
            reach = np.full(len(points), float(distance))
            rows, cols = sphere_search.sphere_pairs(points, reach, middle, half)
            points, start, along = points[rows], start[cols], along[cols]
        else:
            points = points[:, None, :]
        offset = points - start
        t = np.clip(np.sum(offset * along, axis=-1) / np.maximum(np.sum(along * along, axis=-1), 1e-300),
                    0.0, 1.0)
        gap = offset - t[..., None] * along
        return bool(np.any(np.sum(gap * gap, axis=-1) <= distance * distance))

    def _inside_body(self, points):
        """(m,) bool: which of points (m, 3) are inside a closed part of the mesh."""
        return self.broad.inside(points, np.ones(len(points), dtype=bool))

    def contact_normals(self, positions, margin, movable, start=None):
        """Particles touching the mesh: (rows (k,), unit normals (k, 3), surface displacement
        (k, 3) at the contact from vertices `start` (v, 3) to now, or None).

        Right after a projection (the contact stage's friction) the particles it left where they
        are keep the closest points it found; only those moved since are looked up again."""
        self.surface.refresh()
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
            pn = self.surface.pseudo_normal(triangle[on], region[on])
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
        idx, rows, tri = self.broad.select(positions, movable, reach, self.vertices)
        points = np.take(positions, idx, axis=0)
        plane = self.narrow.plane_coordinates(points, rows, tri)
        # a pair farther than reach even by its lower bound is neither a contact nor nearer than one
        bound = self.narrow.lower_bound(plane, tri)
        near = np.flatnonzero(~(bound > reach * reach))
        if len(near) == 0:
            return (near, np.zeros((0, 3)), np.zeros(0), near, np.zeros(0, dtype=np.int8), np.zeros((0, 3)))
        sel, q, dist, triangle, region, bary = self.narrow.nearest(points, rows[near], tri[near], plane[near])
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
        if self.surface.apart(2.0 * reach, before, positions, previous):
            # no path comes near the mesh (a floor under a cloth on a table): nothing to do, and
            # no particle has a triangle within 2 reach (contact_normals)
            self._no_contacts(positions, 2.0 * reach, None)
            return
        mu = friction_coefficient(self, friction)
        motion = self.vertices - before if before is not self.vertices else None
        # Every triangle the path previous -> positions can cross is within the step of its end,
        # and every triangle near where the response puts it within step + 2 reach: those of a
        # particle the crossings move (few) are looked up again below; the others need only their
        # nearest triangle and those within the step.
        step = positions - previous
        step = np.sqrt(np.einsum("ij,ij->i", step, step))
        need = step + 2.0 * reach
        idx, rows, tri = self.broad.select(positions, movable, need, before, least=step)
        if len(rows) == 0:
            # no movable particle has a triangle within 2 reach: none touches (contact_normals)
            self._no_contacts(positions, 2.0 * reach, movable)
            return
        self._last_contacts = None
        # every particle near the mesh (ids are distinct): work in place
        whole = len(idx) == len(positions) and not np.any(idx[1:] < idx[:-1])
        p = positions if whole else np.take(positions, idx, axis=0)
        p0 = previous if whole else np.take(previous, idx, axis=0)
        plane = self.narrow.plane_coordinates(p, rows, tri)
        moved = self.response.crossings(p, p0, rows, tri, plane, before, reach, mu, motion)
        if len(moved):
            rows, tri, plane = self._after_crossings(p, idx, rows, tri, plane, moved, need, before)
        covered = np.take(need, idx)
        nearest, (near_rows, foot) = self.response.proximity(p, p0, rows, tri, plane, covered, reach, mu,
                                                             motion)
        self.broad.note_surface_points(np.take(idx, near_rows), foot, len(positions))
        if not whole:
            positions[idx] = p
        if nearest is not None:
            # for contact_normals: every triangle within 2 reach of a movable particle was a pair
            sel, *found = nearest
            self._last_contacts = (self.vertices, positions.copy(), 2.0 * reach,
                                   *_in_particle_order(idx[sel], *found), movable)

    def _after_crossings(self, p, idx, rows, tri, plane, moved, need, before):
        """The pairs (rows, tri, plane) of _vertex_contacts once the crossings moved the particles
        `moved` (rows into idx) back out: every triangle within need (n,) m of where they are now
        (p (k, 3)), with their plane coordinates there."""
        positions = np.zeros((len(need), 3))
        positions[idx[moved]] = p[moved]
        mask = np.zeros(len(need), dtype=bool)
        mask[idx[moved]] = True
        ids, more_rows, more_tri = self.broad.select(positions, mask, need, before)
        at = np.full(len(need), -1)
        at[idx] = np.arange(len(idx))
        keep = ~np.isin(rows, moved)
        rows = np.concatenate([rows[keep], at[ids][more_rows]])
        tri = np.concatenate([tri[keep], more_tri])
        return rows, tri, np.concatenate([plane[keep], self.narrow.plane_coordinates(p, rows[keep.sum():],
                                                                                      tri[keep.sum():])])

    def _no_contacts(self, positions, covered, tested):
        """Remember that no particle of positions (n, 3) (of those in the mask `tested`, None:
        all) has a triangle within `covered` m."""
        none = np.zeros(0, dtype=np.int64)
        self._last_contacts = (self.vertices, positions.copy(), covered, none, np.zeros((0, 3)), none,
                               np.zeros(0, dtype=np.int8), np.zeros((0, 3)), tested)



def _in_particle_order(rows, *columns):
    """rows (k,) particle ids and the arrays (k, ...) that go with them, sorted by particle
    (as contact_normals gives them), whatever order the candidates came in."""
    if not np.any(rows[1:] < rows[:-1]):
        return (rows, *columns)
    order = np.argsort(rows)
    return (rows[order], *(column[order] for column in columns))
