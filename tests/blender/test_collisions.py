"""Collision objects as mesh colliders (any shape, animated, deforming) and self-collision settings."""

import bpy
import numpy as np
import pytest
from conftest import action_fcurves, evaluated_world, make_cloth, make_grid, play

from cloth_addon import core
from cloth_addon.blender import colliders, store


def _collision(obj):
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def _rise_linearly(obj, z, last):
    """Keyframe obj from where it is at frame 1 to height z at frame `last`, linearly."""
    obj.keyframe_insert("location", frame=1)
    obj.location.z = z
    obj.keyframe_insert("location", frame=last)
    for curve in action_fcurves(obj):
        for point in curve.keyframe_points:
            point.interpolation = "LINEAR"


def _inside_or_closer(obj, world, reach):
    vertices, triangles, _, _ = colliders.world_mesh(obj, bpy.context.evaluated_depsgraph_get())
    _, distance, inside, _ = core.MeshCollider(vertices, triangles).closest(world, max_distance=1.0)
    return inside.any() or distance.min() < reach * 0.99


def test_a_box_collider_holds_the_cloth_as_a_mesh(scene):
    bpy.ops.mesh.primitive_cube_add(size=0.6, location=(0, 0, 0.3))
    box = _collision(bpy.context.active_object)
    obj = make_cloth(make_grid(cuts=12, size=1.2, location=(0, 0, 0.9)))
    play(scene, 30)
    world = evaluated_world(obj)
    reach = box.collision.thickness_outer + obj.cloth_addon.collision_distance
    assert not _inside_or_closer(box, world, reach)
    assert world[:, 2].max() > 0.55, "the cloth rests on the box"
    assert world[:, 2].min() < 0.45, "and hangs down its sides"
    assert store.find(obj.session_uid).unsupported == []


def test_a_fast_animated_plane_does_not_tunnel_and_is_updated_not_rebuilt(scene):
    bpy.ops.mesh.primitive_plane_add(size=3.0, location=(0, 0, -0.6))
    plane = _collision(bpy.context.active_object)
    _rise_linearly(plane, 5.4, 7)  # 1 m per frame upwards for 6 frames
    scene.gravity = (0.0, 0.0, 0.0)
    scene.frame_set(1)
    obj = make_cloth(make_grid(cuts=6, size=0.6, location=(0, 0, 0.0)))
    scene.frame_set(2)
    first = store.find(obj.session_uid).kept_colliders[plane.session_uid]
    for frame in range(3, 8):
        scene.frame_set(frame)
        plane_z = plane.matrix_world.translation.z
        assert evaluated_world(obj)[:, 2].min() >= plane_z + obj.cloth_addon.collision_distance - 1e-4, frame
    assert store.find(obj.session_uid).kept_colliders[plane.session_uid] is first


def test_a_deforming_collider_is_read_every_frame(scene):
    # A plane raised by a shape key (no transform change): the cloth above it is lifted.
    bpy.ops.mesh.primitive_plane_add(size=3.0, location=(0, 0, 0))
    floor = _collision(bpy.context.active_object)
    floor.shape_key_add(name="Basis")
    raised = floor.shape_key_add(name="Raised")
    raised.data.foreach_set("co", (np.array([v.co[:] for v in floor.data.vertices]) + (0, 0, 0.5)).ravel())
    raised.value = 0.0
    raised.keyframe_insert("value", frame=1)
    raised.value = 1.0
    raised.keyframe_insert("value", frame=11)
    scene.frame_set(1)  # the keyframes, not the value last typed, decide where the collider starts
    obj = make_cloth(make_grid(cuts=6, size=0.6, location=(0, 0, 0.05)))
    play(scene, 11)
    assert evaluated_world(obj)[:, 2].min() >= 0.5 + obj.cloth_addon.collision_distance - 1e-4


def test_self_collision_settings_drive_the_core(scene):
    obj = make_cloth(make_grid(), use_self_collision=True, self_distance=0.02, collision_distance=0.005)
    sim = store.find(obj.session_uid).sim
    assert sim.settings.self_collision and sim.settings.self_collision_distance == np.float32(0.02)
    assert abs(sim.settings.collision_distance - 0.005) < 1e-7
    obj.cloth_addon.use_self_collision = False
    obj.cloth_addon.self_distance = 0.0  # automatic: half the median edge length
    play(scene, 2)
    sim = store.find(obj.session_uid).sim
    assert not sim.settings.self_collision and sim.settings.self_collision_distance is None
    assert sim.self_collision_distance == pytest.approx(0.5 * sim.model.median_edge_length)
    assert abs(sim.settings.collision_distance - 0.005) < 1e-7


def test_sphere_shaped_colliders_are_exact_balls_and_other_shapes_meshes(scene):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0, 0, 0.2))
    _collision(bpy.context.active_object)
    bpy.ops.mesh.primitive_ico_sphere_add(radius=0.3, subdivisions=3, location=(2, 0, 0))
    _collision(bpy.context.active_object)
    bpy.ops.mesh.primitive_cube_add(size=0.6, location=(-2, 0, 0))  # corners equidistant, faces not
    _collision(bpy.context.active_object)
    found, _ = colliders.scene_colliders(scene, bpy.context.evaluated_depsgraph_get(), exclude=-1)
    balls = sorted((c for c in found if isinstance(c, core.SphereCollider)), key=lambda c: c.radius)
    assert [type(c).__name__ for c in found].count("MeshCollider") == 1
    assert [round(c.radius, 6) for c in balls] == [0.3, 0.5]
    assert np.allclose(balls[1].center, (0, 0, 0.2), atol=1e-6)


def test_a_moving_ball_is_swept_over_the_substeps_as_the_core_sweeps_it(scene):
    """The add-on keeps one ball per Collision object from frame to frame, so that its motion
    between frames is spread over the substeps: the cloth it strikes moves exactly as in the core
    with one SphereCollider moved once a frame (a new ball every frame was taken as standing still
    and jumped its whole frame's motion at the first substep)."""
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.2, location=(0.0, 0.0, -0.5))
    ball = _collision(bpy.context.active_object)
    _rise_linearly(ball, 0.7, 13)  # 0.1 m a frame, up through the sheet
    scene.gravity = (0.0, 0.0, 0.0)
    scene.frame_set(1)
    obj = make_cloth(make_grid(cuts=12, size=1.0, location=(0.0, 0.0, 0.0)))
    sim = store.find(obj.session_uid).sim
    core_sim = core.Simulation(None, None, sim.settings, _model=sim.model)
    moved = None
    for frame in range(2, 14):
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        (now,), _ = colliders.scene_colliders(scene, depsgraph, exclude=obj.session_uid)
        if moved is None:
            moved = core.SphereCollider(now.center, now.radius, now.thickness, now.friction)
            core_sim.colliders = [moved]
        moved.center = now.center
        core_sim.step(1)
    world = evaluated_world(obj)
    assert world[:, 2].max() > 0.5, "the ball carried the sheet up"
    assert np.abs(world - core_sim.positions).max() < 1e-4
