"""Live playback through the frame_change_post handler, in world space."""

import math

import bpy
import numpy as np
import pytest
from conftest import (
    evaluated_local,
    evaluated_world,
    make_cloth,
    make_grid,
    pin,
    play,
    raw_vertices,
    select_only,
)

from cloth_addon import core
from cloth_addon.blender import colliders, mesh_io, stage, store


@pytest.mark.parametrize("solver", ["FAST_MASS_SPRING", "VERLET"])
def test_pinned_grid_falls_pins_stay_and_basis_is_untouched(scene, solver):
    obj = make_grid(cuts=8)
    pin(obj, [0, 7])  # two corners of the first row
    rest = mesh_io.read_positions(obj.data)
    before_vertices = raw_vertices(obj.data)
    make_cloth(obj, solver=solver)
    play(scene, 20)
    live = evaluated_local(obj)
    assert np.all(live[[0, 7]] == np.float32(rest[[0, 7]]))
    free = np.setdiff1d(np.arange(len(rest)), [0, 7])
    # every free vertex moved and the sheet fell (near a pin one may have swung back above its rest)
    moved = np.linalg.norm(live[free] - rest[free], axis=1)
    assert np.all(moved > 1e-3) and (rest[free, 2] - live[free, 2]).max() > 0.2, "the sheet fell"
    assert np.array_equal(raw_vertices(obj.data), before_vertices)
    assert obj.data.shape_keys is None, "no shape key is added to show the cloth"
    assert [m.name for m in obj.modifiers] == [stage.MODIFIER]


def test_scrubbing_back_shows_the_frame_computed_before(scene):
    obj = make_cloth(make_grid())
    play(scene, 8)
    at_5 = None
    scene.frame_set(1)
    play(scene, 5)
    at_5 = evaluated_local(obj)
    play(scene, 12)
    scene.frame_set(5)
    assert np.array_equal(evaluated_local(obj), at_5)
    scene.frame_set(1)
    assert np.allclose(evaluated_local(obj), mesh_io.read_positions(obj.data), atol=1e-6)


def test_jump_forward_simulates_the_frames_in_between(scene):
    obj = make_cloth(make_grid())
    play(scene, 10)
    stepped = evaluated_local(obj)
    assert bpy.ops.cloth_addon.reset() == {"FINISHED"}  # forget the computed frames
    scene.frame_set(10)
    assert np.allclose(evaluated_local(obj), stepped, atol=1e-6)


def test_soft_pins_hang_between_free_and_rigid(scene):
    obj = make_grid(cuts=6)
    group = pin(obj, [0, 5])
    middle = len(obj.data.vertices) // 2  # far from the rigid pins, so it sags a lot when free
    group.add([middle], 0.5, "REPLACE")
    make_cloth(obj, pin_stiffness=1.0)
    free = make_cloth(make_grid(cuts=6, location=(3.0, 0.0, 1.0), name="Free"))
    pin(free, [0, 5])
    select_only(free)
    bpy.ops.cloth_addon.reset()
    play(scene, 15)
    rest_z = mesh_io.read_positions(obj.data)[middle, 2]
    soft_drop = rest_z - evaluated_local(obj)[middle, 2]
    free_drop = rest_z - evaluated_local(free)[middle, 2]
    assert 0.0 < soft_drop < 0.6 * free_drop  # pulled half way back once a frame: 0.52 of it at 5 substeps


def test_rotated_and_scaled_object_falls_along_world_minus_z(scene):
    obj = make_cloth(make_grid(location=(1.0, 2.0, 3.0), rotation=(0.7, 0.3, 1.1), scale=(2.0, 0.5, 1.5)),
                     air_drag=0.0, damping=0.0)
    start = evaluated_world(obj)
    play(scene, 12)
    moved = evaluated_world(obj) - start
    # No drag or damping, springs at rest length: the whole sheet free-falls along world -Z.
    t = 11 / 24
    assert np.allclose(moved[:, :2], 0.0, atol=1e-4)
    assert np.allclose(moved[:, 2], -0.5 * 9.81 * t * t, rtol=0.1)


def test_pins_follow_the_animated_object(scene):
    obj = make_grid(cuts=6)
    pin(obj, [0, 5])
    obj.keyframe_insert("location", frame=1)
    obj.location = (2.0, 0.0, 1.0)
    obj.rotation_euler = (0.0, 0.0, math.pi / 2)
    obj.keyframe_insert("location", frame=10)
    obj.keyframe_insert("rotation_euler", frame=10)
    scene.frame_set(1)
    make_cloth(obj)
    at_start = evaluated_world(obj)[[0, 5]]
    play(scene, 10)
    world = evaluated_world(obj)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    expected = mesh_io.to_world(matrix, mesh_io.read_positions(obj.data)[[0, 5]])
    assert np.allclose(world[[0, 5]], expected, atol=1e-5)
    assert np.all(np.linalg.norm(world[[0, 5]] - at_start, axis=1) > 1.0), "the pins travelled with it"


def _collider(kind):
    if kind == "sphere":
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, segments=16, ring_count=8, location=(0, 0, 0))
    else:
        bpy.ops.mesh.primitive_plane_add(size=4, location=(0, 0, 0))
    obj = bpy.context.active_object
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def test_a_sphere_collision_object_stops_the_cloth(scene):
    sphere = _collider("sphere")
    obj = make_cloth(make_grid(cuts=10, size=1.2, location=(0, 0, 0.8)))
    play(scene, 30)
    world = evaluated_world(obj)
    # The collider is the sphere's mesh (16 x 8 facets), so distances are to its faces.
    vertices, triangles, _, _ = colliders.world_mesh(sphere, bpy.context.evaluated_depsgraph_get())
    _, distance, inside, _ = core.MeshCollider(vertices, triangles).closest(world)
    reach = sphere.collision.thickness_outer + obj.cloth_addon.collision_distance
    assert not inside.any() and distance.min() >= reach * 0.99
    assert world[:, 2].max() > 0.5, "the cloth rests on the ball instead of falling past it"
    assert store.find(obj.session_uid).unsupported == []


def test_a_plane_collision_object_is_a_floor(scene):
    floor = _collider("plane")
    floor.location.z = -0.2
    obj = make_cloth(make_grid(location=(0, 0, 0.3)))
    play(scene, 30)
    world = evaluated_world(obj)
    assert world[:, 2].min() >= -0.2 + floor.collision.thickness_outer * 0.99


def test_a_collider_without_faces_is_named_and_ignored(scene):
    mesh = bpy.data.meshes.new("Wire")
    mesh.from_pydata([(-1.0, -1.0, 0.0), (1.0, -1.0, 0.0), (1.0, 1.0, 0.0), (-1.0, 1.0, 0.0)],
                     [(0, 1), (1, 2), (2, 3), (3, 0)], [])
    wire = bpy.data.objects.new("Wire", mesh)
    scene.collection.objects.link(wire)
    select_only(wire)
    bpy.ops.object.modifier_add(type="COLLISION")
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(3.0, 0.0, 0.0))
    bpy.ops.object.modifier_add(type="COLLISION")  # a cube: used, so not named
    obj = make_cloth(make_grid(location=(0, 0, 0.3)))
    play(scene, 12)
    assert store.find(obj.session_uid).unsupported == [wire.name]
    assert evaluated_world(obj)[:, 2].max() < -0.1, "the cloth fell through the wire frame"


def test_wind_field_pushes_along_its_z_axis(scene):
    bpy.ops.object.effector_add(type="WIND", rotation=(0.0, math.pi / 2, 0.0))  # field Z = world +X
    bpy.context.active_object.field.strength = 10.0
    obj = make_grid(rotation=(math.pi / 2, 0.0, 0.0))  # a vertical sheet facing +-X... Y
    obj.rotation_euler = (0.0, math.pi / 2, 0.0)  # normal along world X, so the wind hits it
    pin(obj, range(6))
    make_cloth(obj)
    start = evaluated_world(obj)
    play(scene, 15)
    assert (evaluated_world(obj) - start)[:, 0].mean() > 0.02


def test_file_load_clears_the_simulations(scene):
    obj = make_cloth(make_grid())
    play(scene, 3)
    assert obj.session_uid in store.live_uids()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert store.live_uids() == set()


def test_remove_cloth_restores_the_original_exactly(scene):
    obj = make_grid()
    before = raw_vertices(obj.data)
    make_cloth(obj)
    play(scene, 5)
    assert bpy.ops.cloth_addon.remove_cloth() == {"FINISHED"}
    assert obj.data.shape_keys is None
    assert np.array_equal(raw_vertices(obj.data), before)
    assert np.array_equal(evaluated_local(obj).astype(np.float32).ravel(), before)
    play(scene, 8)
    assert np.array_equal(evaluated_local(obj).astype(np.float32).ravel(), before)


def test_replay_uses_the_cache_until_a_collider_moves(scene):
    ball = _collider("sphere")
    obj = make_cloth(make_grid(cuts=8, size=1.2, location=(0, 0, 0.8)))
    play(scene, 10)
    first = evaluated_local(obj)
    live = store.find(obj.session_uid)
    scene.frame_set(1)
    play(scene, 10)
    assert store.find(obj.session_uid) is live and live.last_frame == 10
    assert np.array_equal(evaluated_local(obj), first)
    scene.frame_set(1)
    ball.location.x = 0.4  # the scene changed: back at the start, the simulation starts over
    scene.frame_set(1)
    play(scene, 10)
    assert not np.allclose(evaluated_local(obj), first, atol=1e-3)
