"""Physics invariants of the Simulation API, for every solver."""

import numpy as np
import pytest

from cloth_addon.core import ClothPart, PlaneCollider, Settings, Simulation, SphereCollider

SOLVERS = ["verlet", "fast_mass_spring", "newton"]
FAST = ["verlet", "fast_mass_spring"]  # Newton refactors every iteration: too slow for long scenes


def quiet(**changes):
    """Settings without drag, damping or the fresh state's imperfection, for exact kinematics."""
    return Settings(**{"damping": 0.0, "air_drag": 0.0, "imperfection": 0.0, **changes})


@pytest.mark.parametrize("solver", SOLVERS)
def test_free_fall_is_exact_discrete_verlet_and_near_half_g_t_squared(grid, solver):
    v, f, _ = grid(6, 6, plane="xy")
    settings = quiet(solver=solver, substeps=8)
    sim = Simulation(v, f, settings)
    frames = 24
    sim.step(frames)
    steps, h = frames * 8, settings.h
    drop = v[:, 2] - sim.positions[:, 2]
    # x_k = x_0 + g h^2 k(k+1)/2 when starting at rest: exactly what position Verlet and
    # implicit Euler both give for constant acceleration
    np.testing.assert_allclose(drop, 9.81 * h * h * steps * (steps + 1) / 2, rtol=1e-9)
    t = frames * settings.dt
    np.testing.assert_allclose(drop, 0.5 * 9.81 * t * t, rtol=0.01)
    np.testing.assert_allclose(sim.positions[:, :2], v[:, :2], atol=1e-9)


@pytest.mark.parametrize("solver", FAST)
def test_pinned_particles_never_move(grid, solver):
    v, f, index = grid(12, 12)
    settings = Settings(solver=solver, wind=(0, 3, 0))
    sim = Simulation(v, f, settings, pinned=index[0], colliders=[SphereCollider((0.5, 0.2, -0.6), 0.3)])
    for _ in range(30):
        sim.step()
        assert np.array_equal(sim.positions[index[0]], v[index[0]])
    assert np.abs(sim.positions - v).max() > 0.05  # the rest did move


@pytest.mark.parametrize("solver", SOLVERS)
def test_rest_state_stays_at_rest_without_gravity(grid, solver):
    v, f, _ = grid(10, 10)
    sim = Simulation(v, f, Settings(solver=solver, gravity=(0, 0, 0)))
    sim.step(100)
    # the implicit solvers' linear solves leave round-off (nanometres), nothing that grows
    assert np.abs(sim.positions - v).max() < 1e-6


@pytest.mark.parametrize("solver", FAST)
def test_deterministic_and_finite(grid, solver):
    v, f, index = grid(10, 10)
    runs = []
    for _ in range(2):
        sim = Simulation(v, f, Settings(solver=solver, wind=(1, 2, 0)), pinned=index[0, ::3],
                         colliders=[SphereCollider((0.5, 0.3, -0.5), 0.25)])
        sim.step(40)
        runs.append(sim.positions.copy())
    assert np.all(np.isfinite(runs[0]))
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("solver", FAST)
def test_drape_over_sphere_and_floor_never_inside(grid, solver):
    v, f, _ = grid(20, 20, size=1.6, plane="xy")
    v = v - (0.8, 0.8, -1.0)
    sphere = SphereCollider((0.0, 0.0, 0.45), 0.45)
    floor = PlaneCollider((0, 0, 0), (0, 0, 1))
    settings = Settings(solver=solver, collision_distance=0.004)
    sim = Simulation(v, f, settings, colliders=[sphere, floor])
    middle = np.argmin(np.linalg.norm(v[:, :2], axis=1))
    for frame in range(1, 101):
        sim.step()
        dist = np.linalg.norm(sim.positions - sphere.center, axis=1)
        # also where ball and floor meet: a corner pulled into that wedge stays out of both
        assert dist.min() >= 0.45 + 0.004 - 1e-9
        assert sim.positions[:, 2].min() >= 0.004 - 1e-9
        if frame == 60:
            # it rests on the ball: the middle is held up, the corners reach the floor (a bending
            # sheet meets it in a curve, so its lowest vertex is within one mesh spacing of it).
            # Later this coarse sheet may slide off the smooth ball (friction 0.3), as cloth does.
            assert sim.positions[middle, 2] > 0.85
            assert sim.positions[:, 2].min() < 1.6 / 19


