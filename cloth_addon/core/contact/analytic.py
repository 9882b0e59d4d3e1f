"""Analytic colliders: a plane (half-space, e.g. a floor) and a sphere.

A collider projects particles out of its body (seed 000 §5): a pure position correction,
the solvers then see the corrected motion as velocity. Friction is Coulomb-like in
positions: the tangential part of this step's motion is cut by friction * penetration
depth (static when the whole slide is below that).

Besides the Collider interface (collider.py), each has `project(positions, previous, movable,
margin, friction)`:
  positions, previous: (n, 3) float64, m, this and the last substep (positions is edited in place);
  movable: (n,) bool, particles the collider may move (pinned ones are not);
  margin: m, cloth thickness added to the collider's own; friction: used where the
  collider's own `friction` is None; None applies none (the contact stage's own friction).
"""

import numpy as np

from ..geometry import gather, row_min, vector_lengths
from .collider import Collider
from .friction import apply_friction, friction_coefficient


class PlaneCollider(Collider):
    """Half-space {x : (x - point) . normal < thickness} that particles are pushed out of.

    point: (3,) m, any point on the surface; normal: (3,) pointing to the free side;
    thickness: m; friction: coefficient or None for Settings.friction. Both `point` and
    `normal` may be reassigned between frames (a moving floor).
    """

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), thickness=0.0, friction=None):
        self.point = point
        self.normal = normal
        self.thickness = float(thickness)
        self.friction = friction

    def pose(self) -> np.ndarray:
        return np.array(self.point, dtype=np.float64)

    def move_to(self, pose) -> None:
        self.point = pose

    def resolve(self, x, x0, movable, margin, sweep_from=None, features=None, inv_mass=None,
                friction=0.0) -> None:
        self.project(x, x0, movable, margin, None)

    def project(self, positions, previous, movable, margin=0.0, friction=0.0):
        normal = np.asarray(self.normal, dtype=np.float64)
        length = np.linalg.norm(normal)
        if not length > 0.0:
            raise ValueError("PlaneCollider.normal must be a non-zero vector")
        normal = normal / length
        # einsum, not a matrix product: BLAS threads cost more than this whole product on a busy machine
        offset = (np.einsum("ij,j->i", positions, normal) - np.asarray(self.point, dtype=np.float64) @ normal
                  - (self.thickness + margin))
        hit = (offset < 0.0) & movable
        if not np.any(hit):
            return
        depth = -offset[hit]
        positions[hit] += depth[:, None] * normal
        mu = friction_coefficient(self, friction)
        apply_friction(positions, previous, hit, np.broadcast_to(normal, (int(hit.sum()), 3)), depth, mu)

    def gaps(self, positions, margin):
        """(n,) m signed distances of the particles from the plane's reach (negative inside), and
        the unit normal (n, 3) along which each leaves it."""
        normal = np.asarray(self.normal, dtype=np.float64)
        normal = normal / np.linalg.norm(normal)
        gap = (np.einsum("ij,j->i", positions, normal) - np.asarray(self.point, dtype=np.float64) @ normal
               - (self.thickness + margin))
        return gap, np.broadcast_to(normal, positions.shape)

    def contact_normals(self, positions, margin, movable, start=None):
        """Particles touching the plane: (rows (k,), unit normals (k, 3), surface displacement
        (k, 3) from pose `start` (a previous `point`) to now, or None)."""
        normal = np.asarray(self.normal, dtype=np.float64)
        normal = normal / np.linalg.norm(normal)
        point = np.asarray(self.point, dtype=np.float64)
        height = np.einsum("ij,j->i", positions, normal) - point @ normal
        rows = np.flatnonzero((height <= self.thickness + margin) & movable)
        moved = None if start is None else np.broadcast_to(point - start, (len(rows), 3))
        return rows, np.broadcast_to(normal, (len(rows), 3)), moved


