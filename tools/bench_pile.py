"""The pile scene in the core alone: an 8 x 60 strip (0.4 x 3.0 m) hanging, its bottom 0.1 m above
the floor, released with self-collision on and the add-on's defaults, 30 fps (as in
tools/bench_blender.py, without Blender).

    python tools/bench_pile.py [--frames 90] [--profile] [--check] [--mesh-floor] [--set NAME=VALUE ...]

Prints ms/frame (median and mean over the frames after the first 3), the pile's height at the
end, the self-contact stats; --check counts edge-triangle crossings in every frame; --profile
prints the cProfile of the run (cumulative time, the self-contact functions).
"""

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cloth_addon.core import MeshCollider, PlaneCollider, Settings, Simulation  # noqa: E402
from cloth_addon.core.quality import edge_triangle_crossings  # noqa: E402
from cloth_addon.core.scenes import grid  # noqa: E402


def pile(mesh_floor: bool = False) -> Simulation:
    """The scene; the floor as Blender's bench has it (a 20 m plane with Blender's default
    Collision: 2 cm outer thickness, friction 5 -> 0.5), as a MeshCollider or a PlaneCollider."""
    vertices, faces, _ = grid(8, 60, 1.0, "xz")
    vertices = vertices * (0.4, 1.0, 3.0)
    vertices += np.array([0.0, 0.0, 1.6]) - 0.5 * (vertices.max(axis=0) + vertices.min(axis=0))
    vertices = vertices.astype(np.float32).astype(np.float64)  # as Blender hands them over
    settings = Settings(self_collision=True, dt=1.0 / 30.0)
    if mesh_floor:
        plane = np.array([(-10.0, -10.0, 0.0), (10.0, -10.0, 0.0), (10.0, 10.0, 0.0), (-10.0, 10.0, 0.0)])
        floor = MeshCollider(plane, np.array([(0, 1, 2), (0, 2, 3)]), thickness=0.02, friction=0.5)
    else:
        floor = PlaneCollider(thickness=0.02, friction=0.5)
    return Simulation(vertices, faces, settings, colliders=[floor])


def main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=90)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--mesh-floor", action="store_true")
    parser.add_argument("--frames-ms", action="store_true", help="print every frame's ms, in tens of frames")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="override self_contact constants, e.g. GROW=1.5 CLUSTER=64")
    args = parser.parse_args(argv)
    from cloth_addon.core import self_contact

    for item in args.set:
        name, value = item.split("=")
        setattr(self_contact, name, type(getattr(self_contact, name))(float(value)))
    sim = pile(args.mesh_floor)
    features = sim.model.contact_features
    times, cpus, worst = [], [], 0
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.frames):
        if profiler:
            profiler.enable()
        start, cpu = time.perf_counter(), time.process_time()
        sim.step(1)
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        if profiler:
            profiler.disable()
        if args.check:
            worst = max(worst, edge_triangle_crossings(np.array(sim.positions), features.edges,
                                                       features.triangles))
    t, c = 1e3 * np.array(times[3:]), 1e3 * np.array(cpus[3:])
    stats = sim.contact.self_contact.stats
    height = 1e3 * sim.positions[:, 2].max()
    print(f"{' '.join(args.set)} ms/frame median {np.median(t):.1f} mean {t.mean():.1f} "
          f"(cpu {np.median(c):.1f}, {c.mean():.1f}); height {height:.0f} mm;"
          f" {'crossings max ' + str(worst) if args.check else ''}; stats {stats}")
    if args.frames_ms:
        for first in range(0, len(times), 10):
            row = " ".join(f"{1e3 * v:4.0f}" for v in times[first:first + 10])
            print(f"  frames {first + 1:3d}-: {row}")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