@pytest.mark.parametrize("solver", SOLVERS)
def test_moving_sphere_pushes_cloth_and_never_contains_it(grid, solver):
    v, f, index = grid(15, 15)
    sphere = SphereCollider((0.5, -0.6, -0.5), 0.2)
    sim = Simulation(v, f, Settings(solver=solver), pinned=index[0], colliders=[sphere])
    for frame in range(40):
        sphere.center = (0.5, -0.6 + 0.02 * frame, -0.5)  # 2 cm per frame through the cloth
        sim.step()
        dist = np.linalg.norm(sim.positions - sphere.center, axis=1)
        assert dist.min() >= 0.2 + Settings().collision_distance - 1e-9
    assert sim.positions[:, 1].max() > 0.05  # the cloth was pushed along +y


@pytest.mark.parametrize("solver", FAST)
def test_wind_blows_a_hanging_sheet_downwind(grid, solver):
    v, f, index = grid(10, 10)
    sim = Simulation(v, f, Settings(solver=solver, wind=(0, 5, 0)), pinned=index[0])
    sim.step(48)
    assert sim.positions[index[-1], 1].mean() > 0.1
    # without wind nothing leaves the plane; the fresh state's imperfection alone would (nanometres)
    calm = Simulation(v, f, Settings(solver=solver, imperfection=0.0), pinned=index[0])
    calm.step(48)
    assert np.abs(calm.positions[:, 1]).max() < 1e-9


@pytest.mark.parametrize("solver", FAST)
def test_huge_time_step_does_not_explode(grid, solver):
    v, f, index = grid(12, 12)
    sim = Simulation(v, f, Settings(solver=solver, dt=0.2), pinned=index[0],
                     colliders=[PlaneCollider((0, 0, -0.8))])
    sim.step(50)
    assert np.all(np.isfinite(sim.positions))
    assert np.abs(sim.positions).max() < 3.0


@pytest.mark.parametrize("solver", SOLVERS)
def test_state_round_trip_and_transfer(grid, solver):
    v, f, index = grid(8, 8)
    settings = Settings(solver=solver)
    sim = Simulation(v, f, settings, pinned=index[0])
    sim.step(10)
    saved = sim.state
    sim.step(10)
    expected = sim.positions.copy()
    other = Simulation(v, f, settings, pinned=index[0])
    other.state = saved
    other.step(10)
    np.testing.assert_array_equal(other.positions, expected)
    sim.reset()
    np.testing.assert_array_equal(sim.positions, v)
    with pytest.raises(ValueError):
        sim.positions[0, 0] = 1.0


@pytest.mark.parametrize("solver", SOLVERS)
def test_moving_pins_carry_the_cloth(grid, solver):
    v, f, index = grid(8, 8)
    sim = Simulation(v, f, Settings(solver=solver), pinned=index[0])
    for frame in range(1, 21):
        sim.move_pins(v[index[0]] + (0.02 * frame, 0, 0))
        sim.step()
    np.testing.assert_allclose(sim.positions[index[0]], v[index[0]] + (0.4, 0, 0))
    assert sim.positions[index[-1], 0].mean() > v[index[-1], 0].mean() + 0.2


@pytest.mark.parametrize("solver", SOLVERS)
def test_move_pins_follows_the_order_the_pins_were_listed_in(grid, solver):
    v, f, index = grid(6, 6)
    left, right = index[0, 0], index[0, -1]
    sim = Simulation(v, f, quiet(solver=solver), pinned=[right, left])
    spread = (0.05, 0.0, 0.0)
    sim.move_pins([v[right] + spread, v[left] - spread])  # right's target first, as listed
    sim.step()
    np.testing.assert_allclose(sim.positions[right], v[right] + spread, atol=1e-12)
    np.testing.assert_allclose(sim.positions[left], v[left] - spread, atol=1e-12)
    # the same frame from an (n, 3) array of targets: one row per vertex
    whole = Simulation(v, f, quiet(solver=solver), pinned=[right, left])
    targets = v.copy()
    targets[right] += spread
    targets[left] -= spread
    whole.move_pins(targets)
    whole.step()
    np.testing.assert_array_equal(whole.positions, sim.positions)


def test_pins_given_as_one_then_zero_are_moved_in_that_order(grid):
    v, f, _ = grid(4, 4)
    sim = Simulation(v, f, quiet(), pinned=[1, 0])
    sim.move_pins([v[1] + (0.0, 0.0, 0.1), v[0]])
    sim.step()
    np.testing.assert_allclose(sim.positions[[1, 0]], [v[1] + (0.0, 0.0, 0.1), v[0]], atol=1e-12)


