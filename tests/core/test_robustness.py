"""Hostile meshes and extreme settings: a clear ValueError or finite positions, never a crash."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloth_addon.core import PlaneCollider, Settings, Simulation, SimulationDiverged
from tools.scenes import grid

coordinate = st.floats(-2.0, 2.0, allow_nan=False, width=32)


@st.composite
def hostile_meshes(draw):
    """Random faces of 3-6 corners with repeated indices, coincident and collinear vertices,
    non-manifold edges, isolated vertices and loose edges."""
    n = draw(st.integers(1, 10))
    points = draw(st.lists(st.tuples(coordinate, coordinate, coordinate), min_size=n, max_size=n))
    vertices = np.array(points, dtype=np.float64)
    if n > 2 and draw(st.booleans()):
        vertices[draw(st.integers(0, n - 1))] = vertices[0]  # coincident vertices
    if n > 3 and draw(st.booleans()):
        vertices[:, 2] = 0.0  # flat, and with luck collinear: zero-area faces
    corner = st.integers(0, n - 1)
    faces = draw(st.lists(st.lists(corner, min_size=3, max_size=6), max_size=8))
    edges = draw(st.lists(st.tuples(corner, corner), max_size=5))
    pinned = draw(st.lists(corner, max_size=3, unique=True))
    return vertices, faces, np.array(edges, dtype=np.int64).reshape(-1, 2), pinned


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mesh=hostile_meshes())
def test_hostile_meshes_simulate_finitely_unless_a_face_is_degenerate(solver, mesh):
    """Only a face with fewer than 3 distinct vertices is an error (docs/API.md's list; the
    indices here are always in range and finite); every other mesh must simulate."""
    vertices, faces, edges, pinned = mesh
    degenerate = [index for index, face in enumerate(faces) if len(set(face)) < 3]

    def build():
        return Simulation(vertices, faces, Settings(solver=solver), pinned=pinned, edges=edges,
                          colliders=[PlaneCollider((0, 0, -3))])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zero-length springs dropped: said, allowed
        if degenerate:
            with pytest.raises(ValueError, match=f"face {degenerate[0]} has fewer than 3 distinct vertices"):
                build()
            return
        sim = build()
    sim.step(5)
    assert np.all(np.isfinite(sim.positions))
    assert np.array_equal(sim.positions[pinned], vertices[pinned])


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring", "newton"])
@pytest.mark.parametrize(
    "changes",
    [{"dt": 0.2}, {"stretch_stiffness": 1e7, "shear_stiffness": 1e7, "bend_stiffness": 1e7},
     {"iterations": 1}, {"dt": 0.2, "stretch_stiffness": 1e7, "iterations": 1}],
    ids=["dt0.2", "stiff1e7", "iter1", "all"],
)
def test_extreme_settings_stay_finite_and_bounded(solver, changes):
    v, f, index = grid(8, 8)
    sim = Simulation(v, f, Settings(solver=solver, **changes), pinned=index[0],
                     colliders=[PlaneCollider((0, 0, -1.5))])
    sim.step(30)
    assert np.all(np.isfinite(sim.positions))
    assert np.abs(sim.positions).max() < 3.0


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring", "newton"])
def test_one_particle_falls(solver):
    sim = Simulation([(0.0, 0.0, 1.0)], [], Settings(solver=solver, air_drag=0.0, damping=0.0, substeps=1))
    sim.step(24)
    h = Settings().dt
    assert sim.positions[0, 2] == pytest.approx(1.0 - 9.81 * h * h * 24 * 25 / 2)


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring", "newton"])
def test_everything_pinned_stays_put(solver):
    v, f, _ = grid(5, 5)
    sim = Simulation(v, f, Settings(solver=solver), pinned=np.ones(len(v), dtype=bool))
    sim.step(10)
    np.testing.assert_array_equal(sim.positions, v)


@pytest.mark.parametrize("solver", ["verlet", "fast_mass_spring"])
def test_nothing_pinned_falls_forever_without_overflow(solver):
    v, f, _ = grid(2, 2)  # small and few iterations: this is about 10,000 frames, not accuracy
    sim = Simulation(v, f, Settings(solver=solver, air_drag=0.0, damping=0.0, iterations=2))
    sim.step(10_000)
    t = 10_000 * sim.settings.dt
    assert np.all(np.isfinite(sim.positions))
    assert -sim.positions[:, 2].max() == pytest.approx(0.5 * 9.81 * t * t, rel=0.01)
    # it fell as one piece: the springs kept their lengths
    i, j = sim.model.spring_indices.T
    length = np.linalg.norm(sim.positions[i] - sim.positions[j], axis=1)
    np.testing.assert_allclose(length, sim.model.spring_rest_length, rtol=1e-3)


class NaNCollider:
    """A broken user collider: writes NaN into the first particle."""

    def project(self, positions, previous, movable, margin=0.0, friction=0.0):
        positions[0] = np.nan


def test_divergence_is_stopped_with_a_clear_error_and_the_state_kept(grid=grid):
    v, f, index = grid(4, 4)
    sim = Simulation(v, f, Settings(), pinned=index[0])
    sim.step(3)
    before = sim.state
    sim.colliders.append(NaNCollider())
    with pytest.raises(SimulationDiverged, match="not finite"):
        sim.step()
    np.testing.assert_array_equal(sim.positions, before.positions)
    assert sim.frame == 3


def test_mesh_limit_refuses_before_building_and_says_how_to_raise_it():
    v = np.zeros((300_000, 3))
    with pytest.raises(ValueError, match="raise Settings.max_vertices"):
        Simulation(v, [(0, 1, 2)])
    sim = Simulation(np.random.default_rng(0).random((12, 3)), [(0, 1, 2)], Settings(max_vertices=12))
    assert sim.model.n_particles == 12


class FlingCollider:
    """A broken user collider: throws one particle 10 km away (finite, but absurd)."""

    def project(self, positions, previous, movable, margin=0.0, friction=0.0):
        positions[-1] += 1e4


def test_an_exploding_cloth_is_stopped_too():
    v, f, index = grid(4, 4)
    sim = Simulation(v, f, Settings(), pinned=index[0], colliders=[FlingCollider()])
    with pytest.raises(SimulationDiverged, match="grew past"):
        sim.step()
    np.testing.assert_array_equal(sim.positions, v)
