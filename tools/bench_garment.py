"""Cost of sewing, pressure and property weights per frame (prints numbers, never asserts).

Run: PYTHONPATH=. .venv/bin/python tools/bench_garment.py

Two scenes of about 2,500 particles, fast mass-spring, the default substeps and iterations, 24 fps,
each played with and without the features (the mesh, and so the spring count, is the same):
- sheet: a 50 x 50 sheet (2 m) hanging from its top row; "with" paints a stretch, shear and bend
  group over half of it and sews 49 loose edges joining its side columns (a sleeve closing);
  "without" keeps those edges as ropes and has no weights.
- pillow: a closed cube of 6 x 20 x 20 quads (2,402 particles) on a floor with 16 loose edges
  from its top face to the bottom one; "with" inflates it at 1,000 Pa and sews the edges (a
  tufted cushion) with weights; "without" has ropes, no pressure, no weights (so it collapses
  on the floor: the two runs' contacts differ, which the sheet's do not).
Medians over 60 frames after a 5-frame warm-up; the two runs step in turn, frame by frame.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cloth_addon.core import PlaneCollider, Settings, Simulation  # noqa: E402
from tools.scenes import cloth_cube, grid  # noqa: E402


def median_ms(sims, frames=60, warmup=5):
    """ms per frame of each simulation (median), stepped in turn frame by frame so that the load
    of a shared machine falls on all of them alike."""
    times = np.empty((frames, len(sims)))
    for sim in sims:
        sim.step(warmup)
    for frame in range(frames):
        for k, sim in enumerate(sims):
            start = time.perf_counter()
            sim.step(1)
            times[frame, k] = time.perf_counter() - start
    return 1000.0 * np.median(times, axis=0)


def weights_for(vertices):
    half = (vertices[:, 0] < np.median(vertices[:, 0])).astype(float)
    return {"stretch": half, "shear": half, "bend": half}


def sheet(features: bool):
    vertices, faces, index = grid(50, 50, 2.0, plane="xy")
    edges = np.stack([index[1:, 0], index[1:, -1]], axis=1)
    settings = Settings(use_sewing=features, sewing_force_max=5.0 if features else 0.0,
                        stretch_stiffness_max=2000.0, shear_stiffness_max=200.0, bend_stiffness_max=4.0)
    return Simulation(vertices, faces, settings, pinned=index[0], edges=edges,
                      weights=weights_for(vertices) if features else None)


def pillow(features: bool):
    vertices, faces = cloth_cube(21, size=0.5, center=(0.0, 0.0, 0.26))
    top = np.flatnonzero(np.isclose(vertices[:, 2], 0.51))
    bottom = np.flatnonzero(np.isclose(vertices[:, 2], 0.01))
    # a grid of tufts: a top vertex sewn to the bottom vertex below it
    pick = top[(np.abs(vertices[top, 0] * 40) % 4 < 0.5) & (np.abs(vertices[top, 1] * 40) % 4 < 0.5)]
    below = bottom[np.argmin(np.linalg.norm(vertices[pick, None, :2] - vertices[None, bottom, :2], axis=2),
                             axis=1)]
    edges = np.stack([pick, below], axis=1)
    settings = Settings(use_sewing=features, sewing_force_max=5.0 if features else 0.0,
                        use_pressure=features, pressure=1000.0, stretch_stiffness_max=2000.0,
                        shear_stiffness_max=200.0, bend_stiffness_max=4.0)
    return Simulation(vertices, faces, settings, edges=edges, colliders=[PlaneCollider()],
                      weights=weights_for(vertices) if features else None)


def main():
    for name, build in (("sheet 50x50", sheet), ("pillow 2,402", pillow)):
        plain, featured = build(False), build(True)
        sewn = int((featured.model.spring_kind == 3).sum())
        without, with_ = median_ms([plain, featured])
        print(f"{name}: {plain.model.n_particles} particles, {plain.model.n_springs} springs, {sewn} sewn: "
              f"without {without:.1f} ms/frame, with {with_:.1f} ms/frame, ratio {with_ / without:.2f}")


if __name__ == "__main__":
    main()