def test_a_pin_mask_takes_its_targets_in_index_order(grid):
    v, f, index = grid(6, 6)
    mask = np.zeros(len(v), dtype=bool)
    mask[[index[0, -1], index[0, 0]]] = True
    sim = Simulation(v, f, quiet(), pinned=mask)
    first, last = index[0, 0], index[0, -1]
    sim.move_pins([v[first] + (0.0, 0.1, 0.0), v[last] - (0.0, 0.1, 0.0)])
    sim.step()
    np.testing.assert_allclose(sim.positions[first], v[first] + (0.0, 0.1, 0.0), atol=1e-12)
    np.testing.assert_allclose(sim.positions[last], v[last] - (0.0, 0.1, 0.0), atol=1e-12)


def test_parts_take_their_pin_targets_part_by_part_each_in_its_own_order(grid):
    v, f, index = grid(4, 4)
    lower = v - (0.0, 0.0, 1.0)
    sim = Simulation.from_parts([ClothPart(v, f, pinned=[3, 0]), ClothPart(lower, f, pinned=[2, 1])],
                                settings=quiet())
    second = sim.parts[1].start
    lift = (0.0, 0.0, 0.1)
    targets = [v[3] + lift, v[0], lower[2], lower[1] + lift]
    sim.move_pins(targets)
    sim.step()
    np.testing.assert_allclose(sim.positions[[3, 0, second + 2, second + 1]], targets, atol=1e-12)


def test_a_pin_listed_twice_is_refused(grid):
    v, f, _ = grid(4, 4)
    with pytest.raises(ValueError, match="pinned lists vertex 2 more than once"):
        Simulation(v, f, pinned=[2, 5, 2])
    with pytest.raises(ValueError, match="pinned"):
        Simulation.from_parts([ClothPart(v, f, pinned=[1, 1])])


@pytest.mark.parametrize("solver", SOLVERS)
def test_tearing_breaks_springs_for_good(grid, solver):
    v, f, index = grid(12, 12)
    pins = np.concatenate([index[0], index[-1]])
    settings = Settings(solver=solver, tear_factor=1.3)
    sim = Simulation(v, f, settings, pinned=pins)
    assert not sim.torn.any()
    for frame in range(1, 31):  # pull top and bottom rows apart, 3 cm per frame each
        pull = (0, 0, 0.03 * frame)
        sim.move_pins(np.concatenate([v[index[0]] + pull, v[index[-1]] - pull]))
        before = sim.torn
        sim.step()
        assert np.all(sim.torn[before])  # torn springs stay torn
    assert sim.torn.sum() > 10
    assert np.all(np.isfinite(sim.positions))
    # the two halves have separated: the gap is much wider than the rest spacing
    z = np.sort(sim.positions[:, 2])
    assert np.diff(z).max() > 0.3


@pytest.mark.parametrize("solver", SOLVERS)
def test_isolated_torn_particle_falls_freely(solver):
    v = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (5, 5, 5)]  # vertex 3 belongs to no face
    sim = Simulation(v, [(0, 1, 2)], quiet(solver=solver, substeps=1), pinned=[0, 1, 2])
    sim.step(10)
    h = Settings().dt
    assert sim.positions[3, 2] == pytest.approx(5 - 9.81 * h * h * 55)


