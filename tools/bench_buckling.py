"""Buckling: the pile scene's strip (8 x 60, 0.4 x 3.0 m, hanging in the xz plane, its bottom
0.1 m above the floor, released; 30 fps, self-collision off unless asked) landing on its edge must
buckle and fold down. Prints the highest vertex every 6 frames, per solver and iteration count,
and with --blender the same for Blender's Cloth (its defaults, through tools/bench_blender.py).

    python tools/bench_buckling.py [--frames 42] [--self-collision] [--exact] [--blender]

The core runs start from positions moved by a deterministic 1e-6 of an edge length (seeded
noise, positions and previous alike: no velocity), because a perfectly planar sheet under
gravity in its plane never leaves that plane in this model; --exact runs without it.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tools"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from cloth_addon.core import PlaneCollider, Settings, Simulation  # noqa: E402
from cloth_addon.core.scenes import grid  # noqa: E402

WAYS = (("fast_mass_spring, 2 iterations (default)", {}),
        ("fast_mass_spring, 4 iterations", {"iterations": 4}),
        ("fast_mass_spring, 10 iterations", {"iterations": 10}),
        ("fast_mass_spring, 30 iterations", {"iterations": 30}),
        ("fast_mass_spring, 100 iterations", {"iterations": 100}),
        ("fast_mass_spring, 20 substeps", {"substeps": 20}),
        ("fast_mass_spring, one_sided", {"one_sided": True}),
        ("verlet", {"solver": "verlet"}),
        ("newton", {"solver": "newton"}))


def strip(exact: bool, **settings) -> Simulation:
    """The strip with Settings(**settings) at 30 fps over the floor; exact: without the noise."""
    vertices, faces, _ = grid(8, 60, 1.0, "xz")
    vertices = vertices * (0.4, 1.0, 3.0)
    vertices += np.array([0.0, 0.0, 1.6]) - 0.5 * (vertices.max(axis=0) + vertices.min(axis=0))
    sim = Simulation(vertices, faces, Settings(dt=1.0 / 30.0, **settings),
                     colliders=[PlaneCollider(thickness=0.02, friction=0.5)])
    if not exact:
        state = sim.state
        noise = np.random.default_rng(0).uniform(-1.0, 1.0, state.positions.shape)
        noise *= 1e-6 * sim.model.median_edge_length
        sim.state = type(state)(state.positions + noise, state.previous + noise)
    return sim


def heights(step, top, frames: int) -> str:
    """Frames 2 .. frames played by step(frame); top() (m) every 6th, as one line."""
    row = []
    for frame in range(2, frames + 1):
        step(frame)
        if frame % 6 == 0:
            row.append(f"{frame}: {top():.2f}")
    return "  ".join(row)


def blender(frames: int, self_collision: bool) -> str:
    """heights() of Blender's Cloth on the bench's pile scene (self-collision as asked)."""
    import bench_blender
    import bpy

    import cloth_addon

    cloth_addon.register()

    way = bench_blender.BLENDER_SELF if self_collision else bench_blender.BLENDER
    cloth, _ = bench_blender.build(bench_blender.SCENES["pile"], way, frames)
    scene = bpy.context.scene
    box = {}

    def step(frame):
        scene.frame_set(frame)
        box["x"] = bench_blender.evaluated_world(cloth, bpy.context.evaluated_depsgraph_get())

    return heights(step, lambda: box["x"][:, 2].max(), frames)


def main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=42)
    parser.add_argument("--self-collision", action="store_true")
    parser.add_argument("--exact", action="store_true", help="no seeded noise")
    parser.add_argument("--blender", action="store_true", help="Blender's Cloth too")
    args = parser.parse_args(argv)
    print(f"highest vertex (m) by frame; self-collision {'on' if args.self_collision else 'off'};"
          f" {'no noise' if args.exact else 'noise 1e-6 edge'}")
    for label, settings in WAYS:
        sim = strip(args.exact, self_collision=args.self_collision, **settings)
        # frame 1 is the rest shape, as in Blender: frame k is k - 1 steps in
        row = heights(lambda _, sim=sim: sim.step(1), lambda sim=sim: sim.positions[:, 2].max(), args.frames)
        print(f"  {label:42s} {row}", flush=True)
    if args.blender:
        print(f"  {'Blender Cloth, defaults':42s} {blender(args.frames, args.self_collision)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
