"""The pile scene in the core alone: an 8 x 60 strip (0.4 x 3.0 m) hanging, its bottom 0.1 m above
the floor, released with self-collision on and the add-on's defaults, 30 fps (as in
tools/bench_blender.py, without Blender); --folds: the bench's folds scene instead (see folds()).

    python tools/bench_pile.py [--folds] [--frames N] [--profile] [--check] [--floor] [--mesh-floor]
                               [--set NAME=VALUE ...]

Prints ms/frame (median and mean over the frames after the first 3), the highest vertex at the
end, the self-contact stats; --check counts edge-triangle crossings in every frame; --profile
prints the cProfile of the run (cumulative time, the self-contact functions); --floor prints, from
frame 51 on (folds: from frame 2), a lower bound of any proximity response's cost: only measuring
the exact gaps (closest points, segment gaps) of the pairs that are in contact (closer than the
gap) at the end of each frame, as often as the passes measure them (PASSES a substep), with the
frame's own time beside it and the frame without self-collision.
"""

import argparse
import cProfile
import dataclasses
import pstats
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cloth_addon.core import MeshCollider, PlaneCollider, Settings, Simulation  # noqa: E402
from tools.quality import edge_triangle_crossings  # noqa: E402
from tools.scenes import grid  # noqa: E402


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


def folds():
    """(the simulation, a callable run before each frame): the bench's folds scene in the core, a
    100 x 100 sheet (2 m) hanging from its pinned top row, bottom 5 cm above the floor, with the
    pins lowered 5 cm a frame (the bench keyframes the whole object instead), self-collision on."""
    vertices, faces, index = grid(100, 100, 2.0, "xz")
    vertices = vertices + (0.0, 0.0, 0.05 - vertices[:, 2].min())
    vertices = vertices.astype(np.float32).astype(np.float64)
    sim = Simulation(vertices, faces, Settings(self_collision=True), pinned=index[0],
                     colliders=[PlaneCollider(thickness=0.02, friction=0.5)])
    top = vertices[index[0]]
    return sim, lambda: sim.move_pins(top - (0.0, 0.0, 0.05 * min(sim.frame + 1, 40)))


def main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=None, help="90 (pile), 8 (folds)")
    parser.add_argument("--folds", action="store_true", help="the folds scene instead of the pile")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--mesh-floor", action="store_true")
    parser.add_argument("--floor", action="store_true", help="the cost of measuring the contacts alone")
    parser.add_argument("--frames-ms", action="store_true", help="print every frame's ms, in tens of frames")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="override self_contact constants, e.g. GROW=1.5 CLUSTER=64")
    args = parser.parse_args(argv)
    from cloth_addon.core.contact.self_contact import contact as self_contact

    for item in args.set:
        name, value = item.split("=")
        setattr(self_contact, name, type(getattr(self_contact, name))(float(value)))
    sim, before = folds() if args.folds else (pile(args.mesh_floor), lambda: None)
    args.frames = args.frames or (8 if args.folds else 90)
    first = 2 if args.folds else 51  # the --floor frames: from the first contacts, or the settled pile
    features = sim.model.contact_features
    times, cpus, worst, floors = [], [], 0, []
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.frames):
        if profiler:
            profiler.enable()
        before()
        start, cpu = time.perf_counter(), time.process_time()
        sim.step(1)
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        if profiler:
            profiler.disable()
        if args.floor and len(times) >= first:
            floors.append(_measuring(sim))
        if args.check:
            worst = max(worst, edge_triangle_crossings(np.array(sim.positions), features.edges,
                                                       features.triangles))
    t, c = 1e3 * np.array(times[3:]), 1e3 * np.array(cpus[3:])
    stats = sim.contact.self_contact.stats
    height = 1e3 * sim.positions[:, 2].max()
    print(f"{' '.join(args.set)} ms/frame median {np.median(t):.1f} mean {t.mean():.1f} "
          f"(cpu {np.median(c):.1f}, {c.mean():.1f}); height {height:.0f} mm;"
          f" {'crossings max ' + str(worst) if args.check else ''}; stats {stats}")
    if floors:
        counts, ms = np.array([f[:2] for f in floors]), np.array([f[2] for f in floors])
        substeps = sim.settings.substeps
        passes = self_contact.PASSES * substeps
        frame = 1e3 * np.array(times[first - 1:])
        print(f"frames {first}-{args.frames}: pairs in contact (median) {np.median(counts[:, 0]):.0f}"
              f" vertex-triangle, {np.median(counts[:, 1]):.0f} edge-edge; measuring them {passes} times"
              f" a frame ({self_contact.PASSES} passes x {substeps} substeps): median"
              f" {passes * np.median(ms):.1f}, max {passes * ms.max():.1f} ms/frame (the frame: median"
              f" {np.median(frame):.1f}, max {frame.max():.1f} ms; without self-collision:"
              f" {_without(args):.1f} ms)")
    if args.frames_ms:
        for first in range(0, len(times), 10):
            row = " ".join(f"{1e3 * v:4.0f}" for v in times[first:first + 10])
            print(f"  frames {first + 1:3d}-: {row}")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return 0


def _measuring(sim) -> tuple[int, int, float]:
    """(vertex-triangle pairs, edge-edge pairs, ms): the pairs closer than the gap at the current
    positions, and the least time (of several) to measure their exact gaps once."""
    from cloth_addon.core.contact import distance
    from cloth_addon.core.geometry import gather

    contact = sim.contact.self_contact
    x = np.array(sim.positions)
    p, t, vf_gap, a, b, ee_gap = contact.search.near(x, np.zeros(len(x)))
    d = contact.distance
    p, t, a, b = p[vf_gap < d], t[vf_gap < d], a[ee_gap < d], b[ee_gap < d]
    tris, ea, eb = contact.triangles[t], contact.edges[a], contact.edges[b]

    def measure():
        distance.closest_points(gather(x, p), *(gather(x, tris[:, k]) for k in range(3)))
        distance.segment_gap(*(gather(x, e[:, k]) for e in (ea, eb) for k in (0, 1)))

    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            measure()
        best = min(best, (time.perf_counter() - start) / 20)
    return len(p), len(a), 1e3 * best


def _without(args) -> float:
    """Median ms/frame of the same scene without self-collision (after 3 frames)."""
    sim, before = folds() if args.folds else (pile(args.mesh_floor), lambda: None)
    sim.settings = dataclasses.replace(sim.settings, self_collision=False)
    times = []
    for _ in range(args.frames):
        before()
        start = time.perf_counter()
        sim.step(1)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times[3:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
