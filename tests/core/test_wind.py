"""Wind fields (Blender's Wind force field semantics) and the aerodynamics of drag and lift."""

import numpy as np
import pytest

from cloth_addon.core import Settings, Simulation, WindField
from cloth_addon.core.forces import aerodynamic_forces, external_acceleration
from cloth_addon.core.model import build_model
from cloth_addon.core.wind import air_velocity, blender_falloff, uniform_air
from tools import scenes


def _blender_falloff(fac, usemin, mindist, usemax, maxdist, power):
    """Blender's falloff_func (blenkernel effect.cc), one value at a time, as written there."""
    if usemax and fac > maxdist:
        return 0.0
    if usemin and fac < mindist:
        return 1.0
    if not usemin:
        mindist = 0.0
    return (1.0 + fac - mindist) ** -power


@pytest.mark.parametrize("limits", [(False, 0.0, False, 0.0), (True, 0.7, False, 0.0),
                                    (False, 0.0, True, 2.5), (True, 0.7, True, 2.5), (True, 3.0, True, 2.0)])
@pytest.mark.parametrize("power", [0.0, 1.0, 2.0, 3.5])
def test_falloff_equals_blenders_formula(limits, power):
    distance = np.linspace(0.0, 4.0, 41)
    expected = [_blender_falloff(d, limits[0], limits[1], limits[2], limits[3], power) for d in distance]
    np.testing.assert_allclose(blender_falloff(distance, power, *limits), expected, rtol=1e-12)


def test_strength_blows_along_the_normalised_direction_everywhere_without_falloff():
    field = WindField(location=(5, 5, 5), direction=(0, 0, 3), strength=8.0)
    points = np.random.default_rng(0).uniform(-100, 100, (50, 3))
    np.testing.assert_allclose(field.velocity(points), np.tile([0.0, 0.0, 8.0], (50, 1)))


def test_sphere_falloff_measures_from_the_origin_line_or_plane_by_shape():
    # a point 3 m up the field's Z axis and 4 m off it (field at the origin, Z along world Z)
    point = np.array([[4.0, 0.0, 3.0]])
    expected = {"point": 5.0, "line": 4.0, "plane": 3.0}
    for shape, distance in expected.items():
        field = WindField(strength=2.0, shape=shape, power=2.0)
        assert field.velocity(point)[0, 2] == pytest.approx(2.0 / (1.0 + distance) ** 2)


def test_tube_and_cone_falloffs_combine_axial_and_radial_terms():
    point = np.array([[4.0, 0.0, 3.0]])  # 3 m along Z, 4 m from the axis, 53.13 degrees off it
    tube = WindField(falloff="tube", power=1.0, radial_power=2.0)
    assert tube.falloff_factor(point)[0] == pytest.approx(1.0 / 4.0 / 25.0)
    cone = WindField(falloff="cone", power=1.0, radial_power=1.0, use_radial_max=True, radial_max=60.0)
    angle = np.degrees(np.arctan2(4.0, 3.0))
    assert cone.falloff_factor(point)[0] == pytest.approx(1.0 / 4.0 / (1.0 + angle))
    narrow = WindField(falloff="cone", use_radial_max=True, radial_max=45.0)
    assert narrow.falloff_factor(point)[0] == 0.0


def test_max_distance_and_z_direction_cut_the_field_off():
    points = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [0.0, 0.0, 3.0]])
    capped = WindField(use_max_distance=True, max_distance=2.0)
    np.testing.assert_array_equal(capped.falloff_factor(points), [1.0, 1.0, 0.0])
    ahead = WindField(z_direction="positive")
    np.testing.assert_array_equal(ahead.falloff_factor(points), [1.0, 0.0, 1.0])
    behind = WindField(z_direction="NEGATIVE")
    np.testing.assert_array_equal(behind.falloff_factor(points), [0.0, 1.0, 0.0])


