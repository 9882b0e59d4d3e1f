"""Cost of self-collision: a 100 x 100 sheet (2 m) hanging from its pinned top row down to a floor,
lowered 3 cm per frame so that it piles up in folds (self-contacts), with and without
self-collision (thickness 1 cm, the panel's default self-collision distance; half the edge).

    python tools/bench_collision.py        (or through `python build.py bench`)
"""

import sys
import time
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cloth_addon.core import PlaneCollider, Settings, Simulation  # noqa: E402
from tools.scenes import grid  # noqa: E402

N, SIZE, THICKNESS, LOWER = 100, 2.0, 0.01, 0.03
WINDOWS = ((1, 8), (9, 16))  # first contacts, then a growing pile


def _scene(self_collision: bool, solver: str) -> tuple[Simulation, np.ndarray]:
    """(the simulation, (p, 3) rest positions of its pinned top row)."""
    vertices, faces, index = grid(N, N, SIZE, "xz")  # hanging, row 0 on top
    vertices = vertices + (0.0, 0.0, SIZE + THICKNESS)
    settings = Settings(solver=solver, self_collision=self_collision, self_collision_distance=THICKNESS)
    sim = Simulation(vertices, faces, settings, pinned=index[0], colliders=[PlaneCollider()])
    return sim, vertices[index[0]]


def _frames(sim: Simulation, top: np.ndarray, count: int) -> None:
    for _ in range(count):
        sim.move_pins(top - (0.0, 0.0, LOWER * (sim.frame + 1)))
        sim.step(1)


def _close_pairs(positions: np.ndarray) -> int:
    """How many particle pairs are closer than the self-collision thickness."""
    return len(cKDTree(positions).query_pairs(THICKNESS))


def _ms_per_frame(self_collision: bool, solver: str):
    """[(ms/frame, close particle pairs at the window's end) for each window]."""
    sim, top = _scene(self_collision, solver)
    out = []
    for first, last in WINDOWS:
        _frames(sim, top, first - 1 - sim.frame)
        started = time.perf_counter()
        _frames(sim, top, last - first + 1)
        ms = 1000.0 * (time.perf_counter() - started) / (last - first + 1)
        out.append((ms, _close_pairs(np.asarray(sim.positions))))
    return out


def run() -> None:
    """Print ms/frame with and without self-collision in each window, and the contacts then."""
    print(f"self-collision, {N}x{N} sheet ({SIZE:g} m) lowered onto a floor by its pinned top row, "
          f"{100 * LOWER:g} cm/frame, piling up in folds; thickness {100 * THICKNESS:g} cm:")
    for solver in ("fast_mass_spring",):
        off = _ms_per_frame(False, solver)
        on = _ms_per_frame(True, solver)
        for (first, last), (ms_off, _), (ms_on, pairs) in zip(WINDOWS, off, on, strict=True):
            print(f"  {solver} frames {first:2d}-{last:2d}: off {ms_off:7.1f} ms/frame   "
                  f"on {ms_on:7.1f} ms/frame   x{ms_on / ms_off:5.2f}   "
                  f"({pairs} particle pairs closer than the thickness at frame {last})")


if __name__ == "__main__":
    run()
