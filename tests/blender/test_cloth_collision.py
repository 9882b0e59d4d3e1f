"""Cloth objects that collide with each other (use_cloth_collision): simulated together, both ways."""

import importlib.util
from pathlib import Path

import bpy
import numpy as np
import pytest
from conftest import evaluated_world, make_cloth, make_grid, play, raw_vertices

from cloth_addon.blender import ids, mesh_io, store

# The exact crossing counter of the core's self-collision tests (a k-d tree for candidates, an
# exact segment-triangle test), loaded by path: tests/core and tests/blender are separate roots.
_spec = importlib.util.spec_from_file_location(
    "core_self_collision_tests", Path(__file__).resolve().parents[1] / "core" / "test_self_collision.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
edge_triangle_crossings = _module.edge_triangle_crossings


def _floor():
    bpy.ops.mesh.primitive_plane_add(size=4.0, location=(0.0, 0.0, 0.0))
    floor = bpy.context.active_object
    floor.modifiers.new("Collision", "COLLISION")
    return floor


def _two_sheets(upper_collides=True, solver="FAST_MASS_SPRING"):
    """Two 10 x 10 sheets 0.3 m apart over a Collision floor: the upper, smaller and turned a little
    (its edges across the lower's), lands entirely on the lower."""
    _floor()
    lower = make_cloth(make_grid(cuts=10, size=1.0, location=(0.0, 0.0, 0.4), name="Lower"), solver=solver)
    upper = make_grid(cuts=10, size=0.7, location=(0.0, 0.0, 0.7), rotation=(0.0, 0.0, 0.3), name="Upper")
    upper.cloth_addon.use_cloth_collision = upper_collides
    make_cloth(upper, solver=solver)
    return lower, upper


def _combined(objects):
    """(positions, edges, triangles) of several objects' evaluated meshes as one mesh, world space."""
    positions, edges, triangles, offset = [], [], [], 0
    for obj in objects:
        positions.append(evaluated_world(obj))
        edges.append(mesh_io.read_edges(obj.data) + offset)
        triangles.append(mesh_io.read_triangles(obj.data) + offset)
        offset += len(obj.data.vertices)
    return np.concatenate(positions), np.concatenate(edges), np.concatenate(triangles)


def _crossings(objects) -> int:
    return edge_triangle_crossings(*_combined(objects))


@pytest.mark.parametrize("solver", ["FAST_MASS_SPRING", "VERLET"])
def test_two_cloth_objects_fall_onto_each_other_without_crossing(scene, solver):
    lower, upper = _two_sheets(solver=solver)
    live = store.find(lower.session_uid)
    assert store.find(upper.session_uid) is live and [m.name for m in live.members] == ["Lower", "Upper"]
    assert live.sim.settings.self_collision
    # each sheet's own Self Collision is off: they collide with each other, not with themselves
    assert live.sim.part_self_collision == [False, False]
    for frame in range(2, 41):
        scene.frame_set(frame)
        assert _crossings([lower, upper]) == 0, frame
        assert evaluated_world(upper)[:, 2].mean() > evaluated_world(lower)[:, 2].mean(), frame
    low, high = evaluated_world(lower), evaluated_world(upper)
    assert low[:, 2].max() < 0.05, "the lower sheet lies on the floor"
    # The upper lies on the lower, a gap apart, nowhere under or in it.
    assert high[:, 2].min() > low[:, 2].max() + 0.5 * live.sim.self_collision_distance
    assert store.find(lower.session_uid) is live and live.last_frame == 40


def test_with_cloth_collision_off_they_pass_through_each_other(scene):
    lower, upper = _two_sheets(upper_collides=False)
    assert store.find(lower.session_uid) is not store.find(upper.session_uid)
    play(scene, 40)
    low, high = evaluated_world(lower), evaluated_world(upper)
    # Both end flat on the floor, in one plane: the upper went through the lower.
    assert abs(high[:, 2].mean() - low[:, 2].mean()) < 1e-3 and high[:, 2].max() < 0.05


def test_baking_one_of_them_bakes_both_and_leaves_the_meshes_alone(scene):
    lower, upper = _two_sheets()
    scene.frame_end = lower.cloth_addon.frame_end = upper.cloth_addon.frame_end = 20
    before = {obj.name: raw_vertices(obj.data) for obj in (lower, upper)}
    scene.frame_set(1)
    bpy.ops.object.select_all(action="DESELECT")
    lower.select_set(True)
    bpy.context.view_layer.objects.active = lower
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    for obj in (lower, upper):
        keys = [block.name for block in obj.data.shape_keys.key_blocks
                if block.name.startswith(ids.BAKE_KEY_PREFIX)]
        assert obj.cloth_addon.is_baked and len(keys) == 20, obj.name
    for frame in (5, 12, 20):
        scene.frame_set(frame)
        assert _crossings([lower, upper]) == 0, frame
    assert evaluated_world(upper)[:, 2].min() > evaluated_world(lower)[:, 2].max() + 0.02
    # Free Bake works per object: the upper is live again, simulated alone; the lower stays baked.
    bpy.ops.object.select_all(action="DESELECT")
    upper.select_set(True)
    bpy.context.view_layer.objects.active = upper
    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    assert not upper.cloth_addon.is_baked and lower.cloth_addon.is_baked
    scene.frame_set(1)
    scene.frame_set(2)
    assert [m.name for m in store.find(upper.session_uid).members] == ["Upper"]
    assert bpy.ops.cloth_addon.remove_cloth() == {"FINISHED"}
    lower.select_set(True)
    assert bpy.ops.cloth_addon.remove_cloth() == {"FINISHED"}
    for obj in (lower, upper):
        assert np.array_equal(raw_vertices(obj.data), before[obj.name]), obj.name
        assert obj.data.shape_keys is None, obj.name


def _hanging(name, x, **settings):
    """A 1 m, 10 x 10 sheet held by its top row at z = 2.5, hanging in the XZ plane."""
    obj = make_grid(cuts=10, size=1.0, location=(x, 0.0, 2.0), rotation=(np.pi / 2, 0.0, 0.0), name=name)
    group = obj.vertex_groups.new(name="Top")
    local = mesh_io.read_positions(obj.data)
    group.add([int(i) for i in np.flatnonzero(local[:, 1] > local[:, 1].max() - 1e-6)], 1.0, "REPLACE")
    return make_cloth(obj, pin_group="Top", **settings)


def _lengths(scene, objects) -> list:
    """How far each hanging sheet reaches below its pins after 30 frames from the start."""
    scene.frame_set(1)
    play(scene, 30)
    return [2.5 - evaluated_world(obj)[:, 2].min() for obj in objects]


def test_each_object_keeps_its_own_material(scene):
    heavy = _hanging("Heavy", -1.0, density=1.0, stretch_stiffness=40.0)
    light = _hanging("Light", 1.0)
    together = _lengths(scene, (heavy, light))
    live = store.find(heavy.session_uid)
    assert live is store.find(light.session_uid)
    # masses from each object's own density over its 1 m^2
    assert live.sim.model.mass[live.member(heavy.session_uid).part].sum() == pytest.approx(1.0, rel=1e-6)
    assert live.sim.model.mass[live.member(light.session_uid).part].sum() == pytest.approx(0.15, rel=1e-6)
    assert together[1] == pytest.approx(1.0, abs=0.02)  # barely stretched
    assert together[0] > 1.04  # the heavy, soft one stretches
    for obj in (heavy, light):
        obj.cloth_addon.use_cloth_collision = False
    apart = _lengths(scene, (heavy, light))
    assert store.find(heavy.session_uid) is not store.find(light.session_uid)
    assert together == pytest.approx(apart, abs=1e-3)  # as if each were simulated alone


def test_editing_a_member_drops_the_group_and_frame_ranges_split_it(scene):
    lower, upper = _two_sheets()
    play(scene, 3)
    assert store.find(upper.session_uid) is store.find(lower.session_uid) is not None
    lower.cloth_addon.density = 0.3
    assert store.find(upper.session_uid) is None and store.find(lower.session_uid) is None
    upper.cloth_addon.frame_start = 2
    scene.frame_set(4)
    assert store.find(upper.session_uid) is not store.find(lower.session_uid)
    assert not store.find(lower.session_uid).sim.settings.self_collision  # alone: its own switch