def test_noise_gusts_around_the_strength_in_time_and_space_reproducibly():
    field = WindField(direction=(1, 0, 0), strength=8.0, noise=2.0, seed=7)
    points = np.stack([np.linspace(0.0, 1.5, 4), np.zeros(4), np.ones(4)], axis=1)
    times = np.arange(0.0, 60.0, 1.0 / 24.0)
    speed = np.array([field.velocity(points, t)[:, 0] for t in times])  # (frames, points)
    assert np.all(np.abs(speed - 8.0) <= 2.0 + 1e-12)
    assert speed.mean() == pytest.approx(8.0, abs=0.2)
    assert 0.4 < speed.std() < 1.2  # about Blender's noise (RMS 0.35 * noise)
    assert np.abs(np.diff(speed[:, 0])).max() < 0.5  # smooth in time: gusts, not jitter
    assert not np.allclose(speed[:, 0], speed[:, -1], atol=0.1)  # different along the flag
    again = WindField(direction=(1, 0, 0), strength=8.0, noise=2.0, seed=7)
    np.testing.assert_array_equal(again.velocity(points, 3.0), field.velocity(points, 3.0))
    other = WindField(direction=(1, 0, 0), strength=8.0, noise=2.0, seed=8)
    assert not np.allclose(other.velocity(points, 3.0), field.velocity(points, 3.0))


def test_air_velocity_sums_the_constant_wind_and_the_fields():
    fields = [WindField(direction=(1, 0, 0), strength=2.0), WindField(direction=(0, 1, 0), strength=-1.0)]
    velocity = air_velocity(np.zeros((3, 3)), 0.0, (0.0, 0.0, 0.5), fields)
    np.testing.assert_allclose(velocity, np.tile([2.0, -1.0, 0.5], (3, 1)))


def test_a_field_without_noise_or_falloff_is_one_velocity_and_needs_no_points():
    plain = WindField(location=(5, 5, 5), direction=(0, 0, 3), strength=8.0)
    np.testing.assert_array_equal(plain.uniform, [0.0, 0.0, 8.0])
    points = np.random.default_rng(1).uniform(-100, 100, (50, 3))
    np.testing.assert_array_equal(plain.velocity(points, 2.0), np.tile(plain.uniform, (50, 1)))
    for changes in ({"noise": 1.0}, {"power": 1.0}, {"z_direction": "positive"},
                    {"falloff": "tube", "radial_power": 1.0},
                    {"use_max_distance": True, "max_distance": 50.0}):
        field = WindField(location=(5, 5, 5), direction=(0, 0, 3), strength=8.0, **changes)
        assert field.uniform is None, changes
        assert not np.allclose(field.velocity(points, 2.0), plain.velocity(points, 2.0)), changes
    side = WindField(direction=(1, 0, 0), strength=-2.0, shape="line", use_min_distance=True,
                     min_distance=1.0)
    air, varying = uniform_air((0.0, 0.0, 0.5), [plain, side])
    np.testing.assert_array_equal(air, [-2.0, 0.0, 8.5])
    assert varying == []
    everywhere = air_velocity(points, 2.0, (0.0, 0.0, 0.5), [plain, side])
    np.testing.assert_array_equal(np.tile(air, (50, 1)), everywhere)
    # one field that varies: all of them at the points, in their order (the same sums, bitwise)
    gusty = WindField(direction=(1, 0, 0), strength=2.0, noise=1.0)
    air, varying = uniform_air((0.0, 0.0, 0.5), [gusty, plain])
    np.testing.assert_array_equal(air, [0.0, 0.0, 0.5])
    assert varying == [gusty, plain]
    assert uniform_air((1.0, 2.0, 3.0), None)[1] == []


@pytest.mark.parametrize("changes, field", [
    ({"strength": float("nan")}, "strength"), ({"direction": (0, 0, 0)}, "direction"),
    ({"location": (0, 1)}, "location"), ({"noise": -1.0}, "noise"), ({"seed": 1.5}, "seed"),
    ({"shape": "surface"}, "shape"), ({"falloff": "box"}, "falloff"), ({"power": -2}, "power"),
    ({"max_distance": "far"}, "max_distance"), ({"z_direction": "up"}, "z_direction"),
])
def test_invalid_wind_fields_raise_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=f"WindField.{field}"):
        WindField(**changes)


