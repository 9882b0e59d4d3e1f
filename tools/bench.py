"""`python build.py bench`: solver benchmarks that print numbers (never assert).

`python build.py bench --vs-blender [options]` runs only the comparison with Blender's cloth
(tools/bench_blender.py; `--vs-blender --help` lists its options); `python build.py bench --buckling`
only the buckling scenes beside Blender's (tools/bench_buckling.py); `python build.py bench --profile
SCENE` only where a contact scene's frame goes (tools/bench_profile.py); `python build.py bench --drape`
only why the default drape clings to its ball (tools/bench_drape.py).

Scene: a 2 m square sheet lying flat, its top row pinned, swinging down under gravity (the
default settings: 5 substeps of 2 iterations, cotton, 24 fps). Each number is the median over
frames after a warm-up, which keeps the noise of a shared 2-core machine out of it as far as
possible.
"""

import importlib.util
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cloth_addon.core import Settings, Simulation  # noqa: E402
from cloth_addon.core.solvers.factor import BACKENDS, factorize  # noqa: E402
from tools.bench_profile import Phases  # noqa: E402
from tools.scenes import grid  # noqa: E402

SIZES = (50, 100)
TARGETS = {("verlet", 50): 10.0, ("fast_mass_spring", 50): 8.0, ("fast_mass_spring", 100): 60.0}


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Model name" in line)
    except (OSError, StopIteration):
        model = platform.processor() or "unknown CPU"
    cores = len(os.sched_getaffinity(0))
    return f"{model}, {cores} cores, Python {platform.python_version()}, numpy {np.__version__}"


def sheet(n: int, solver: str, **changes) -> Simulation:
    vertices, faces, index = grid(n, n, 2.0, plane="xy")
    return Simulation(vertices, faces, Settings(solver=solver, **changes), pinned=index[0])


def frame_times(sim: Simulation, frames: int, warmup: int = 3) -> np.ndarray:
    """Seconds per frame, one entry per measured frame."""
    sim.step(warmup)
    times = np.empty(frames)
    for k in range(frames):
        start = time.perf_counter()
        sim.step(1)
        times[k] = time.perf_counter() - start
    return times


def bench_solvers() -> None:
    print("\nms/frame (median), 2 m sheet, top row pinned, defaults (5 substeps x 2 iterations), 24 fps")
    print(f"{'solver':<18}{'grid':>9}{'particles':>11}{'springs':>9}{'ms/frame':>10}{'target':>9}")
    for solver in ("verlet", "fast_mass_spring"):
        for n in SIZES:
            sim = sheet(n, solver)
            times = frame_times(sim, 30 if n <= 50 else 15)
            target = TARGETS.get((solver, n))
            mark = f"<= {target:g}" if target else ""
            print(f"{solver:<18}{f'{n}x{n}':>9}{sim.model.n_particles:>11}{sim.model.n_springs:>9}"
                  f"{1e3 * np.median(times):>10.2f}{mark:>9}")


def bench_fast_solver_parts() -> None:
    print("\nfast_mass_spring: where a frame's time goes (ms/frame, medians of 3 runs of 10 frames)")
    print(f"{'grid':>9}{'local':>9}{'rhs':>9}{'solve':>9}{'vertex':>9}{'other':>9}{'total':>9}")
    for n in SIZES:
        rows = []
        for _ in range(3):
            sim = sheet(n, "fast_mass_spring")
            sim.step(3)  # factored by now: the wrapped solve stays in place
            timer = Phases(("local", "rhs", "solve", "vertex"))
            for phase, method in (("local", "spring_targets"), ("rhs", "right_hand_side"), ("solve", "solve"),
                                  ("vertex", "_vertex_step")):
                timer.wrap(sim.solver, method, phase)
            start = time.perf_counter()
            sim.step(10)
            total = (time.perf_counter() - start) / 10
            t = {k: v / 10 for k, v in timer.seconds.items()}
            parts = [t["local"], t["rhs"], t["solve"], t["vertex"]]
            rows.append([*parts, total - sum(parts), total])
        local, rhs, solve, vertex, other, total = 1e3 * np.median(np.array(rows), axis=0)
        print(f"{f'{n}x{n}':>9}{local:>9.2f}{rhs:>9.2f}{solve:>9.2f}{vertex:>9.2f}{other:>9.2f}{total:>9.2f}")
    print("  local = spring targets (normalise p1 - p2); rhs = M y + h^2 J d; solve = the prefactored"
          " global step;\n  vertex = the vertex Newton step after the iterations (its local step counted"
          " in local);\n  other = forces, prediction, sparse p1 - p2, collisions")


def bench_factorisation() -> None:
    print("\nfactorisation of M + h^2 L and one solve with 3 right-hand sides (ms, median of 5)")
    print(f"{'grid':>9}{'backend':>10}{'factor':>9}{'solve':>9}{'target':>14}")
    for n in SIZES:
        sim = sheet(n, "fast_mass_spring")
        solver = sim.solver
        sim.step(1)  # the first step factors M + h^2 L: mass_f and L_ff exist from then on
        system = (sp.diags(solver.mass_f) + solver.h**2 * solver.L_ff).tocsc()
        rhs = np.random.default_rng(0).normal(size=(system.shape[0], 3))
        for backend in BACKENDS:
            factor_times, solve_times = [], []
            for _ in range(5):
                start = time.perf_counter()
                solve = factorize(system, backend)
                factor_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                solve(rhs)
                solve_times.append(time.perf_counter() - start)
            target = "factor <= 300" if n == 100 else ""
            print(f"{f'{n}x{n}':>9}{backend:>10}{1e3 * np.median(factor_times):>9.2f}"
                  f"{1e3 * np.median(solve_times):>9.3f}{target:>14}")


def run_optional(module: str, *args) -> int:
    """Run tools/<module>.py's run() if that module exists (benchmarks owned elsewhere)."""
    path = ROOT / "tools" / f"{module}.py"
    if not path.exists():
        print(f"\n({module}: not available in this checkout)")
        return 0
    spec = importlib.util.spec_from_file_location(module, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded.run(*args) or 0


def main(argv: list[str]) -> int:
    if "--vs-blender" in argv:  # the comparison with Blender's cloth alone: it takes minutes by itself
        return run_optional("bench_blender", [a for a in argv if a != "--vs-blender"])
    if "--buckling" in argv:  # cloth compressed in its plane, ours beside Blender's (tools/bench_buckling.py)
        return run_optional("bench_buckling", [a for a in argv if a != "--buckling"])
    if "--drape" in argv:  # why the default drape clings to its ball (tools/bench_drape.py)
        return run_optional("bench_drape", [a for a in argv if a != "--drape"])
    if "--profile" in argv:  # where a contact scene's frame goes, in the core
        return run_optional("bench_profile", [a for a in argv if a != "--profile"])
    print(f"machine: {machine()}; factorisation backends: {', '.join(BACKENDS)}")
    bench_solvers()
    bench_fast_solver_parts()
    bench_factorisation()
    return run_optional("bench_collision")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
