"""Simulation.set_rest_shape: the cloth rests in a new shape (a deforming mesh's, every frame)."""

import numpy as np
import pytest

from cloth_addon.core import Settings, Simulation
from cloth_addon.core.simulation import ClothPart

SOLVERS = ["verlet", "fast_mass_spring", "newton"]


def spring_lengths(sim, x):
    i, j = sim.model.spring_indices.T
    return np.linalg.norm(x[i] - x[j], axis=1)


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_same_rest_shape_changes_nothing(grid, solver):
    v, f, index = grid(6, 6)
    settings = Settings(solver=solver)
    one, two = Simulation(v, f, settings, pinned=index[0]), Simulation(v, f, settings, pinned=index[0])
    one.step(3)
    two.step(3)
    two.set_rest_shape(v)
    one.step(3)
    two.step(3)
    np.testing.assert_allclose(two.positions, one.positions, rtol=0, atol=1e-12)


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring"])
def test_a_grown_rest_shape_makes_the_free_sheet_grow_to_it(grid, solver):
    v, f, _ = grid(6, 6)
    sim = Simulation(v, f, Settings(solver=solver, gravity=(0, 0, 0), damping=0.1, iterations=10))
    mass, state = sim.model.mass.copy(), sim.state
    sim.set_rest_shape(1.2 * v)
    # the state, the masses and the particles' rest positions stay; only the rest lengths moved
    np.testing.assert_array_equal(sim.positions, state.positions)
    np.testing.assert_array_equal(sim.model.mass, mass)
    np.testing.assert_allclose(sim.model.spring_rest_length, 1.2 * spring_lengths(sim, v), rtol=1e-12)
    sim.step(60)
    np.testing.assert_allclose(spring_lengths(sim, sim.positions), 1.2 * spring_lengths(sim, v), rtol=0.02)


def test_parts_keep_their_own_material(grid):
    v, f, index = grid(5, 5)
    soft, stiff = Settings(stretch_stiffness=100.0), Settings(stretch_stiffness=900.0)
    sim = Simulation.from_parts([ClothPart(v, f, settings=soft, pinned=index[0]),
                                 ClothPart(v + (2.0, 0.0, 0.0), f, settings=stiff, pinned=index[0])])
    stiffness = sim.model.spring_stiffness.copy()
    shape = sim.model.rest_positions * 1.1
    sim.set_rest_shape(shape)
    np.testing.assert_array_equal(sim.model.spring_stiffness, stiffness)
    np.testing.assert_array_equal(sim.model.pinned, np.concatenate([np.isin(np.arange(25), index[0])] * 2))
    np.testing.assert_allclose(sim.model.spring_rest_length, spring_lengths(sim, shape), rtol=1e-12)
    sim.step(2)
    assert np.all(np.isfinite(sim.positions))


def test_bad_rest_shapes_are_refused_and_change_nothing(grid):
    v, f, _ = grid(4, 4)
    sim = Simulation(v, f)
    rest = sim.model.spring_rest_length.copy()
    for bad in (v[:-1], np.full_like(v, np.nan)):
        with pytest.raises(ValueError, match="rest shape must be finite"):
            sim.set_rest_shape(bad)
    with pytest.raises(ValueError, match="collapses springs"):
        sim.set_rest_shape(np.zeros_like(v) + v[:1] * (np.arange(len(v)) % 2 == 0)[:, None])
    np.testing.assert_array_equal(sim.model.spring_rest_length, rest)
