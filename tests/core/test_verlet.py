"""The Verlet/Jakobsen solver against the JavaScript demo (docs/PHYSICS.md §3) and a sequential reference."""

import functools
import itertools

import numpy as np
import pytest
from demo_port import demo_constraints

from cloth_addon.core import Settings, Simulation, SphereCollider


def sequential_relaxation(model, h, iterations, order, predicted):
    """XPBD (Macklin et al. 2016) Gauss-Seidel one spring at a time, in `order`: the slow
    reference, computed from the model's springs and masses alone.

    Per spring: C = |p_j - p_i| - r, alpha = 1 / (k h^2) (1 / (c k h^2) while C < 0, c the
    spring's compression ratio), dlambda = -(C + alpha lambda) / (w_i + w_j + alpha),
    p_i -= w_i dlambda n, p_j += w_j dlambda n with n = (p_j - p_i) / |p_j - p_i|.
    """
    p = predicted.copy()
    w = model.inv_mass
    lambdas = np.zeros(model.n_springs)
    for _ in range(iterations):
        for s in order:
            i, j = model.spring_indices[s]
            k = model.spring_stiffness[s]
            alpha = 0.0 if np.isinf(k) else 1.0 / (k * h * h)
            d = p[j] - p[i]
            length = np.sqrt(d @ d)
            if length < model.spring_rest_length[s] and model.spring_compression is not None:
                alpha /= model.spring_compression[s]
            step = -(length - model.spring_rest_length[s] + alpha * lambdas[s]) / (w[i] + w[j] + alpha)
            lambdas[s] += step
            p[i] -= w[i] * step * d / length
            p[j] += w[j] * step * d / length
    return p


def test_coloured_pass_equals_sequential_loop(grid):
    v, f, index = grid(7, 6)
    settings = Settings(solver="verlet", iterations=4, stretch_stiffness=300.0)
    sim = Simulation(v, f, settings, pinned=index[0, :3])
    solver = sim.solver
    rng = np.random.default_rng(1)
    x = v + rng.normal(scale=0.02, size=v.shape)
    accel = np.tile(settings.gravity, (len(v), 1))
    targets = v[sim.model.pinned_indices]
    fast = solver.advance(x, x, accel, targets)
    # The colour order is the one thing taken from the solver: Gauss-Seidel depends on the order.
    order = np.concatenate([group["ids"] for group in solver.colours])
    i, j = sim.model.spring_indices.T
    movable = np.flatnonzero(sim.model.inv_mass[i] + sim.model.inv_mass[j] > 0.0)
    assert sorted(order) == movable.tolist()  # every spring that can move, once
    reference = sequential_relaxation(sim.model, settings.h, settings.iterations, order,
                                      solver.predict(x, x, accel, targets))
    np.testing.assert_allclose(fast, reference, atol=1e-12)


def max_strain(sim):
    i, j = sim.model.spring_indices.T
    length = np.linalg.norm(sim.positions[i] - sim.positions[j], axis=1)
    return (length / sim.model.spring_rest_length - 1.0).max()


def test_constraint_error_falls_as_iterations_rise(grid):
    v, f, index = grid(20, 20)
    strains = []
    for iterations in (1, 2, 5, 10, 20, 40):
        settings = Settings(solver="verlet", iterations=iterations, stretch_stiffness=np.inf,
                            shear_stiffness=np.inf, bend_stiffness=np.inf)
        sim = Simulation(v, f, settings, pinned=index[0])
        sim.step(24)
        strains.append(max_strain(sim))
    assert all(a > b for a, b in itertools.pairwise(strains)), strains
    assert strains[-1] < 0.2 * strains[0]


# -- the JavaScript demo (docs/PHYSICS.md §3), in metres: 20 x 20 particles, 15 cm apart, top row pinned
COLS = ROWS = 20
SPACING = 0.15
SPHERE = np.array([1.4, -1.5, 0.0])
RADIUS = 0.8


