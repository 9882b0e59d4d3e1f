"""Rigged test scenes built in code: a sheet hanging from one bone, a body and its armature."""

import bpy
import numpy as np

from cloth_addon.blender import mesh_io


def grid_mesh(name: str, columns: int, rows: int, width: float, height: float, top: float):
    """A vertical sheet in the XZ plane, `columns` x `rows` vertices, its top row at z = top;
    vertex k is at column k % columns, row k // columns (row 0 at the top). Returns the object."""
    x = np.linspace(-width / 2, width / 2, columns)
    z = np.linspace(top, top - height, rows)
    vertices = np.stack([np.tile(x, rows), np.zeros(columns * rows), np.repeat(z, columns)], axis=1)
    corner = (np.arange(rows - 1)[:, None] * columns + np.arange(columns - 1)[None, :]).ravel()
    faces = np.stack([corner, corner + 1, corner + columns + 1, corner + columns], axis=1)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices.tolist(), [], faces.tolist())
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def one_bone_rig(name: str = "Rig", head=(0.0, 0.0, 0.0), tail=(0.0, 0.0, 1.0)):
    """An armature object with one bone "Bone" from head to tail (world = armature space)."""
    armature = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, armature)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = armature.edit_bones.new("Bone")
    bone.head, bone.tail = head, tail
    bpy.ops.object.mode_set(mode="OBJECT")
    return rig


def skin(obj, rig, bone: str = "Bone", weights=None):
    """Deform `obj` by `rig` through an Armature modifier, vertex group `bone` (weights: (n,)
    float, every vertex 1 by default)."""
    n = len(obj.data.vertices)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    group = obj.vertex_groups.new(name=bone)
    for value in np.unique(weights[weights > 0]):
        group.add([int(i) for i in np.flatnonzero(weights == value)], float(value), "REPLACE")
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    return modifier


def slide_bone(rig, distance: float, first: int, last: int, bone: str = "Bone") -> None:
    """Keyframe the bone moving `distance` m along world +X from frame `first` to `last` (Blender's
    default Bezier easing). The bone points along +Z with no roll: its local X is world X."""
    pose = rig.pose.bones[bone]
    pose.location = (0.0, 0.0, 0.0)
    pose.keyframe_insert("location", frame=first)
    pose.location = (distance, 0.0, 0.0)
    pose.keyframe_insert("location", frame=last)


def bone_offset(rig, bone: str = "Bone") -> np.ndarray:
    """(3,) world displacement of the bone's head from its rest position."""
    pose = rig.pose.bones[bone]
    matrix = mesh_io.matrix_to_numpy(rig.matrix_world)
    rest = mesh_io.to_world(matrix, np.array([rig.data.bones[bone].head_local]))
    return mesh_io.to_world(matrix, np.array([pose.head]))[0] - rest[0]


def tube(name: str, segments: int, rings: int, radii, heights, capped: bool = False):
    """A tube around the Z axis: `rings` rings of `segments` vertices, ring r at radius radii[r]
    and height heights[r] (ring 0 first), quads between rings; capped: an n-gon closes each end
    (a closed body). Returns the object."""
    angle = 2 * np.pi * np.arange(segments) / segments
    radii, heights = np.broadcast_arrays(np.asarray(radii, float), np.asarray(heights, float))
    vertices = np.concatenate([np.stack([r * np.cos(angle), r * np.sin(angle), np.full(segments, z)], axis=1)
                               for r, z in zip(radii, heights, strict=True)])
    ring = np.arange(segments)
    faces = [[r * segments + a, r * segments + b, (r + 1) * segments + b, (r + 1) * segments + a]
             for r in range(rings - 1) for a, b in zip(ring, np.roll(ring, -1), strict=True)]
    if capped:
        faces += [list(ring[::-1]), list((rings - 1) * segments + ring)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices.tolist(), [], [[int(i) for i in face] for face in faces])
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj
