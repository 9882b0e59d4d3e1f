"""Blender's object lifecycle around a live cloth: nothing a user does may crash or lose the mesh."""

import bpy
import numpy as np
import pytest
from conftest import evaluated_local, evaluated_world, make_cloth, make_grid, pin, play, raw_key, raw_vertices

import cloth_addon
from cloth_addon import core
from cloth_addon.blender import handlers, legacy, mesh_io, stage, store
from cloth_addon.blender.settings import settings_from


def frames_of(scene, obj, last):
    scene.frame_set(1)
    play(scene, last)
    return evaluated_local(obj)


def test_two_cloth_objects_at_once(scene):
    left = make_grid(location=(-2.0, 0.0, 1.0), name="Left")
    pin(left, [0, 5])
    right = make_grid(location=(2.0, 0.0, 1.0), name="Right")
    make_cloth(left)
    make_cloth(right)
    play(scene, 12)
    left_world, right_world = evaluated_world(left), evaluated_world(right)
    assert np.ptp(right_world[:, 2]) < 1e-5 and right_world[0, 2] < 0.7  # Right falls flat, unpinned
    assert np.ptp(left_world[:, 2]) > 0.2  # Left swings from its pins
    assert np.allclose(left_world[[0, 5]], mesh_io.to_world(
        mesh_io.matrix_to_numpy(left.matrix_world), mesh_io.read_positions(left.data)[[0, 5]]), atol=1e-6)
    assert {left.session_uid, right.session_uid} <= store.live_uids()


def test_renaming_between_frames_keeps_the_simulation(scene):
    obj = make_cloth(make_grid())
    play(scene, 5)
    live = store.find(obj.session_uid)
    obj.name = "Renamed"
    play(scene, 10)
    assert store.find(obj.session_uid) is live and live.last_frame == 10
    reference = make_cloth(make_grid(name="Reference"))
    assert np.allclose(frames_of(scene, reference, 10), evaluated_local(obj), atol=1e-6)


def test_deleting_the_cloth_or_a_collider_during_playback(scene):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.4, location=(0, 0, 0))
    ball = bpy.context.active_object
    ball.modifiers.new("Collision", "COLLISION")
    obj = make_cloth(make_grid(location=(0, 0, 0.6)))
    doomed = make_cloth(make_grid(location=(3, 0, 0.6), name="Doomed"))
    play(scene, 10)
    resting = evaluated_world(obj)[:, 2].max()
    uid = doomed.session_uid
    bpy.data.objects.remove(doomed)
    bpy.data.objects.remove(ball)
    play(scene, 30)  # no exception, and the cloth, no longer held, falls past where the ball was
    assert uid not in store.live_uids() and store.errors == {}
    assert evaluated_world(obj)[:, 2].max() < resting - 0.3


