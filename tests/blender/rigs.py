"""Rigged test scenes built in code: a sheet hanging from one bone, a body and its armature
(on the demo character's builders, tools/character.py)."""

import numpy as np

from cloth_addon.blender import mesh_io
from tools import character
from tools.character import tube  # noqa: F401  (the tests build bodies and skirts with it)


def grid_mesh(name: str, columns: int, rows: int, width: float, height: float, top: float):
    """A vertical sheet in the XZ plane, `columns` x `rows` vertices, its top row at z = top;
    vertex k is at column k % columns, row k // columns (row 0 at the top). Returns the object."""
    return character.mesh_object(name, *character.sheet_arrays(columns, rows, width, height, top, 0.0))


def one_bone_rig(name: str = "Rig", head=(0.0, 0.0, 0.0), tail=(0.0, 0.0, 1.0)):
    """An armature object with one bone "Bone" from head to tail (world = armature space)."""
    return character.armature(name, {"Bone": (head, tail, None)})


def skin(obj, rig, bone: str = "Bone", weights=None):
    """Deform `obj` by `rig` through an Armature modifier, vertex group `bone` (weights: (n,)
    float, every vertex 1 by default)."""
    weights = np.ones(len(obj.data.vertices)) if weights is None else weights
    return character.skin(obj, rig, {bone: weights})


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