@functools.cache
def demo_reference(frames):
    """The demo's JavaScript, ported line by line (pinned partner: the other still moves half)."""
    pos = np.array([(c * SPACING, -r * SPACING, 0.0) for r in range(ROWS) for c in range(COLS)])
    prev = pos.copy()
    pinned = np.array([r == 0 for r in range(ROWS) for c in range(COLS)])
    cons = demo_constraints(COLS, ROWS)
    rest = [np.linalg.norm(pos[b] - pos[a]) for a, b in cons]
    dt, g = 0.016, np.array([0.0, -9.8, 0.0])
    for _ in range(frames):
        free = ~pinned
        vel = (pos[free] - prev[free]) * 0.99
        prev[free] = pos[free]
        pos[free] += vel + g * dt * dt
        for _ in range(5):
            for (a, b), r in zip(cons, rest, strict=True):
                d = pos[b] - pos[a]
                dist = np.sqrt(d @ d) or 0.0001
                corr = d * ((dist - r) / dist) * 0.5
                if not pinned[a]:
                    pos[a] += corr
                if not pinned[b]:
                    pos[b] -= corr
        off = pos - SPHERE
        dist = np.linalg.norm(off, axis=1)
        inside = dist < RADIUS
        pos[inside] = SPHERE + off[inside] / dist[inside, None] * RADIUS
    return pos


@pytest.mark.parametrize("rigid", [False, True], ids=["default-stiffness", "rigid"])
def test_javascript_demo_reproduced(rigid):
    """The demo's settings: its springs resist compression as they resist stretching
    (compression 1) and its cloth starts exactly flat (no imperfection). At the default stiffness
    our relaxation is XPBD with a compliance ~1% of the inverse masses here; with infinite
    stiffness it is the demo's projection."""
    frames = 150
    expected = demo_reference(frames)
    v = np.array([(c * SPACING, -r * SPACING, 0.0) for r in range(ROWS) for c in range(COLS)])
    faces = [(r * COLS + c, r * COLS + c + 1, (r + 1) * COLS + c + 1, (r + 1) * COLS + c)
             for r in range(ROWS - 1) for c in range(COLS - 1)]
    settings = Settings(solver="verlet", iterations=5, substeps=1, dt=0.016, damping=0.01,
                        gravity=(0, -9.8, 0), air_drag=0.0, collision_distance=0.0, compression=1.0,
                        imperfection=0.0)
    if rigid:
        settings = settings.replace(stretch_stiffness=np.inf, shear_stiffness=np.inf, bend_stiffness=np.inf)
    sim = Simulation(v, faces, settings, pinned=np.arange(COLS), colliders=[SphereCollider(SPHERE, RADIUS)])
    sim.step(frames - 1)
    before = sim.positions.copy()
    sim.step(1)
    ours = sim.positions
    # like the JavaScript demo's: a settled sheet hanging from its top row, around the ball
    assert np.linalg.norm(ours - SPHERE, axis=1).min() >= RADIUS - 1e-9
    assert np.abs(ours - before).max() < 2e-3  # settled: under 2 mm per frame
    # The ball cuts through the sheet's plane, so particles settle on either side of it and a
    # different Gauss-Seidel order (ours is by colour) picks other sides: compare the drape's
    # shape (extent, centre, stretch), not particle by particle.
    # (the demo moves a pin's partner only half way, so its top corners swing out ~10 cm more;
    # our friction is Coulomb's, from the normal velocity change: the bottom hangs ~10 cm lower,
    # 3% of the 3 m drop)
    np.testing.assert_allclose(ours.min(axis=0), expected.min(axis=0), atol=0.12)
    np.testing.assert_allclose(ours.max(axis=0), expected.max(axis=0), atol=0.1)
    np.testing.assert_allclose(ours.mean(axis=0), expected.mean(axis=0), atol=0.07)  # the lower bottom
    i, j = sim.model.spring_indices.T
    ours_strain, demo_strain = (np.linalg.norm(p[i] - p[j], axis=1) / sim.model.spring_rest_length - 1
                                for p in (ours, expected))
    # springs that straddle the ball stretch; most keep their length, in both within 1.5% alike
    # (ours hangs lower, see above: median 3.3% against 2.1%)
    assert abs(np.median(np.abs(ours_strain)) - np.median(np.abs(demo_strain))) < 0.015
    stretched = np.mean(ours_strain > 0.05), np.mean(demo_strain > 0.05)
    # inverse-mass weighting lets a pin's partner move all the way, so rigid ours stretches
    # less; the default compliance gives back a little of that
    # (and our Coulomb friction holds the sheet on the ball less than the demo's stiffer rows:
    # at the default compliance 26% of the springs stretch past 5%, the demo's 18%)
    assert 0.5 * stretched[1] < stretched[0] <= stretched[1] + (0.0 if rigid else 0.1)