def test_save_and_reopen_resumes_from_the_start_frame(scene, tmp_path):
    obj = make_grid()
    pin(obj, [0, 5])
    make_cloth(obj)
    expected = frames_of(scene, obj, 12)
    path = str(tmp_path / "cloth.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert store.live_uids() == set()
    reopened = bpy.data.objects["Cloth"]
    scene = bpy.context.scene
    assert np.allclose(frames_of(scene, reopened, 12), expected, atol=1e-6)
    assert store.errors == {}


def test_a_file_of_release_0_1_0_is_upgraded_when_opened(scene, tmp_path):
    """Release 0.1.0 showed the simulation in a ClothSim shape key and had no cloth stage: opened
    now, the key is gone and the stage is there, and the cloth plays from its mesh as a cloth
    made today does (not from the frame the old key held, and not standing still)."""
    obj = make_grid()
    pin(obj, [0, 5])
    make_cloth(obj)
    expected = frames_of(scene, obj, 12)
    # what 0.1.0 saved: no stage, a Basis and the live key holding a simulated frame
    obj.modifiers.remove(stage.modifier(obj))
    obj.shape_key_add(name="Basis", from_mix=False)
    old = obj.shape_key_add(name=legacy.OLD_SIM_KEY, from_mix=False)
    old.value = 1.0
    old.data.foreach_set("co", expected.astype(np.float32).ravel())
    path = str(tmp_path / "old.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    reopened = bpy.data.objects["Cloth"]
    assert reopened.data.shape_keys.key_blocks.get(legacy.OLD_SIM_KEY) is None
    assert stage.modifier(reopened) is not None
    assert np.allclose(frames_of(bpy.context.scene, reopened, 12), expected, atol=1e-6)
    assert store.errors == {}
    assert not legacy.upgrade()  # nothing left to do
    # a user's own key of that name on a cloth made today is the user's
    reopened.shape_key_add(name=legacy.OLD_SIM_KEY, from_mix=False)
    assert not legacy.upgrade() and reopened.data.shape_keys.key_blocks.get(legacy.OLD_SIM_KEY) is not None


def test_changing_the_frame_rate_restarts_with_the_new_step(scene):
    obj = make_cloth(make_grid(), air_drag=0.0)
    at_24 = frames_of(scene, obj, 10)
    scene.render.fps = 12
    at_12 = frames_of(scene, obj, 10)
    assert store.find(obj.session_uid).sim.settings.dt == 1 / 12
    # ten frames of 1/12 s fall four times as far as ten of 1/24 s
    rest = mesh_io.read_positions(obj.data)[:, 2].mean()
    assert (rest - at_12[:, 2].mean()) / (rest - at_24[:, 2].mean()) > 3.9


def test_changing_the_frame_range(scene):
    obj = make_cloth(make_grid(), frame_start=1, frame_end=20)
    full = frames_of(scene, obj, 20)
    obj.cloth_addon.frame_end = 8
    held = frames_of(scene, obj, 20)  # after the end frame the cloth holds its last frame
    scene.frame_set(8)
    assert np.array_equal(held, evaluated_local(obj))
    assert not np.allclose(held, full, atol=1e-3)
    obj.cloth_addon.frame_start = 5
    scene.frame_set(5)
    assert np.allclose(evaluated_local(obj), mesh_io.read_positions(obj.data), atol=1e-6)


def test_users_shape_keys_are_kept_and_still_work(scene):
    obj = make_grid()
    obj.shape_key_add(name="Basis", from_mix=False)
    bump = obj.shape_key_add(name="Bump", from_mix=False)
    points = mesh_io.read_key(bump)
    points[:, 2] += 0.1
    mesh_io.write_key(bump, points)
    bump.value = 0.0
    before = {b.name: raw_key(b).tobytes() for b in obj.data.shape_keys.key_blocks}
    make_cloth(obj, frame_start=1, frame_end=6)
    play(scene, 6)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    assert bpy.ops.cloth_addon.remove_cloth() == {"FINISHED"}
    after = {b.name: raw_key(b).tobytes() for b in obj.data.shape_keys.key_blocks}
    assert after == before
    scene.frame_set(1)
    bump.value = 1.0
    assert np.allclose(evaluated_local(obj)[:, 2], mesh_io.read_positions(obj.data)[:, 2] + 0.1, atol=1e-6)


def test_modifiers_apply_on_top_of_the_simulated_original_mesh(scene):
    obj = make_grid(cuts=5)
    pin(obj, [0, 4])
    obj.modifiers.new("Subdivision", "SUBSURF").levels = 1
    make_cloth(obj)
    play(scene, 10)
    live = store.find(obj.session_uid)
    original = len(obj.data.vertices)
    assert live.sim.model.n_particles == original  # the mesh before modifiers
    evaluated = evaluated_local(obj)
    assert len(evaluated) > original  # the subdivision runs on the simulated shape
    assert evaluated[:, 2].min() < mesh_io.read_positions(obj.data)[:, 2].min() - 0.1


def test_an_edge_only_mesh_is_a_rope(scene):
    mesh = bpy.data.meshes.new("Rope")
    points = [(0.1 * k, 0.0, 1.0) for k in range(11)]
    mesh.from_pydata(points, [(k, k + 1) for k in range(10)], [])
    obj = bpy.data.objects.new("Rope", mesh)
    scene.collection.objects.link(obj)
    pin(obj, [0])
    make_cloth(obj)
    lowest = np.inf
    for frame in range(2, 49):
        play(scene, frame)
        lowest = min(lowest, evaluated_world(obj)[-1, 2])
    world = evaluated_world(obj)
    assert np.allclose(world[0], points[0], atol=1e-6)
    assert lowest < 0.2  # it swung down, through hanging about its length (1 m) below the pin
    assert np.abs(np.linalg.norm(np.diff(world, axis=0), axis=1) - 0.1).max() < 0.02


def test_property_defaults_match_the_core(scene):
    obj = make_grid()
    props, defaults = obj.cloth_addon, core.Settings()
    for field in ("density", "stretch_stiffness", "shear_stiffness", "bend_stiffness", "damping",
                  "spring_damping", "air_drag", "iterations", "substeps", "friction", "collision_distance"):
        assert getattr(props, field) == np.float32(getattr(defaults, field)), field
    # and an untouched object simulates with the core's defaults (the scene gives dt and gravity)
    converted = settings_from(props, scene)
    for field in ("solver", "tear_factor", "self_collision", "self_collision_distance", "wind"):
        assert getattr(converted, field) == getattr(defaults, field), field
    assert converted.gravity == pytest.approx(defaults.gravity)


def test_unregister_during_playback_removes_the_handler_and_shows_the_mesh(scene):
    obj = make_cloth(make_grid())
    play(scene, 8)
    before = raw_vertices(obj.data)
    assert not np.allclose(evaluated_local(obj).ravel(), before, atol=1e-3)
    cloth_addon.unregister()
    try:
        names = [getattr(h, "__name__", "") for h in bpy.app.handlers.frame_change_post]
        assert handlers.cloth_addon_frame_change.__name__ not in names
        play(scene, 12)  # frames change, nothing runs, nothing breaks
        assert np.allclose(evaluated_local(obj).ravel(), before, atol=1e-6)
    finally:
        cloth_addon.register()
    play(scene, 14)  # enabled again: the cloth shows again
    assert not np.allclose(evaluated_local(obj).ravel(), before, atol=1e-3)
