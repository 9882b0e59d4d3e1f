"""Tearing shows as a real cut (split edges) live and baked; freeing and removing restore the mesh."""

import bpy
import numpy as np
from conftest import evaluated_local, make_cloth, make_grid, pin, play, raw_vertices

from cloth_addon.blender import mesh_io, stage, tearing


def _faces(mesh):
    corners = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", corners)
    return corners


def _heavy_pinned_sheet(scene):
    scene.frame_start, scene.frame_end = 1, 16
    obj = make_grid(cuts=8, size=1.0, location=(0, 0, 1.0))
    top = np.flatnonzero(np.isclose([v.co.y for v in obj.data.vertices], 0.5))
    pin(obj, top)
    # A heavy, weak sheet hanging from one edge: the springs under the pins stretch past 1.15.
    make_cloth(obj, density=3.0, stretch_stiffness=20.0, shear_stiffness=5.0, use_tearing=True,
               tear_factor=1.15)
    return obj


def test_torn_sheet_is_cut_live_and_baked_and_restored_by_free_and_remove(scene):
    obj = _heavy_pinned_sheet(scene)
    mesh = obj.data
    vertices, corners, count = raw_vertices(mesh), _faces(mesh), len(mesh.vertices)
    play(scene, 16)
    assert obj.modifiers.get(tearing.MODIFIER) is not None
    assert len(evaluated_local(obj)) > count, "the cut splits vertices in the viewport"

    scene.frame_set(1)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    scene.frame_set(16)
    baked = evaluated_local(obj)
    assert len(baked) > count, "the baked result is cut"
    torn = np.empty(len(mesh.edges), dtype=bool)
    mesh.attributes[tearing.ATTRIBUTE].data.foreach_get("value", torn)
    assert 0 < torn.sum() < len(torn)

    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    scene.frame_set(1)
    assert len(mesh.vertices) == count and np.array_equal(raw_vertices(mesh), vertices)
    assert np.array_equal(_faces(mesh), corners)
    assert tearing.ATTRIBUTE not in mesh.attributes and obj.modifiers.get(tearing.MODIFIER) is None
    assert len(evaluated_local(obj)) == count

    play(scene, 16)  # torn again live, then removed with the cloth
    assert obj.modifiers.get(tearing.MODIFIER) is not None
    assert bpy.ops.cloth_addon.remove_cloth() == {"FINISHED"}
    assert obj.modifiers.get(tearing.MODIFIER) is None and tearing.ATTRIBUTE not in mesh.attributes
    assert mesh.shape_keys is None
    assert len(mesh.vertices) == count and np.array_equal(raw_vertices(mesh), vertices)
    assert np.array_equal(_faces(mesh), corners)
    assert np.array_equal(evaluated_local(obj).astype(np.float32).ravel(), vertices)
    assert bpy.data.node_groups.get(tearing.NODE_GROUP) is None


def test_scrubbing_back_before_the_tear_shows_no_cut(scene):
    obj = _heavy_pinned_sheet(scene)
    count = len(obj.data.vertices)
    play(scene, 16)
    scene.frame_set(2)
    assert len(evaluated_local(obj)) == count
    scene.frame_set(16)
    assert len(evaluated_local(obj)) > count


def test_tearing_of_objects_simulated_together_cuts_the_one_that_tore(scene):
    scene.frame_start, scene.frame_end = 1, 16
    sheets = []
    # Tearing is stepped with the group's first object's settings ("A ..."): it tears at 1.15, but
    # only the heavy, weak "B ..." stretches that far.
    for name, x, material in (("A Strong", -1.5, {}),
                              ("B Weak", 1.5, {"density": 3.0, "stretch_stiffness": 20.0,
                                               "shear_stiffness": 5.0})):
        obj = make_grid(cuts=8, size=1.0, location=(x, 0, 1.0), name=name)
        pin(obj, np.flatnonzero(np.isclose([v.co.y for v in obj.data.vertices], 0.5)))
        sheets.append(make_cloth(obj, use_tearing=True, tear_factor=1.15, **material))
    strong, weak = sheets
    play(scene, 16)
    assert strong.modifiers.get(tearing.MODIFIER) is None and tearing.ATTRIBUTE not in strong.data.attributes
    assert weak.modifiers.get(tearing.MODIFIER) is not None
    mesh = weak.data
    cut = np.empty(len(mesh.edges), dtype=bool)
    mesh.attributes[tearing.ATTRIBUTE].data.foreach_get("value", cut)
    edges = mesh_io.read_edges(mesh)[cut]
    rest = mesh_io.read_positions(mesh)
    now = mesh_io.read_vectors(mesh.attributes[stage.RESULT_ATTRIBUTE].data, "vector")
    length = lambda x: np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)  # noqa: E731
    # the cut edges are the weak sheet's own torn springs: stretched past the tear factor
    assert 0 < len(edges) < len(cut) and np.all(length(now) > 1.15 * length(rest))