def _plate(angle_degrees):
    """One 1 m^2 square face in the XZ plane tilted by `angle_degrees` about Z (normal +-Y rotated)."""
    turn = np.radians(angle_degrees)
    across = np.array([np.cos(turn), np.sin(turn), 0.0])
    vertices = np.array([np.zeros(3), across, across + (0, 0, 1), (0, 0, 1)])
    return build_model(vertices, [[0, 1, 2, 3]], Settings())


@pytest.mark.parametrize("angle", [5.0, 30.0, 60.0, 89.0])
def test_drag_is_along_the_relative_wind_and_lift_across_it(angle):
    model = _plate(angle)
    x = model.rest_positions
    velocity = np.tile([0.0, 0.5, 0.0], (4, 1))  # the plate moves, the air blows along +X
    air = np.array([6.0, 0.0, 0.0])
    relative = air - velocity[0]
    normal = np.cross(x[1] - x[0], x[3] - x[0])
    normal /= np.linalg.norm(normal)
    sine = abs(relative @ normal) / np.linalg.norm(relative)
    drag, _ = aerodynamic_forces(x, velocity, model.faces, air, 0.2, 0.0)
    drag = drag.sum(axis=0)
    np.testing.assert_allclose(np.cross(drag, relative), 0.0, atol=1e-12)
    assert drag @ relative > 0.0  # the air pushes the plate along with it
    assert np.linalg.norm(drag) == pytest.approx(0.2 * relative @ relative * sine)
    lift, _ = aerodynamic_forces(x, velocity, model.faces, air, 0.0, 0.3)
    lift = lift.sum(axis=0)
    assert lift @ relative == pytest.approx(0.0, abs=1e-12)  # perpendicular to the relative wind
    assert lift @ np.cross(relative, normal) == pytest.approx(0.0, abs=1e-12)  # in the plane of u and n
    cosine = np.sqrt(1.0 - sine * sine)
    assert np.linalg.norm(lift) == pytest.approx(0.3 * relative @ relative * sine * cosine)


def test_lift_vanishes_face_on_and_edge_on():
    model = _plate(0.0)  # normal along Y
    x, still = model.rest_positions, np.zeros((4, 3))
    for air in ([0.0, 5.0, 0.0], [5.0, 0.0, 0.0]):
        force, _ = aerodynamic_forces(x, still, model.faces, np.array(air), 0.0, 1.0)
        np.testing.assert_allclose(force, 0.0, atol=1e-12)


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring", "newton"])
def test_quadratic_drag_gives_a_terminal_velocity(grid, solver):
    # a flat sheet falling face-down: density * g = drag * v^2
    v, f, _ = grid(6, 6, plane="xy")
    settings = Settings(solver=solver, density=0.15, air_drag=0.15, damping=0.0)
    sim = Simulation(v, f, settings)
    sim.step(72)
    before = sim.positions[:, 2].mean()
    sim.step(1)
    speed = (before - sim.positions[:, 2].mean()) / settings.dt
    assert speed == pytest.approx(np.sqrt(0.15 * 9.81 / 0.15), rel=0.02)  # 3.1 m/s: falls, not floats


def test_explicit_aerodynamics_never_reverse_the_relative_velocity(grid):
    # a very light sheet at rest in a gale, one big step: it may reach the wind's speed, not pass it
    v, f, _ = grid(5, 5, plane="xz")
    settings = Settings(density=0.001, air_drag=1.0, air_lift=2.0, gravity=(0, 0, 0), dt=0.2)
    model = build_model(v, f, settings)
    field = WindField(direction=(0.3, 1.0, 0.0), strength=40.0)
    accel = external_acceleration(model, v, np.zeros_like(v), settings, settings.h, [field])
    gained = accel * settings.h
    assert np.linalg.norm(gained, axis=1).max() <= 40.0 * (1.0 + 1e-9)
    assert np.all(gained @ field.direction > 0.0)


