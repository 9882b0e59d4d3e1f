"""Reference meshes and scenes: grids for scripts and benchmarks, and the paper's test problems.

The paper's setup (Liu et al. 2013): a 50 x 50 particle sheet, 4,802 triangles, h = 1/30 s.
`paper_problem` freezes one implicit Euler step of it, so that solvers can be compared on
the same minimisation: same y, same x* (Newton run to convergence).
"""

from dataclasses import dataclass

import numpy as np

from . import forces
from .settings import Settings
from .simulation import Simulation


def grid(nx: int, ny: int, size: float = 1.0, plane: str = "xz", triangles: bool = False):
    """A regular sheet of nx x ny vertices, `size` metres square, row 0 on top.

    plane "xz": hanging (row r at z = -r * spacing, y = 0); "xy": lying flat at z = 0.
    triangles: split every quad into two triangles (the paper's 2 (nx-1)(ny-1) triangles).
    Returns vertices (n, 3) float64, faces (m, 4 or 3) int64, index (ny, nx) int64 (vertex
    number of each grid point, e.g. index[0] is the top row).
    """
    if plane not in ("xz", "xy"):
        raise ValueError(f"plane must be 'xz' or 'xy', got {plane!r}")
    xs, ys = np.meshgrid(np.linspace(0.0, size, nx), np.linspace(0.0, size, ny))
    zeros = np.zeros(nx * ny)
    if plane == "xz":
        vertices = np.stack([xs.ravel(), zeros, -ys.ravel()], axis=1)
    else:
        vertices = np.stack([xs.ravel(), ys.ravel(), zeros], axis=1)
    index = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]], axis=-1).reshape(-1, 4)
    if triangles:
        return vertices, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]), index
    return vertices, quads, index


@dataclass
class StepProblem:
    """One implicit Euler step, frozen: the solver's advance(positions, previous, accel, pin_targets)."""

    sim: Simulation
    positions: np.ndarray
    previous: np.ndarray
    accel: np.ndarray
    pin_targets: np.ndarray

    @property
    def h(self) -> float:
        return self.sim.settings.h

    def args(self):
        return self.positions, self.previous, self.accel, self.pin_targets


def paper_problem(kind: str = "gentle", n: int = 50, settings: Settings | None = None) -> StepProblem:
    """The paper's sheet (n x n particles, triangulated, 1 m, h = 1/30 s) hanging from its two
    top corners, at one step:

    "gentle":  30 frames after release from hanging straight: a softly swinging cloth.
    "violent": released from a pose stretched 30% along its height, at the first step.
    """
    settings = settings or Settings(dt=1.0 / 30.0, substeps=1, iterations=10)
    vertices, faces, index = grid(n, n, 1.0, "xz", triangles=True)
    sim = Simulation(vertices, faces, settings, pinned=[index[0, 0], index[0, -1]])
    if kind == "gentle":
        sim.step(30)
    elif kind == "violent":
        state = sim.state
        state.positions = vertices * (1.0, 1.0, 1.3)
        state.previous = state.positions.copy()
        sim.state = state
    else:
        raise ValueError(f"kind must be 'gentle' or 'violent', got {kind!r}")
    state = sim.state
    h = settings.h
    velocity = (state.positions - state.previous) / h
    accel = forces.external_acceleration(sim.model, state.positions, velocity, settings, h)
    return StepProblem(sim, state.positions, state.previous, accel,
                       state.positions[sim.model.pinned_indices].copy())


def flag(nx: int = 45, ny: int = 30, length: float = 1.5, height: float = 1.0, angle: float = 10.0):
    """A flag: length x height m, nx x ny vertices, vertical in the XZ plane (x along the flag, z
    up, bottom edge at z = 1 m), pinned along its short edge at x = 0; and the direction (3,) of a
    wind along +x turned `angle` degrees out of the flag's plane (towards +y).

    Returns vertices (n, 3), faces (m, 4), pinned indices (ny,), wind direction (3,).
    """
    xs, zs = np.meshgrid(np.linspace(0.0, length, nx), np.linspace(height, 0.0, ny))
    vertices = np.stack([xs.ravel(), np.zeros(nx * ny), 1.0 + zs.ravel()], axis=1)
    index = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    turn = np.radians(angle)
    return vertices, quads, index[:, 0].copy(), np.array([np.cos(turn), np.sin(turn), 0.0])

