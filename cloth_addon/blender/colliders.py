"""Scene -> core colliders: every visible Collision object becomes a mesh or sphere collider.

Every visible Collision object is read each frame as its evaluated, world-space triangle mesh
(modifiers, armatures, shape keys and animation included) and becomes a core.MeshCollider:
closed or open, convex or not; a sphere-shaped mesh becomes the exact, much cheaper
core.SphereCollider. Its Outer Thickness and Friction come from its Collision settings.
Each cloth session keeps its own colliders (ClothSession.kept_colliders, by collider): mesh
colliders are `update()`d while their topology stays the same and balls moved, so the core sees
each collider's own motion between frames (a fast or deforming collider does not tunnel, a
moving ball is swept over the substeps) and a mesh keeps its acceleration structures.
"""

import numpy as np

from .. import core
from . import mesh_io

# Blender's cloth friction (0..80, default 5) is not a Coulomb coefficient; this maps 5 to 0.5.
FRICTION_SCALE = 0.1


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


def scene_colliders(scene, depsgraph, exclude, kept: dict | None = None, collection: str = ""):
    """(core colliders for a cloth, names of Collision objects without faces).

    exclude: the cloth object's session_uid, or the set of them of objects simulated together
    (none of them collides with the group as a Collision object: they are simulated).

    kept: that cloth's colliders from the frame before, by collider session_uid (updated in
    place); without it every collider is built anew. collection: the name of the cloth's
    Collision Collection: only Collision objects in it (or its child collections) collide; ""
    for all of them.
    """
    kept = {} if kept is None else kept
    exclude = {exclude} if isinstance(exclude, int) else exclude
    members = collection_members(scene, collection) if collection else None
    colliders, unsupported = [], []
    for obj in scene.objects:
        if obj.session_uid in exclude or not is_collider(obj) or not obj.visible_get():
            continue
        if members is not None and obj.session_uid not in members:
            continue
        vertices, triangles, _, centres = world_mesh(obj, depsgraph)
        if len(triangles) == 0:
            unsupported.append(obj.name)
            continue
        thickness = obj.collision.thickness_outer
        friction = obj.collision.cloth_friction * FRICTION_SCALE
        ball = sphere_of(vertices, centres)
        if ball is not None:
            colliders.append(_sphere_collider(kept, obj.session_uid, *ball, thickness, friction))
            continue
        colliders.append(_mesh_collider(kept, obj.session_uid, vertices, triangles, thickness, friction))
    return colliders, unsupported


def collection_members(scene, name: str) -> set[int]:
    """session_uids of the objects in the scene's collection `name` and its children (none when
    the collection is not in the scene)."""
    for collection in scene.collection.children_recursive:
        if collection.name == name:
            return {obj.session_uid for obj in collection.all_objects}
    return set()


def sphere_of(vertices: np.ndarray, centres: np.ndarray):
    """(centre (3,), radius m) when a mesh is a sphere to within its faceting, else None.

    A UV or ico sphere then collides as the exact ball through its vertices: far cheaper than a
    general mesh (no triangle queries), and no facets to catch on. All vertices must be
    at one distance from their mean, and every face centre nearly as far (which a cube, whose
    corners are equidistant too, is not).
    """
    if len(vertices) < 12:
        return None
    centre = vertices.mean(axis=0)
    radii = np.linalg.norm(vertices - centre, axis=1)
    radius = radii.mean()
    if not radius > 0.0 or np.ptp(radii) > 1e-3 * radius:
        return None
    if np.linalg.norm(centres - centre, axis=1).min() < 0.95 * radius:
        return None
    return centre, float(radius)


def _sphere_collider(kept: dict, key: int, centre, radius, thickness, friction):
    """kept[key], moved to `centre`: the same ball from frame to frame, so that the contact stage
    spreads its motion between frames over the substeps (a new ball each frame was taken as
    standing still and jumped a frame's motion at the frame's first substep: a 1 m/s ball struck
    a curtain 4 cm at a time)."""
    collider = kept.get(key)
    if not isinstance(collider, core.SphereCollider):
        collider = kept[key] = core.SphereCollider(centre, radius, thickness=thickness, friction=friction)
    else:
        collider.center, collider.radius = centre, radius
        collider.thickness, collider.friction = thickness, friction
    return collider


def _mesh_collider(kept: dict, key: int, vertices, triangles, thickness, friction):
    """kept[key], moved to `vertices`; rebuilt only when the topology changed.

    One per session (a cloth object, or objects simulated together): a collider remembers where
    the last step saw it, and two sessions stepping in turn must each see the collider's whole
    motion.
    """
    collider = kept.get(key)
    if (not isinstance(collider, core.MeshCollider) or collider.triangles.shape != triangles.shape
            or len(collider.vertices) != len(vertices) or not np.array_equal(collider.triangles, triangles)):
        collider = kept[key] = core.MeshCollider(vertices, triangles, thickness=thickness, friction=friction)
    else:
        collider.update(vertices)
        collider.thickness, collider.friction = thickness, friction
    return collider
