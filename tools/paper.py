"""`python build.py paper`: the experiments of Liu, O'Brien, Kavan 2013, on their setup.

A 50 x 50 particle sheet (4,802 triangles), h = 1/30 s, hanging from its two top corners
(Table 1, Fig. 2) or from its top edge (Fig. 4).
Prints Table 1 (relative error |x_k - x*| / |x_0 - x*| and time), writes Fig. 2
(docs/paper_fig2.png: error against iterations and against time) and Fig. 4
(docs/paper_fig4.png and a table: settled sag against iteration count, fast solver vs Verlet).
x* is Newton run to convergence on the same step, x_0 = y the inertial prediction.
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from cloth_addon.core import Settings, Simulation  # noqa: E402
from cloth_addon.core.solvers.fast_mass_spring import FastMassSpringSolver  # noqa: E402
from cloth_addon.core.solvers.newton import NewtonSolver  # noqa: E402
from tools.scenes import grid, paper_problem  # noqa: E402

DOCS = ROOT / "docs"
N = 50
SCENES = {"gentle": "gently swinging cloth (30 frames after release)",
          "violent": "released from a 30% stretched pose (first step)"}


def exact_solution(problem):
    newton = NewtonSolver(problem.sim.model, problem.sim.settings)
    return newton.advance(*problem.args(), iterations=100, tolerance=1e-10)


def trace(problem, exact, solver_name, iterations, chebyshev=False):
    """(errors, seconds) after k = 0..iterations: relative error and wall time (timed without
    the error bookkeeping: a second, untraced run per iteration count would be too slow, so
    the per-iteration cost is the untraced total divided evenly)."""
    settings = problem.sim.settings.replace(chebyshev=chebyshev)
    if solver_name == "newton":
        solver = NewtonSolver(problem.sim.model, settings)
        kwargs = {}
    else:
        solver = FastMassSpringSolver(problem.sim.model, settings)
        kwargs = {"start_at_y": True}
    y = solver.predict(*problem.args())
    scale = np.linalg.norm(y - exact)
    errors = []
    # This first (traced) run also factors M + h^2 L, once per simulation: the timed run below
    # does not include it.
    solver.advance(*problem.args(), iterations=iterations, observer=lambda k, x: errors.append(
        np.linalg.norm(x - exact) / scale), **kwargs)
    start = time.perf_counter()
    solver.advance(*problem.args(), iterations=iterations, **kwargs)
    per_iteration = (time.perf_counter() - start) / iterations
    return np.array(errors), per_iteration * np.arange(len(errors))


def timed(problem, solver_name, iterations, chebyshev=False, repeats=3):
    """Median seconds for one step with that many iterations (factorisation excluded)."""
    settings = problem.sim.settings.replace(chebyshev=chebyshev)
    cls = NewtonSolver if solver_name == "newton" else FastMassSpringSolver
    solver = cls(problem.sim.model, settings)
    kwargs = {} if solver_name == "newton" else {"start_at_y": True}
    if solver_name != "newton":
        # factored once per simulation, not per step: an untimed step does it
        solver.advance(*problem.args(), iterations=1, **kwargs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        solver.advance(*problem.args(), iterations=iterations, **kwargs)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def table1(results):
    print("\nTable 1: relative error |x_k - x*| / |x_0 - x*| and time per step (ms), 50 x 50, h = 1/30 s")
    rows = [("fast", False, (1, 10, 100)), ("fast + Chebyshev", True, (1, 10, 100)),
            ("Newton", None, (1, 2, 3))]
    for scene, data in results.items():
        print(f"\n  {scene}: {SCENES[scene]}")
        print(f"  {'method':<18}{'iterations':>11}{'error':>10}{'ms':>10}")
        for label, cheb, counts in rows:
            errors = data["newton" if cheb is None else ("cheb" if cheb else "fast")][0]
            for k in counts:
                ms = 1e3 * timed(data["problem"], "newton" if cheb is None else "fast", k, bool(cheb))
                print(f"  {label:<18}{k:>11}{errors[k]:>10.2e}{ms:>10.1f}")
        fast1, newton1 = data["fast"][0][1], data["newton"][0][1]
        verdict = "holds" if fast1 < newton1 else "does NOT hold"
        print(f"  paper's claim 'one fast iteration beats one Newton iteration' {verdict} here "
              f"({fast1:.3f} vs {newton1:.3f})")
        below = np.flatnonzero(data["fast"][0] < newton1)
        if len(below):
            fast_ms = 1e3 * timed(data["problem"], "fast", int(below[0]))
            newton_ms = 1e3 * timed(data["problem"], "newton", 1)
            print(f"  the fast solver gets below Newton's one-iteration error after {below[0]} iterations: "
                  f"{fast_ms:.1f} ms against {newton_ms:.0f} ms")


def rho_sweep(results):
    """Error after 10 iterations against Chebyshev's spectral-radius estimate rho."""
    rhos = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
    print("\nChebyshev: error after 10 iterations against rho (no acceleration: rho column 'off')")
    print(f"  {'scene':<10}{'off':>10}" + "".join(f"{rho:>10}" for rho in rhos))
    for scene, data in results.items():
        problem, exact = data["problem"], data["exact"]
        cells = [data["fast"][0][10]]
        for rho in rhos:
            settings = problem.sim.settings.replace(chebyshev=True, chebyshev_rho=rho)
            solver = FastMassSpringSolver(problem.sim.model, settings)
            y = solver.predict(*problem.args())
            x = solver.advance(*problem.args(), iterations=10, start_at_y=True)
            cells.append(np.linalg.norm(x - exact) / np.linalg.norm(y - exact))
        print(f"  {scene:<10}" + "".join(f"{c:>10.2e}" for c in cells))