class SphereCollider(Collider):
    """Solid ball: particles closer than radius + thickness to `center` go to its surface.

    center: (3,) m (reassign it to move the ball); radius, thickness: m; friction or None.
    """

    def __init__(self, center=(0.0, 0.0, 0.0), radius=1.0, thickness=0.0, friction=None):
        if not float(radius) > 0.0:
            raise ValueError(f"SphereCollider.radius must be > 0, got {radius!r}")
        self.center = center
        self.radius = float(radius)
        self.thickness = float(thickness)
        self.friction = friction

    def pose(self) -> np.ndarray:
        return np.array(self.center, dtype=np.float64)

    def move_to(self, pose) -> None:
        self.center = pose

    def resolve(self, x, x0, movable, margin, sweep_from=None, features=None, inv_mass=None,
                friction=0.0) -> None:
        self.project(x, x0, movable, margin, None, features=features)

    def project(self, positions, previous, movable, margin=0.0, friction=0.0, features=None):
        """features: optional model.contact_features; its edges are kept out of the ball too."""
        center = np.asarray(self.center, dtype=np.float64)
        reach = self.radius + self.thickness + margin
        offset = positions - center
        dist = vector_lengths(offset)
        hit = (dist < reach) & movable
        if np.any(hit):
            self._push_vertices(positions, previous, center, reach, offset, dist, hit, friction)
        if features is not None and len(features.edges):
            self._push_edges(positions, features, movable, center, reach, dist, self.radius, margin)

    def _push_vertices(self, positions, previous, center, reach, offset, dist, hit, friction):
        d = dist[hit]
        normal = np.empty((len(d), 3))
        away = d > 1e-12
        normal[away] = offset[hit][away] / d[away, None]
        normal[~away] = (0.0, 0.0, 1.0)  # a particle at the very centre leaves upwards
        positions[hit] = center + normal * reach
        mu = friction_coefficient(self, friction)
        apply_friction(positions, previous, hit, normal, reach - d, mu)

    @staticmethod
    def _push_edges(positions, features, movable, center, reach, dist, radius, margin):
        """Cloth edges whose inner points dip into the ball (both ends outside) pushed out.

        An edge keeps the distance from the centre of its chord between two points at the reach
        (vertex contact holds the cloth no closer), less half the margin, at least the margin off
        the ball (radius, m), as a mesh's sharp features keep it (mesh/sharp_features.py):
        pushing an edge whose ends rest on the reach out to the reach lifted them off it in every
        substep, and the cloth, falling back in the next, crept over the ball under its friction
        (a drape wrapped the ball's lower half: docs/PHYSICS.md §9).
        dist: (n,) distances of the particles from the centre before the vertex projection."""
        # An edge dips in only if both its ends are within the reach plus its length (a bound
        # from the rest shape) of the centre.
        edges = features.edges
        near = dist < reach + features.longest
        if not near.any():
            return
        edges = edges[near[edges[:, 0]] & near[edges[:, 1]]]
        ends = gather(positions, edges) - center  # (k, 2, 3), after the vertex projection
        outside = np.sqrt(row_min(np.einsum("ijk,ijk->ij", ends, ends))) >= reach * (1.0 - 1e-9)
        edges = edges[outside]
        a, b = gather(positions, edges[:, 0]), gather(positions, edges[:, 1])
        ab = b - a
        length2 = np.einsum("ij,ij->i", ab, ab)
        s = np.clip(np.einsum("ij,ij->i", center - a, ab) / np.maximum(length2, 1e-300), 0.0, 1.0)
        point = a + s[:, None] * ab
        offset = point - center
        dist = vector_lengths(offset)
        chord = np.sqrt(np.maximum(reach * reach - 0.25 * length2, 0.0))
        keep = np.maximum(chord - 0.5 * margin, radius + margin)
        hit = (dist < keep) & (s > 0.0) & (s < 1.0) & (dist > 1e-12)
        if np.any(hit):
            sh = s[hit]
            push_features(positions, edges[hit], np.stack([1.0 - sh, sh], axis=1),
                          offset[hit] / dist[hit, None], keep[hit] - dist[hit], movable)

    def gaps(self, positions, margin):
        """(n,) m signed distances of the particles from the ball's reach (negative inside), and
        the unit normal (n, 3) along which each leaves it (up at the very centre)."""
        offset = positions - np.asarray(self.center, dtype=np.float64)
        dist = vector_lengths(offset)
        normal = np.empty_like(offset)
        away = dist > 1e-12
        normal[away] = offset[away] / dist[away, None]
        normal[~away] = (0.0, 0.0, 1.0)
        return dist - (self.radius + self.thickness + margin), normal

    def contact_normals(self, positions, margin, movable, start=None):
        """Particles touching the ball: (rows (k,), unit normals (k, 3), surface displacement
        (k, 3) from pose `start` (a previous `center`) to now, or None)."""
        center = np.asarray(self.center, dtype=np.float64)
        offset = positions - center
        dist = vector_lengths(offset)
        rows = np.flatnonzero((dist <= self.radius + self.thickness + margin) & movable & (dist > 1e-12))
        moved = None if start is None else np.broadcast_to(center - start, (len(rows), 3))
        return rows, offset[rows] / dist[rows, None], moved


def push_features(positions, who, weights, normal, depth, movable):
    """Move k features (edges, triangles) so that their point with barycentric `weights` goes
    `depth` further along `normal`, in place.

    positions: (n, 3) m; who: (k, m) int vertex ids; weights: (k, m) barycentric weights;
    normal: (k, 3) unit; depth: (k,) m; movable: (n,) bool. The shares follow the inelastic
    projection of a point on the feature (weights over their sum of squares), fixed vertices
    passing their share to the others; several features at one vertex are averaged (Jacobi)."""
    weights = weights * movable[who]
    denom = np.einsum("ij,ij->i", weights, weights)
    ok = denom > 1e-12
    if not np.any(ok):
        return
    step = (weights[ok] * (depth[ok] / denom[ok])[:, None])[:, :, None] * normal[ok][:, None, :]
    index = who[ok].ravel()
    count = np.bincount(index, minlength=len(positions)).astype(np.float64)
    for axis in range(3):
        total = np.bincount(index, step[:, :, axis].ravel(), len(positions))
        positions[:, axis] += total / np.maximum(count, 1.0)