def test_rope_hangs_at_its_length():
    v = np.stack([np.linspace(0, 1, 11), np.zeros(11), np.zeros(11)], axis=1)
    edges = np.stack([np.arange(10), np.arange(1, 11)], axis=1)
    sim = Simulation(v, [], Settings(solver="verlet", iterations=30, damping=0.05), pinned=[0], edges=edges)
    sim.step(200)
    assert sim.positions[-1, 2] == pytest.approx(-1.0, abs=0.03)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"solver": "euler"}, "solver"),
        ({"dt": 0.0}, "dt"),
        ({"dt": -1.0}, "dt"),
        ({"iterations": -1}, "iterations"),
        ({"iterations": 0}, "iterations"),
        ({"substeps": -2}, "substeps"),
        ({"substeps": 1.5}, "substeps"),
        ({"density": -1.0}, "density"),
        ({"stretch_stiffness": -5.0}, "stretch_stiffness"),
        ({"bend_stiffness": float("nan")}, "bend_stiffness"),
        ({"damping": 1.0}, "damping"),
        ({"gravity": (0, 0)}, "gravity"),
        ({"wind": (0, 0, float("inf"))}, "wind"),
        ({"tear_factor": 0.9}, "tear_factor"),
        ({"self_collision_distance": 0.0}, "self_collision_distance"),
        ({"spring_damping": -1e-3}, "spring_damping"),
        ({"spring_damping": float("inf")}, "spring_damping"),
        ({"self_collision_distance": float("nan")}, "self_collision_distance"),
        ({"stretch_stiffness": float("inf")}, "stretch_stiffness"),  # the implicit default solver
        ({"compression": -0.1}, "compression"),
        ({"compression": 1.5}, "compression"),
        ({"compression": float("nan")}, "compression"),
        ({"imperfection": -1e-6}, "imperfection"),
        ({"imperfection": "a little"}, "imperfection"),
        ({"damping": "some"}, "damping"),
        ({"damping": None}, "damping"),
        ({"damping": float("nan")}, "damping"),
        ({"tear_factor": "x"}, "tear_factor"),
        ({"tear_factor": float("inf")}, "tear_factor"),
        ({"self_collision_distance": "far"}, "self_collision_distance"),
        ({"chebyshev_rho": "fast"}, "chebyshev_rho"),
        ({"chebyshev_rho": float("nan")}, "chebyshev_rho"),
        ({"self_collision": "yes"}, "self_collision"),
        ({"self_collision": 1}, "self_collision"),
        ({"chebyshev": None}, "chebyshev"),
        ({"use_sewing": 0}, "use_sewing"),
        ({"stretch_stiffness": True}, "stretch_stiffness"),
        ({"friction": False}, "friction"),
        ({"compression": True}, "compression"),
    ],
)
def test_invalid_settings_name_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        Settings(**changes)


def test_self_collision_distance_is_its_own_setting_and_scales_with_the_mesh(grid):
    """Automatic: half the median edge length, so a finer mesh gets a thinner gap; a set value
    is used as given and leaves the collider distance alone."""
    coarse, fine = (Simulation(*grid(n, n, 1.0)[:2]) for n in (11, 41))
    assert coarse.self_collision_distance == pytest.approx(0.5 * 0.1)
    assert fine.self_collision_distance == pytest.approx(0.5 * 0.025)
    fine.settings = fine.settings.replace(self_collision_distance=0.02)
    assert fine.self_collision_distance == 0.02
    assert fine.settings.collision_distance == Settings().collision_distance


def test_rigid_constraints_allowed_for_verlet(grid):
    v, f, index = grid(6, 6)
    sim = Simulation(v, f, Settings(solver="verlet", stretch_stiffness=float("inf")), pinned=index[0])
    sim.step(5)
    assert np.all(np.isfinite(sim.positions))


def test_bad_step_and_state_arguments(grid):
    v, f, _ = grid(4, 4)
    sim = Simulation(v, f, Settings(solver="verlet"))
    with pytest.raises(ValueError, match="frames"):
        sim.step(-1)
    with pytest.raises(ValueError, match="pin targets"):
        sim.move_pins(np.zeros((3, 3)))
    bad = sim.state
    bad.positions[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        sim.state = bad


@pytest.mark.parametrize("solver", SOLVERS)
def test_zero_stiffness_springs_do_nothing(grid, solver):
    v, f, index = grid(5, 5)
    settings = quiet(solver=solver, stretch_stiffness=0.0, shear_stiffness=0.0, bend_stiffness=0.0,
                     substeps=1)
    sim = Simulation(v, f, settings, pinned=index[0])
    sim.step(5)
    assert np.all(np.isfinite(sim.positions))
    free = ~sim.model.pinned
    h = settings.dt
    np.testing.assert_allclose(v[free, 2] - sim.positions[free, 2], 9.81 * h * h * 15, rtol=1e-9)


def test_settings_can_change_between_frames(grid):
    v, f, index = grid(6, 6)
    sim = Simulation(v, f, Settings(), pinned=index[0])
    sim.step(5)
    solver, before = sim.solver, sim.positions.copy()
    sim.settings = sim.settings.replace(wind=(0, 4, 0))  # live: same solver, no refactorisation
    assert sim.solver is solver and sim.solver.factorizations == 1
    sim.settings = sim.settings.replace(iterations=20, solver="verlet")  # a new solver, same state
    assert sim.solver is not solver and sim.solver.iterations == 20
    np.testing.assert_array_equal(sim.positions, before)
    sim.step(5)
    assert sim.positions[index[-1], 1].mean() > 0.01  # the new wind blows
    with pytest.raises(ValueError, match="density"):
        sim.settings = sim.settings.replace(density=1.0)
    with pytest.raises(ValueError, match="Settings instance"):
        sim.settings = {"iterations": 3}
