"""The scene's Wind force fields reach the core as core.WindField, every frame."""

import math

import bpy
import numpy as np
import pytest
from conftest import evaluated_world, make_cloth, make_grid, pin, play

from cloth_addon.blender import store, wind


def _wind(location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0), **settings):
    bpy.ops.object.effector_add(type="WIND", location=location, rotation=rotation)
    obj = bpy.context.active_object
    for name, value in settings.items():
        setattr(obj.field, name, value)
    return obj


def test_a_wind_fields_settings_reach_the_core(scene):
    _wind(location=(1.0, 2.0, 3.0), rotation=(0.0, math.pi / 2, 0.0), strength=6.0, noise=1.5, seed=11,
          shape="POINT", falloff_type="TUBE", falloff_power=2.0, use_min_distance=True, distance_min=0.5,
          use_max_distance=True, distance_max=4.0, z_direction="POSITIVE", radial_falloff=1.0,
          use_radial_max=True, radial_max=3.0)
    hidden = _wind(strength=100.0)
    hidden.hide_viewport = True
    bpy.ops.object.effector_add(type="FORCE")  # not wind: ignored
    fields = wind.scene_wind_fields(scene, bpy.context.evaluated_depsgraph_get())
    assert len(fields) == 1
    field = fields[0]
    assert field.location == pytest.approx((1.0, 2.0, 3.0))
    assert field.direction == pytest.approx((1.0, 0.0, 0.0), abs=1e-6)  # the object's Z, turned to +X
    assert (field.strength, field.noise, field.seed) == (pytest.approx(6.0), pytest.approx(1.5), 11)
    assert (field.shape, field.falloff, field.z_direction) == ("point", "tube", "positive")
    assert (field.power, field.min_distance, field.max_distance) == pytest.approx((2.0, 0.5, 4.0))
    assert field.use_min_distance and field.use_max_distance and field.use_radial_max
    assert (field.radial_power, field.radial_max) == pytest.approx((1.0, 3.0))
    # Blender's falloff then: 1 m ahead along +X and 2 m off the axis, behind the field: nothing
    assert field.falloff_factor(np.array([[2.0, 2.0, 5.0]]))[0] == pytest.approx(1.0 / 1.5 ** 2 / 3.0)
    assert field.falloff_factor(np.array([[0.0, 2.0, 3.0]]))[0] == 0.0


def test_the_running_simulation_reads_the_fields_every_frame(scene):
    field = _wind(rotation=(0.0, math.pi / 2, 0.0), strength=4.0)
    obj = make_grid(rotation=(math.pi / 2, 0.0, 0.0))
    obj.rotation_euler = (0.0, math.pi / 2, 0.0)  # facing the wind (+X)
    pin(obj, range(6))
    make_cloth(obj)
    play(scene, 3)
    live = store.find(obj.session_uid)
    assert [f.strength for f in live.sim.wind_fields] == [pytest.approx(4.0)]
    field.field.strength = 9.0
    play(scene, 4)
    assert [f.strength for f in live.sim.wind_fields] == [pytest.approx(9.0)]
    field.field.keyframe_insert("strength", frame=5)
    field.field.strength = 1.0
    field.field.keyframe_insert("strength", frame=7)
    play(scene, 6)  # animated: halfway between the keys (Bezier, so symmetric about the middle)
    assert [f.strength for f in live.sim.wind_fields] == [pytest.approx(5.0)]
    play(scene, 8)
    held = live.sim.wind_fields[0]
    play(scene, 9)  # nothing changed: the same field, not one rebuilt
    assert live.sim.wind_fields == [held] and live.sim.wind_fields[0] is held
    field.location = (0.0, 0.5, 0.0)
    play(scene, 10)  # moved: a new field where the object is now
    assert [f.location for f in live.sim.wind_fields] == [pytest.approx((0.0, 0.5, 0.0))]
    assert [f.strength for f in live.sim.wind_fields] == [pytest.approx(1.0)]


def test_a_field_whose_max_distance_ends_before_the_cloth_does_not_blow_it(scene):
    def push(**settings):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        _wind(location=(-3.0, 0.0, 1.0), rotation=(0.0, math.pi / 2, 0.0), **{"strength": 10.0, **settings})
        obj = make_grid(rotation=(math.pi / 2, 0.0, 0.0))
        obj.rotation_euler = (0.0, math.pi / 2, 0.0)
        pin(obj, range(6))
        make_cloth(obj)
        start = evaluated_world(obj)
        play(bpy.context.scene, 12)
        return (evaluated_world(obj) - start)[:, 0].mean()

    still = push(strength=0.0)  # the cloth's own motion: it hangs, and may wrinkle a little
    assert push() > still + 0.02
    assert push(use_max_distance=True, distance_max=2.0) == still  # the cloth is 3 m away
