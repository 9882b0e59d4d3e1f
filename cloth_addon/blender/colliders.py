"""Scene -> core forces: Collision objects become colliders, Wind fields become a wind vector.

Until the core has a general mesh collider, a Collision object is used when its evaluated
world-space mesh is a sphere (all vertices at one distance from their centroid) or a plane (all
vertices coplanar); other shapes are listed as unsupported in the panel.
"""

import numpy as np

from .. import core
from . import mesh_io

# Relative tolerance for "all vertices at one distance" and "all vertices in one plane".
SHAPE_TOLERANCE = 1e-3
# Faces of a sphere-like mesh are at least this fraction of the radius from its centre.
SPHERE_FACE_DISTANCE = 0.85
# Blender's cloth friction (0..80, default 5) is not a Coulomb coefficient; this maps 5 to 0.5.
FRICTION_SCALE = 0.1

_mesh_colliders: dict[int, object] = {}


def is_collider(obj) -> bool:
    return (obj.type == "MESH" and obj.collision is not None and obj.collision.use
            and any(modifier.type == "COLLISION" for modifier in obj.modifiers))


def world_mesh(obj, depsgraph):
    """(vertices (n, 3), triangles (t, 3), face normals (m, 3), face centres (m, 3)) of the
    evaluated object, world space."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        matrix = mesh_io.matrix_to_numpy(evaluated.matrix_world)
        vertices = mesh_io.to_world(matrix, mesh_io.read_positions(mesh))
        normals = mesh_io.read_vectors(mesh.polygons, "normal") @ np.linalg.inv(matrix[:3, :3])
        centres = mesh_io.to_world(matrix, mesh_io.read_vectors(mesh.polygons, "center"))
        triangles = mesh_io.read_triangles(mesh)
    finally:
        evaluated.to_mesh_clear()
    return vertices, triangles, normals, centres


def classify(vertices: np.ndarray, normals: np.ndarray, centres: np.ndarray):
    """('sphere', center, radius) | ('plane', point, normal) | (None, None, None).

    A sphere has its vertices at one distance from their centroid and its faces close to that
    distance too (which a cube, whose corners are also equidistant, does not).
    """
    if len(vertices) < 3:
        return None, None, None
    center = vertices.mean(axis=0)
    offsets = vertices - center
    extent = np.linalg.norm(offsets, axis=1)
    size = extent.max()
    if size <= 0.0:
        return None, None, None
    if extent.max() - extent.min() <= SHAPE_TOLERANCE * size and len(centres):
        if np.linalg.norm(centres - center, axis=1).min() >= SPHERE_FACE_DISTANCE * size:
            return "sphere", center, float(size)
    _, singular, axes = np.linalg.svd(offsets, full_matrices=False)
    if singular[-1] <= SHAPE_TOLERANCE * singular[0]:
        normal = axes[-1]
        facing = normals.sum(axis=0) if len(normals) else np.zeros(3)
        if facing @ normal < 0.0:
            normal = -normal
        return "plane", center, normal
    return None, None, None


def scene_colliders(scene, depsgraph, exclude_uid: int):
    """(core colliders, names of Collision objects that could not be used)."""
    colliders, unsupported = [], []
    mesh_collider = getattr(core, "MeshCollider", None)
    for obj in scene.objects:
        if obj.session_uid == exclude_uid or not is_collider(obj) or not obj.visible_get():
            continue
        vertices, triangles, normals, centres = world_mesh(obj, depsgraph)
        thickness = obj.collision.thickness_outer
        friction = obj.collision.cloth_friction * FRICTION_SCALE
        kind, a, b = classify(vertices, normals, centres)
        if kind == "sphere":
            colliders.append(core.SphereCollider(a, b, thickness=thickness, friction=friction))
        elif kind == "plane":
            colliders.append(core.PlaneCollider(a, b, thickness=thickness, friction=friction))
        elif mesh_collider is not None and len(triangles):
            colliders.append(_mesh_collider(mesh_collider, obj.session_uid, vertices, triangles,
                                            thickness, friction))
        else:
            unsupported.append(obj.name)
    return colliders, unsupported


def _mesh_collider(cls, uid, vertices, triangles, thickness, friction):
    """Reuse a mesh collider across frames so the core can keep its acceleration structures."""
    collider = _mesh_colliders.get(uid)
    if collider is None or getattr(collider, "_cloth_addon_shape", None) != triangles.shape:
        collider = cls(vertices, triangles, thickness=thickness, friction=friction)
        collider._cloth_addon_shape = triangles.shape
        _mesh_colliders[uid] = collider
    else:
        collider.update(vertices)
        collider.thickness, collider.friction = thickness, friction
    return collider


def clear():
    _mesh_colliders.clear()


def scene_signature(scene, depsgraph, exclude_uid: int) -> tuple:
    """What colliders and wind fields look like now (transforms and settings), to detect changes.

    A collider that deforms without moving (an armature, say) is not seen; Reset rebuilds then.
    """
    parts = []
    for obj in scene.objects:
        if obj.session_uid == exclude_uid:
            continue
        if is_collider(obj) or (obj.field is not None and obj.field.type == "WIND"):
            matrix = obj.evaluated_get(depsgraph).matrix_world
            settings = (obj.collision.thickness_outer, obj.collision.cloth_friction) if is_collider(obj) \
                else (obj.field.strength,)
            parts.append((obj.name, obj.visible_get(), tuple(matrix.col[3]) + tuple(matrix.col[2]),
                          tuple(matrix.col[0]) + tuple(matrix.col[1]), settings))
    return tuple(parts)


def scene_wind(scene) -> np.ndarray:
    """(3,) m/s: the sum of visible Wind fields, each its strength along its object's Z axis."""
    wind = np.zeros(3)
    for obj in scene.objects:
        field = obj.field
        if field is None or field.type != "WIND" or not obj.visible_get():
            continue
        axis = np.array(obj.matrix_world.col[2][:3], dtype=np.float64)
        length = np.linalg.norm(axis)
        if length > 0.0:
            wind += field.strength * axis / length
    return wind
