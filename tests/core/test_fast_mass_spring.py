"""The fast implicit solver (Liu et al. 2013) against Newton, dense algebra and physics."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from cloth_addon.core import Settings, Simulation
from cloth_addon.core.solvers.factor import BACKENDS, factorize
from cloth_addon.core.solvers.fast_mass_spring import FastMassSpringSolver
from cloth_addon.core.solvers.newton import NewtonSolver
from tools.scenes import paper_problem


def exact_step(problem):
    """x*: Newton on the same step, run to convergence."""
    newton = NewtonSolver(problem.sim.model, problem.sim.settings)
    return newton.advance(*problem.args(), iterations=50, tolerance=1e-9)


def relative_errors(problem, exact, iterations, **kwargs):
    """|x_k - x*| / |y - x*| for k = 0..iterations, starting at y like the paper."""
    solver = FastMassSpringSolver(problem.sim.model, problem.sim.settings.replace(**kwargs))
    y = solver.predict(*problem.args())
    errors = []
    solver.advance(*problem.args(), iterations=iterations, start_at_y=True,
                   observer=lambda k, x: errors.append(np.linalg.norm(x - exact)))
    return np.array(errors) / np.linalg.norm(y - exact)


@pytest.mark.parametrize("kind", ["gentle", "violent"])
def test_many_iterations_reach_newtons_minimiser(kind):
    problem = paper_problem(kind, n=15)
    exact = exact_step(problem)
    errors = relative_errors(problem, exact, 500, chebyshev=False)
    assert errors[-1] < 1e-3
    # Newton really converged: its gradient vanished
    newton = NewtonSolver(problem.sim.model, problem.sim.settings)
    y = newton.predict(*problem.args())
    assert np.abs(newton.gradient(exact, y)).max() < 1e-9


@pytest.mark.parametrize("kind", ["gentle", "violent"])
def test_error_falls_monotonically_with_iterations(kind):
    problem = paper_problem(kind, n=50)
    exact = exact_step(problem)
    errors = relative_errors(problem, exact, 40, chebyshev=False)
    assert np.all(np.diff(errors) <= 0), errors
    assert errors[-1] < 0.5 * errors[1]


def test_chebyshev_lowers_the_error_for_the_same_iterations():
    problem = paper_problem("gentle", n=30)
    exact = exact_step(problem)
    plain = relative_errors(problem, exact, 10, chebyshev=False)[-1]
    accelerated = relative_errors(problem, exact, 10, chebyshev=True)[-1]
    assert accelerated < 0.7 * plain


def test_settled_cloth_balances_gravity_with_the_models_springs(grid):
    v, f, index = grid(10, 10, size=1.0, plane="xy")
    settings = Settings(damping=0.3, air_drag=0.0)
    sim = Simulation(v, f, settings, pinned=index[0])
    sim.step(1000)
    free = ~sim.model.pinned
    weight = sim.model.mass[:, None] * np.asarray(settings.gravity)
    residual = sim.model.spring_forces(sim.positions) + sim.model.bending_forces(sim.positions) + weight
    # the springs as exposed (E = sum 1/2 k (|p1 - p2| - r)^2) and the bending energy
    # (1/2 x^T B x) hold every free particle up
    assert np.abs(residual[free]).max() < 1e-2 * np.abs(weight[free]).max()


def _angular_velocity_after_spinning(grid, solver, spring_damping):
    """A free 1 m sheet (20 x 20) spun about its normal at 1 rad/s, no gravity, air or velocity
    damping: its angular velocity (rad/s, about z) after 0.5 s."""
    v, f, _ = grid(20, 20, size=1.0, plane="xy")
    v = v - v.mean(axis=0)
    settings = Settings(solver=solver, iterations=8 if solver == "newton" else 2, damping=0.0, air_drag=0.0,
                        gravity=(0.0, 0.0, 0.0), spring_damping=spring_damping)
    sim = Simulation(v, f, settings)
    velocity = np.c_[-v[:, 1], v[:, 0], np.zeros(len(v))]
    sim.state = dataclasses.replace(sim.state, positions=v.copy(), previous=v - velocity * settings.h)
    sim.step(12)
    x, velocity = sim.positions, (sim.state.positions - sim.state.previous) / settings.h
    arm = x - x.mean(axis=0)
    return float(np.cross(arm, velocity)[:, 2].sum() / (arm[:, 0] ** 2 + arm[:, 1] ** 2).sum())


@pytest.mark.parametrize("solver", ["fast_mass_spring", "newton"])
def test_spring_damping_leaves_a_spinning_sheet_spinning(grid, solver):
    """Spring damping resists each spring's rate of stretch, not the relative velocity of its
    ends: a rigid rotation stretches nothing, so 10 ms of it changes the spin by less than 1e-5
    (damping the whole relative velocity, a tenth of that stopped the sheet within 0.5 s:
    1 rad/s to 0.008)."""
    free = _angular_velocity_after_spinning(grid, solver, 0.0)
    damped = _angular_velocity_after_spinning(grid, solver, 1e-2)
    assert free > 0.99
    assert abs(damped - free) < 1e-5


def _bounce_of_a_released_strip(grid, solver, spring_damping):
    """A 0.2 x 3 m strip (5 x 61) pinned at the top, released at rest stretched 5%, no gravity,
    air or velocity damping: the largest distance of its bottom from rest length over 0.5-1 s, m."""
    v, f, index = grid(5, 61)
    v = v * (0.2, 1.0, 3.0)
    settings = Settings(solver=solver, iterations=8 if solver == "newton" else 2, damping=0.0, air_drag=0.0,
                        gravity=(0.0, 0.0, 0.0), spring_damping=spring_damping)
    sim = Simulation(v, f, settings, pinned=index[0])
    stretched = v * (1.0, 1.0, 1.05)
    sim.state = dataclasses.replace(sim.state, positions=stretched.copy(), previous=stretched.copy())
    sim.step(12)
    bounce = 0.0
    for _ in range(12):
        sim.step(1)
        bounce = max(bounce, abs(sim.positions[:, 2].min() + 3.0))
    return bounce


@pytest.mark.parametrize("solver", ["fast_mass_spring", "newton"])
def test_spring_damping_stops_a_stretched_strip_bouncing(grid, solver):
    """The strip's stretch vibration (about 5 Hz) gets the damping ratio beta * omega / 2:
    with 10 ms (0.15) it has all but stopped half a second after the release, while implicit
    Euler's own damping leaves it bouncing by millimetres."""
    free = _bounce_of_a_released_strip(grid, solver, 0.0)
    damped = _bounce_of_a_released_strip(grid, solver, 1e-2)
    assert free > 3e-3
    assert damped < 0.3 * free


