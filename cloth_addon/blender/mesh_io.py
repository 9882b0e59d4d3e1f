"""Mesh <-> numpy: bulk copies through foreach_get/foreach_set on float32/int32 buffers."""

import numpy as np


def read_vectors(collection, name: str) -> np.ndarray:
    """(len, 3) float64 from a float-vector property of every item of a bpy collection."""
    buffer = np.empty(len(collection) * 3, dtype=np.float32)
    collection.foreach_get(name, buffer)
    return buffer.reshape(-1, 3).astype(np.float64)


def read_positions(mesh) -> np.ndarray:
    """(n, 3) float64: the mesh's own vertex coordinates, local space, before modifiers."""
    return read_vectors(mesh.vertices, "co")


def key_points(key_block):
    """The shape key's points for foreach_get/foreach_set.

    `KeyBlock.data` may hold curve points too, so Blender copies it item by item through RNA;
    `points` (Blender 4.1+) holds mesh points only and is copied as one raw array.
    """
    return key_block.points if hasattr(key_block, "points") else key_block.data


def read_key(key_block) -> np.ndarray:
    """(n, 3) float64 coordinates stored in a shape key, local space."""
    return read_vectors(key_points(key_block), "co")


def write_key(key_block, local: np.ndarray) -> None:
    """Store (n, 3) local coordinates in a shape key and tag the mesh for re-evaluation.

    A C-contiguous float32 `local` (playback's reused buffer) is written as it is, without a copy.
    """
    flat = np.ascontiguousarray(local, dtype=np.float32).reshape(-1)
    key_points(key_block).foreach_set("co", flat)
    key_block.id_data.user.update_tag()


def read_faces(mesh):
    """Faces as an (m, k) int array when all have k corners, else a list of index arrays."""
    count = len(mesh.polygons)
    if count == 0:
        return np.empty((0, 3), dtype=np.int64)
    corners = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", corners)
    sizes = np.empty(count, dtype=np.int32)
    mesh.polygons.foreach_get("loop_total", sizes)
    corners = corners.astype(np.int64)
    # Blender stores each face's corners contiguously, in face order.
    if np.all(sizes == sizes[0]):
        return corners.reshape(count, sizes[0])
    return np.split(corners, np.cumsum(sizes)[:-1])


def read_edges(mesh) -> np.ndarray:
    """(e, 2) int64 mesh edges."""
    buffer = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", buffer)
    return buffer.reshape(-1, 2).astype(np.int64)


def read_triangles(mesh) -> np.ndarray:
    """(t, 3) int64 triangulation of the mesh (for mesh colliders)."""
    mesh.calc_loop_triangles()
    buffer = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", buffer)
    return buffer.reshape(-1, 3).astype(np.int64)


def read_group_weights(obj, group_name: str) -> np.ndarray:
    """(n,) float64 weights of a vertex group, 0 where a vertex is not in it.

    Blender has no bulk getter for vertex-group weights (they are not mesh attributes), so this
    walks the vertices once; it runs when a simulation is built, never per frame.
    """
    count = len(obj.data.vertices)
    weights = np.zeros(count, dtype=np.float64)
    group = obj.vertex_groups.get(group_name) if group_name else None
    if group is None:
        return weights
    index = group.index
    for vertex in obj.data.vertices:
        for element in vertex.groups:
            if element.group == index:
                weights[vertex.index] = element.weight
    return weights


def matrix_to_numpy(matrix) -> np.ndarray:
    """(4, 4) float64 from a mathutils.Matrix."""
    return np.array(matrix, dtype=np.float64)


def to_world(matrix: np.ndarray, local: np.ndarray) -> np.ndarray:
    return local @ matrix[:3, :3].T + matrix[:3, 3]


def to_local(matrix: np.ndarray, world: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(n, 3) local coordinates of world positions; into `out` (float32 allowed) when given."""
    if np.array_equal(matrix[:3, :3], np.eye(3)):
        # Unrotated and unscaled (the usual cloth): the solve below would return exactly this,
        # computed in float64 and rounded once into out, without the LAPACK call and copies.
        return np.subtract(world, matrix[:3, 3], out=out)
    # Solving instead of inverting keeps the round trip exact enough for scaled objects.
    local = np.linalg.solve(matrix[:3, :3], (world - matrix[:3, 3]).T).T
    if out is None:
        return local
    np.copyto(out, local)
    return out
