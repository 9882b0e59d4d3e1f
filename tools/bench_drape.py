"""`python build.py bench --drape [--newton]`: why the default drape clings to its ball (docs/PHYSICS.md
§9, "Known limit: a drape clings"), in the core, no Blender.

The scene is the bench's drape (tools/bench_profile.py: 50 x 50, 1.6 m, onto a 0.45 m ball on a
floor, 100 frames). Printed for each way: the share of particles within 5 cm of the ball every 20
frames (a cloth hanging in flaps ends near 0.7, one wrapped round the ball's lower half near 1).
    defaults             5 substeps x 2 iterations and the vertex step
    no vertex step       the iterations alone
    10 iterations, 20 substeps, 30 iterations without the step (close to converged)
    contact memory 1     the defaults with the whole held contact force carried to the next
                         substep (contact/stage.py CONTACT_MEMORY, 0.9)
    newton               the reference solver (--newton: about 90 s)
Then the drift test: from the converged drape at rest, switched to the defaults, how far the hanging
cloth moves towards the ball over 10 frames, with the ball as it is and with the particles the ball
held pinned where they are instead (no contact left).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cloth_addon.core import PlaneCollider, Settings, Simulation, SphereCollider  # noqa: E402
from cloth_addon.core.contact import stage  # noqa: E402
from tools.bench_profile import FLOOR  # noqa: E402
from tools.scenes import grid  # noqa: E402

CENTRE = np.array([0.0, 0.0, 0.45])
RADIUS = 0.45
NEAR = 0.05  # m from the ball's surface
FRAMES = 100


def colliders():
    return [PlaneCollider(**FLOOR), SphereCollider(tuple(CENTRE), RADIUS, **FLOOR)]


def drape(vertex_step=True, pinned=None, start=None, **settings):
    """The drape Simulation; pinned: particle indices (the ball is then left out), start: (n, 3)."""
    vertices, faces, _ = grid(50, 50, 1.6, "xy")
    vertices = vertices - (0.8, 0.8, -1.2)
    sim = Simulation(vertices, faces, Settings(**settings), pinned=pinned,
                     colliders=[PlaneCollider(**FLOOR)] if pinned is not None else colliders())
    if not vertex_step:
        sim.solver.vertex_newton = None
    if start is not None:
        sim.reset(start)
    return sim


def near(x: np.ndarray) -> float:
    return float(np.mean(np.linalg.norm(x - CENTRE, axis=1) < RADIUS + NEAR))


def play(label: str, sim) -> np.ndarray:
    shares, start = [], time.perf_counter()
    for frame in range(1, FRAMES + 1):
        sim.step(1)
        if frame % 20 == 0:
            shares.append(near(sim.positions))
    ms = 1000.0 * (time.perf_counter() - start) / FRAMES
    print(f"{label:34s} " + "  ".join(f"{s:.2f}" for s in shares) + f"   {ms:6.1f} ms/frame", flush=True)
    return sim.positions


def drift(converged: np.ndarray) -> None:
    """How far the cloth hanging off the ball moves towards it in 10 frames once the defaults take
    over from a converged drape at rest, with the ball and with its contacts pinned instead."""
    off = np.linalg.norm(converged - CENTRE, axis=1) > RADIUS + 0.08
    held = np.flatnonzero(np.linalg.norm(converged - CENTRE, axis=1) < RADIUS + 0.03)
    for label, pinned in (("the ball", None), ("its contacts pinned, no ball", held)):
        sim = drape(pinned=pinned, start=converged, imperfection=0.0)
        solver, step = sim.solver, sim.solver.vertex_newton
        # 10 converged frames first: the contact forces (or the pins) take over the cloth's weight
        solver.iterations, solver.vertex_newton = 30, None
        sim.step(10)
        before = sim.positions
        solver.iterations, solver.vertex_newton = 2, step
        sim.step(10)
        after = sim.positions
        inward = np.linalg.norm(before - CENTRE, axis=1) - np.linalg.norm(after - CENTRE, axis=1)
        print(f"  {label:30s} hanging cloth moved {1000.0 * inward[off].mean():6.1f} mm towards the ball "
              f"(share near it {near(before):.2f} -> {near(after):.2f})")


def run(argv) -> int:
    parser = argparse.ArgumentParser(prog="python build.py bench --drape", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--newton", action="store_true", help="also the Newton solver (about 90 s)")
    args = parser.parse_args(argv)
    print(f"share of particles within {100 * NEAR:.0f} cm of the ball at frames 20, 40, ... {FRAMES}")
    play("defaults", drape())
    play("no vertex step", drape(vertex_step=False))
    play("10 iterations", drape(iterations=10))
    play("20 substeps", drape(substeps=20))
    converged = play("30 iterations, no vertex step", drape(iterations=30, vertex_step=False))
    memory = stage.CONTACT_MEMORY
    stage.CONTACT_MEMORY = 1.0
    try:
        play("defaults, contact memory 1", drape())
    finally:
        stage.CONTACT_MEMORY = memory
    if args.newton:
        play("newton", drape(solver="newton"))
    print("drift from the converged drape at rest, 10 frames at the defaults:")
    drift(converged)
    return 0


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