def test_spring_damping_adds_no_force_at_rest(grid):
    """The damping springs' rest length is each spring's length at the substep's start: a cloth
    hanging at rest in its equilibrium stays there exactly."""
    v, f, index = grid(8, 8, size=0.5)
    sim = Simulation(v, f, Settings(spring_damping=0.0, damping=0.3), pinned=index[0])
    sim.step(400)
    settled = sim.state
    damped = Simulation(v, f, Settings(spring_damping=1e-2, damping=0.3), pinned=index[0])
    damped.state = settled
    sim.step(5)
    damped.step(5)
    np.testing.assert_allclose(damped.positions, sim.positions, atol=1e-7)
    assert np.abs(damped.positions - settled.positions).max() < 1e-6


def hammock(grid, n, iterations, solver="fast_mass_spring", **changes):
    """A 1 m sheet hung between two opposite edges; returns its settled sag at the middle, m."""
    v, f, index = grid(n, n, size=1.0, plane="xy")
    settings = Settings(solver=solver, iterations=iterations, damping=0.1, **changes)
    sim = Simulation(v, f, settings, pinned=np.concatenate([index[:, 0], index[:, -1]]))
    sim.step(150)
    return -sim.positions[:, 2].min()


def test_settled_sag_does_not_depend_on_iterations(grid):
    sags = [hammock(grid, 20, it) for it in (1, 2, 5, 10, 40)]
    assert max(sags) <= 1.03 * min(sags), sags