def figure2(results, path):
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for row, (scene, data) in enumerate(results.items()):
        for label, key, style in (("fast", "fast", "-"), ("fast + Chebyshev", "cheb", "--"),
                                  ("Newton", "newton", "o-")):
            errors, seconds = data[key]
            axes[row, 0].semilogy(np.arange(len(errors)), errors, style, label=label, markersize=3)
            axes[row, 1].semilogy(1e3 * seconds, errors, style, label=label, markersize=3)
        axes[row, 0].set_title(f"{scene}: error vs iterations")
        axes[row, 1].set_title(f"{scene}: error vs time")
        axes[row, 0].set_xlabel("iterations")
        axes[row, 1].set_xlabel("time (ms)")
        for ax in axes[row]:
            ax.set_ylabel("|x - x*| / |x0 - x*|")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
    fig.suptitle("Fig. 2 reproduced: 50 x 50 sheet, h = 1/30 s")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def settled(solver, iterations, rigid=False):
    """Extra drop of the lowest point below the rest length (m) and max strain of the 50 x 50
    sheet hanging from its whole top edge, after it settles."""
    vertices, faces, index = grid(N, N, 1.0, "xz", triangles=True)
    rigid_springs = {"stretch_stiffness": np.inf, "shear_stiffness": np.inf, "bend_stiffness": np.inf}
    changes = rigid_springs if rigid else {}
    settings = Settings(solver=solver, iterations=iterations, dt=1.0 / 30.0, substeps=1, damping=0.05,
                        **changes)
    sim = Simulation(vertices, faces, settings, pinned=index[0])
    sim.step(200)
    i, j = sim.model.spring_indices.T
    strain = np.linalg.norm(sim.positions[i] - sim.positions[j], axis=1) / sim.model.spring_rest_length - 1
    return -sim.positions[:, 2].min() - 1.0, float(strain.max())


def figure4(path):
    counts = (1, 2, 5, 10, 20, 40)
    names = ("fast_mass_spring", "verlet (default stiffness, XPBD)", "verlet (rigid, Jakobsen's PBD)")
    curves = {name: [] for name in names}
    print("\nFig. 4: settled cloth hanging from its top edge, extra drop of its lowest point (mm) below"
          " the rest length, and max strain, against iterations per step")
    print(f"  {'iterations':>10}" + "".join(f"{name:>36}" for name in curves))
    for k in counts:
        cells = []
        for name, (solver, rigid) in zip(curves, (("fast_mass_spring", False), ("verlet", False),
                                                  ("verlet", True)), strict=True):
            sag, strain = settled(solver, k, rigid)
            curves[name].append((sag, strain))
            cells.append(f"{1e3 * sag:>10.1f} mm, strain {100 * strain:5.2f}%")
        print(f"  {k:>10}" + "".join(f"{c:>36}" for c in cells))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, values in curves.items():
        values = np.array(values)
        axes[0].loglog(counts, 1e3 * values[:, 0], "o-", label=name)
        axes[1].loglog(counts, 100 * values[:, 1], "o-", label=name)
    axes[0].set_ylabel("extra drop of the lowest point (mm)")
    axes[1].set_ylabel("max spring strain (%)")
    for ax in axes:
        ax.set_xlabel("iterations per step")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Fig. 4 reproduced: the fast solver's stiffness does not depend on the iteration count")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    fast = np.array(curves["fast_mass_spring"])[:, 0]
    print(f"  fast_mass_spring sag spread over 5..40 iterations: "
          f"{100 * (fast[2:].max() / fast[2:].min() - 1):.1f}%")


def main(argv: list[str]) -> int:
    DOCS.mkdir(exist_ok=True)
    results = {}
    for scene in SCENES:
        problem = paper_problem(scene, N)
        exact = exact_solution(problem)
        results[scene] = {
            "problem": problem,
            "exact": exact,
            "fast": trace(problem, exact, "fast", 100),
            "cheb": trace(problem, exact, "fast", 100, chebyshev=True),
            "newton": trace(problem, exact, "newton", 6),
        }
    table1(results)
    rho_sweep(results)
    figure2(results, DOCS / "paper_fig2.png")
    print(f"\nwrote {DOCS / 'paper_fig2.png'}")
    figure4(DOCS / "paper_fig4.png")
    print(f"wrote {DOCS / 'paper_fig4.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