def _flag(fields, seconds=6, **changes):
    """The flag's positions (frames, n, 3) over `seconds` at 24 fps, and its out-of-plane motion (m):
    each vertex's standard deviation in time across the flag's plane, averaged, in each of the
    last two 2 s windows, and the two averaged. A flutter is chaotic: a rounding change anywhere
    moves one window's figure by 10%, so the thresholds below keep margins of more than that."""
    v, f, pins, _ = scenes.flag()
    sim = Simulation(v, f, Settings(**changes), pinned=pins, wind_fields=fields)
    frames = []
    for _ in range(seconds * 24):
        sim.step(1)
        frames.append(np.array(sim.positions))
    frames = np.array(frames)
    windows = [frames[end - 48:end, :, 1].std(axis=0).mean() for end in (len(frames) - 48, len(frames))]
    return frames, float(np.mean(windows))


def test_a_flag_keeps_moving_in_a_gusty_wind_and_hangs_limp_without():
    _, _, _, direction = scenes.flag()
    gusty = WindField(location=(-1.0, 0.0, 1.5), direction=direction, strength=8.0, noise=1.0)
    frames, gusty_motion = _flag([gusty])
    assert gusty_motion >= 0.015  # m, over the last 4 s of 6: still moving
    assert frames[-48:, :, 2].mean() > 1.44  # flying out along the wind (its centre was at z = 1.5)
    # Without wind the flag folds down along its pole and comes to rest, as cloth does (a flag
    # that held itself out flat, its free end 0.1 m below its top, stood like cardboard).
    frames, motion = _flag([], seconds=10)
    assert frames[-1, :, 2].min() < 0.5  # its free corner hangs down (it was at z = 1.0)
    assert np.abs(frames[-1, :, 1]).max() > 0.05  # in folds, out of its plane
    assert motion < 0.5 * gusty_motion  # settling, not fluttering


def test_lift_makes_a_flag_flutter_rather_than_sway():
    # with small, converged steps implicit Euler's numerical damping no longer hides it
    _, _, _, direction = scenes.flag()
    steady = [WindField(direction=direction, strength=8.0)]
    share = {}
    for lift in (1.0, 0.0):
        frames, motion = _flag(steady, substeps=4, iterations=10, air_drag=0.15, air_lift=lift)
        assert motion >= 0.01  # m: moving (17-23 mm), not standing in the wind
        across = frames[-48:, :, 1] - frames[-48:, :, 1].mean(axis=0)
        power = (np.abs(np.fft.rfft(across, axis=0)) ** 2).sum(axis=1)[1:]
        share[lift] = power[np.fft.rfftfreq(48, 1.0 / 24.0)[1:] > 1.0].sum() / power.sum()
    assert share[1.0] > 0.5  # mostly faster than 1 Hz: fluttering
    assert share[0.0] < 0.3  # without lift: a slow sway


def test_wind_fields_can_change_between_frames(grid):
    v, f, index = grid(9, 9)
    blown = {}
    for reach in (None, 0.2):
        sim = Simulation(v, f, Settings(), pinned=index[0])
        sim.step(5)
        assert np.abs(sim.positions[:, 1]).max() < 1e-6  # in its plane, but for the imperfection
        sim.wind_fields = [WindField(location=(0.5, 0.0, -0.5), direction=(0, 1, 0), strength=5.0,
                                     use_max_distance=reach is not None, max_distance=reach or 0.0)]
        sim.step(10)
        blown[reach] = sim.positions[:, 1].mean()
    assert blown[None] > 0.05  # the new field blows at once
    assert 0.0 < blown[0.2] < 0.5 * blown[None]  # only where it reaches (within 0.2 m)