def test_material_does_not_depend_on_resolution(grid):
    coarse = hammock(grid, 10, 10, stretch_stiffness=300.0)
    fine = hammock(grid, 60, 10, stretch_stiffness=300.0)
    assert fine == pytest.approx(coarse, rel=0.10)


def test_moving_pins_never_refactor(grid):
    v, f, index = grid(10, 10)
    sim = Simulation(v, f, Settings(), pinned=index[0])
    for frame in range(1, 11):
        sim.move_pins(v[index[0]] + (0.05 * frame, 0.02 * frame, 0))
        sim.step()
    assert sim.solver.factorizations == 1
    np.testing.assert_allclose(sim.positions[index[0]], v[index[0]] + (0.5, 0.2, 0))


def test_tearing_refactors_at_most_once_per_step(grid):
    v, f, index = grid(12, 12)
    pins = np.concatenate([index[0], index[-1]])
    sim = Simulation(v, f, Settings(tear_factor=1.3, substeps=2), pinned=pins)
    tearing_steps = 0
    for frame in range(1, 31):
        pull = (0, 0, 0.03 * frame)
        sim.move_pins(np.concatenate([v[index[0]] + pull, v[index[-1]] - pull]))
        before_torn, before_factor = sim.torn.sum(), sim.solver.factorizations
        sim.step()
        grew = sim.solver.factorizations - before_factor
        assert grew <= sim.settings.substeps
        tearing_steps += sim.torn.sum() > before_torn
    assert sim.torn.sum() > 0
    # one factorisation at the start, then one per substep in which springs tore (lazily)
    assert sim.solver.factorizations <= 1 + tearing_steps * sim.settings.substeps


@pytest.mark.parametrize("backend", BACKENDS)
def test_factorised_solve_equals_dense_solve(grid, backend):
    v, f, index = grid(6, 5)
    sim = Simulation(v, f, Settings(), pinned=index[0])
    sim.step()
    solver = sim.solver
    system = sp.diags(solver.mass_f) + solver.h**2 * solver.L_ff
    rhs = np.random.default_rng(0).normal(size=(system.shape[0], 3))
    np.testing.assert_allclose(factorize(system, backend)(rhs), np.linalg.solve(system.toarray(), rhs),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("solver", ["fast_mass_spring", "verlet", "newton"])
def test_springs_without_compression_resist_stretching_only(grid, solver):
    v, f, _ = grid(6, 6, plane="xy")
    settings = Settings(solver=solver, compression=0.0, gravity=(0, 0, 0), bend_stiffness=0.0, air_drag=0.0)
    sim = Simulation(v * 0.8, f, settings)
    sim.state = type(sim.state)(v * 0.7, v * 0.7)  # compressed below rest everywhere: no force
    sim.step(5)
    np.testing.assert_allclose(sim.positions, v * 0.7, atol=1e-12)
    sim.state = type(sim.state)(v * 0.9, v * 0.9)  # stretched: pulled back towards the rest size
    sim.step(5)
    assert np.ptp(sim.positions[:, 0]) < 0.9 * np.ptp(v[:, 0])


def test_damping_does_not_depend_on_the_iteration_count(grid):
    # a falling sheet: each frame keeps (1 - damping) of its velocity and gains g h, whatever the
    # number of iterations (damping lives in the prediction, not in the iterations)
    v, f, _ = grid(6, 6, plane="xy")
    damping, frames, h = 0.1, 30, Settings().dt
    velocity, drop = 0.0, 0.0
    for _ in range(frames):
        velocity = (1 - damping) * velocity + 9.81 * h
        drop += velocity * h
    for iterations in (1, 10, 40):
        sim = Simulation(v, f, Settings(iterations=iterations, damping=damping, air_drag=0.0, substeps=1,
                                        imperfection=0.0))
        sim.step(frames)
        np.testing.assert_allclose(v[:, 2] - sim.positions[:, 2], drop, rtol=1e-9)
