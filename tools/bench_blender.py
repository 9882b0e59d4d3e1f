"""`python build.py bench --vs-blender`: our cloth against Blender's own Cloth modifier, same scenes.

In one process with the real Blender (PyPI bpy, background mode), every scene runs three ways:
    blender  Blender's Cloth modifier, default settings (quality 5, scene at 24 fps)
    add-on   our extension: make_cloth, then the frame_change_post handler plays the frames and
             writes the ClothSim shape key (what a user gets)
    core     Simulation.step alone, with the very Settings, pins and colliders the add-on built
Scenes: a 2 m sheet of n x n vertices lying flat and pinned along one edge (it swings down and
hangs), and the same sheet dropped onto a sphere with Collision physics; each also with
self-collision. A frame is timed from scene.frame_set until the evaluated depsgraph is ready
(the modifier's result, or the mesh with the shape key just written), after WARMUP frames.

Quality, from the evaluated mesh in world space:
    strain       max over frames and mesh edges of (length / rest length - 1): stretch only
    lowest       min z at the last frame, m
    penetration  deepest vertex inside the sphere's polygon mesh (the body both simulators
                 collide with; ours uses the circumscribed analytic sphere), max over frames, mm

Then the bake: FRAMES_BAKE frames of a 100 x 100 cloth baked to shape keys and to PC2 through
the bake operator, each in a fresh process so that its peak RSS is its own.

    python tools/bench_blender.py [--quick] [--no-bake] [--no-chart]   (PYTHONPATH = repo root)
Prints numbers; asserts nothing about time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHART = ROOT / "docs" / "bench_vs_blender.png"
SIZE = 2.0  # m, side of the sheet (one more scene uses 4 m, see SCENES)
SHEET_HEIGHT = {"pinned": 1.0, "drape": 0.62}  # m, z of the flat sheet at frame 1
SPHERE_RADIUS = 0.5  # m, centred at the origin
SPHERE_SEGMENTS, SPHERE_RINGS = 32, 16
WARMUP = 5
# Measured frames per sheet size, and with self-collision (Blender takes 2-3 s a frame at
# 100 x 100 with self-collision on this machine): enough for a stable median in a few minutes.
FRAMES = {50: 40, 100: 25}
FRAMES_SELF = {50: 30, 100: 15}
QUICK_FRAMES = {50: 8, 100: 4}
FRAMES_BAKE = 250
BAKE_SIZE = 100
KINDS = ("pinned", "drape", "pinned+self", "drape+self")
WAYS = ("blender", "addon", "core")


@dataclass(frozen=True)
class Scene:
    """n x n vertices, kind "pinned" | "drape" (+ "+self" for self-collision), side in metres."""

    n: int
    kind: str
    size: float = SIZE

    @property
    def self_collision(self) -> bool:
        return self.kind.endswith("+self")

    @property
    def pinned(self) -> bool:
        return self.kind.startswith("pinned")

    @property
    def label(self) -> str:
        extra = "" if self.size == SIZE else f" {self.size:g} m"
        return f"{self.n}x{self.n} {self.kind}{extra}"

    def frames(self, quick: bool) -> int:
        table = QUICK_FRAMES if quick else FRAMES_SELF if self.self_collision else FRAMES
        return table.get(self.n, table[max(table)])


# At 100 x 100 the 2 m sheet's 2 cm spacing is close to Blender's default self-collision
# distance (1.5 cm), so a 4 m sheet (4 cm spacing, well apart from it) is also run.
SCENES = tuple(Scene(n, kind) for n in (50, 100) for kind in KINDS) + (Scene(100, "pinned+self", 4.0),)


@dataclass
class Run:
    """One scene run one way: per-frame seconds and quality figures."""

    times: list = field(default_factory=list)
    strain: float = 0.0
    lowest: float = float("nan")
    penetration: float = 0.0
    note: str = ""

    @property
    def ms(self) -> float:
        return 1000.0 * statistics.median(self.times) if self.times else float("nan")


# -- scene building ----------------------------------------------------------------------------

def bpy_module():
    import bpy  # imported late: `--help` and the chart work without Blender

    return bpy


def register_addon():
    import cloth_addon

    cloth_addon.register()


def fresh_scene():
    bpy = bpy_module()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = 1, 250
    scene.frame_set(1)
    return scene


def sheet_arrays(scene: Scene):
    """(vertices (n*n, 3) world, quads (m, 4), pinned row indices) of a flat, centred sheet."""
    from cloth_addon.core.scenes import grid

    vertices, quads, index = grid(scene.n, scene.n, scene.size, "xy")
    vertices = vertices - (scene.size / 2, scene.size / 2, -SHEET_HEIGHT[scene.kind.split("+")[0]])
    pinned = index[0] if scene.pinned else np.empty(0, dtype=np.int64)
    return vertices, quads, pinned


def add_sheet(scene: Scene):
    """The sheet as a mesh object at the identity transform (local = world), pins in group 'Pins'."""
    bpy = bpy_module()
    vertices, quads, pinned = sheet_arrays(scene)
    mesh = bpy.data.meshes.new("Sheet")
    mesh.from_pydata(vertices.tolist(), [], quads.tolist())
    mesh.update()
    obj = bpy.data.objects.new("Sheet", mesh)
    bpy.context.scene.collection.objects.link(obj)
    if len(pinned):
        obj.vertex_groups.new(name="Pins").add(pinned.tolist(), 1.0, "REPLACE")
    from cloth_addon.blender.selection import select_only

    select_only(obj)
    return obj


def add_sphere():
    bpy = bpy_module()
    bpy.ops.mesh.primitive_uv_sphere_add(segments=SPHERE_SEGMENTS, ring_count=SPHERE_RINGS,
                                         radius=SPHERE_RADIUS, location=(0.0, 0.0, 0.0))
    sphere = bpy.context.active_object
    sphere.name = "Ball"
    sphere.modifiers.new("Collision", "COLLISION")
    return sphere


def build(scene: Scene):
    """Fresh scene with the sheet (and the sphere for a drape): (sheet, sphere planes or None)."""
    fresh_scene()
    planes = None if scene.pinned else sphere_planes(add_sphere())
    return add_sheet(scene), planes


def sphere_planes(sphere):
    """(normals (f, 3), offsets (f,)): the sphere's faces as planes n . x = offset, world space."""
    from cloth_addon.blender import colliders

    bpy = bpy_module()
    _, _, normals, centres = colliders.world_mesh(sphere, bpy.context.evaluated_depsgraph_get())
    normals = normals / np.linalg.norm(normals, axis=1, keepdims=True)
    return normals, np.einsum("ij,ij->i", normals, centres)


# -- quality -----------------------------------------------------------------------------------

class Quality:
    """Accumulates strain and penetration over frames for one run."""

    def __init__(self, rest: np.ndarray, edges: np.ndarray, planes):
        self.edges = edges
        self.rest_length = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
        self.planes = planes

    def add(self, run: Run, world: np.ndarray) -> None:
        length = np.linalg.norm(world[self.edges[:, 0]] - world[self.edges[:, 1]], axis=1)
        run.strain = max(run.strain, float((length / self.rest_length - 1.0).max()))
        run.lowest = float(world[:, 2].min())
        if self.planes is not None:
            normals, offsets = self.planes
            # Inside a convex polyhedron every face plane is ahead; the depth is the nearest one.
            depth = (offsets[None, :] - world @ normals.T).min(axis=1)
            run.penetration = max(run.penetration, float(max(depth.max(), 0.0)))


def evaluated_world(obj, depsgraph) -> np.ndarray:
    from cloth_addon.blender import mesh_io

    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        local = mesh_io.read_positions(mesh)
    finally:
        evaluated.to_mesh_clear()
    return mesh_io.to_world(mesh_io.matrix_to_numpy(evaluated.matrix_world), local)


def play(obj, frames: int, quality: Quality) -> Run:
    """Play frames 2 .. WARMUP + frames + 1 in order; time the measured ones."""
    bpy = bpy_module()
    scene = bpy.context.scene
    run = Run()
    for frame in range(2, WARMUP + frames + 2):
        start = time.perf_counter()
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()  # flushes what the handler tagged
        elapsed = time.perf_counter() - start
        if frame > WARMUP + 1:
            run.times.append(elapsed)
        quality.add(run, evaluated_world(obj, depsgraph))
    return run


# -- the three ways ----------------------------------------------------------------------------

def run_blender(scene: Scene, frames: int) -> Run:
    obj, planes = build(scene)
    modifier = obj.modifiers.new("Cloth", "CLOTH")
    if scene.pinned:
        modifier.settings.vertex_group_mass = "Pins"
    modifier.collision_settings.use_self_collision = scene.self_collision
    modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, 250
    return play(obj, frames, Quality(sheet_arrays(scene)[0], mesh_edges(obj), planes))


def make_addon_cloth(scene: Scene):
    bpy = bpy_module()
    obj, planes = build(scene)
    props = obj.cloth_addon
    if scene.pinned:
        props.pin_group = "Pins"
    props.use_self_collision = scene.self_collision
    if bpy.ops.cloth_addon.make_cloth() != {"FINISHED"}:
        raise RuntimeError("make_cloth failed")
    return obj, planes


def run_addon(scene: Scene, frames: int) -> Run:
    obj, planes = make_addon_cloth(scene)
    run = play(obj, frames, Quality(sheet_arrays(scene)[0], mesh_edges(obj), planes))
    from cloth_addon.blender import store

    error = store.errors.get(obj.session_uid)
    if error:
        raise RuntimeError(f"add-on failed: {error}")
    return run


def run_core(scene: Scene, frames: int) -> Run:
    """Simulation.step alone, built from exactly what the add-on's session built."""
    from cloth_addon import core
    from cloth_addon.blender import colliders, store

    bpy = bpy_module()
    obj, planes = make_addon_cloth(scene)
    live = store.get(obj, bpy.context.scene, bpy.context.evaluated_depsgraph_get())
    model = live.sim.model
    # The same Settings, pins and colliders; the collider list is the one the add-on's frame 1 read.
    found, _ = colliders.scene_colliders(bpy.context.scene, bpy.context.evaluated_depsgraph_get(),
                                         obj.session_uid)
    sim = core.Simulation(model.rest_positions, sheet_arrays(scene)[1], settings=live.sim.settings,
                          pinned=model.pinned, colliders=found)
    quality = Quality(model.rest_positions, mesh_edges(obj), planes)
    run = Run()
    for frame in range(WARMUP + frames):
        start = time.perf_counter()
        sim.step(1)
        elapsed = time.perf_counter() - start
        if frame >= WARMUP:
            run.times.append(elapsed)
        quality.add(run, np.asarray(sim.positions))
    return run


def mesh_edges(obj) -> np.ndarray:
    from cloth_addon.blender import mesh_io

    return mesh_io.read_edges(obj.data)


def core_has_self_collision() -> bool:
    """Whether the core acts on Settings.self_collision (being built in parallel): some core
    module besides settings.py must read it, else our self-collision rows would time a sheet
    that ignores itself and compare that with Blender's real self-collision."""
    core_dir = ROOT / "cloth_addon" / "core"
    return any("self_collision" in path.read_text() for path in core_dir.rglob("*.py")
               if path.name != "settings.py")


# -- bake --------------------------------------------------------------------------------------

def bake_once(target: str, n: int, frames: int) -> dict:
    """Bake `frames` frames of an n x n pinned sheet to target; seconds and memory (runs in-process)."""
    import resource

    bpy = bpy_module()
    register_addon()
    obj, _ = make_addon_cloth(Scene(n, "pinned"))
    props = obj.cloth_addon
    props.frame_start, props.frame_end = 1, frames
    props.bake_target = target
    folder = tempfile.mkdtemp(prefix="cloth_bench_")
    props.cache_directory = folder
    rss_before = rss_now()
    start = time.perf_counter()
    result = bpy.ops.cloth_addon.bake()
    seconds = time.perf_counter() - start
    if result != {"FINISHED"}:
        raise RuntimeError(f"bake to {target} returned {result}")
    keys = obj.data.shape_keys
    written = sum(1 for block in keys.key_blocks if block.name.startswith("ClothBake"))
    size = sum(f.stat().st_size for f in Path(folder).glob("*.pc2"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    return {"target": target, "frames": frames, "vertices": n * n, "seconds": seconds,
            "rss_before_mb": rss_before, "rss_peak_mb": peak, "rss_after_mb": rss_now(),
            "shape_keys": written, "pc2_mb": size / 2**20}


def cpu_busy(seconds: float = 1.0) -> float:
    """Fraction of all CPUs busy over `seconds` (Linux /proc/stat; nan elsewhere). Called while
    this process sleeps, so it is what the other processes on the machine use."""
    def sample():
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(values), values[3] + values[4]  # total, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return float("nan")
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


def wait_for_quiet(limit: float, patience: float) -> float:
    """Wait up to `patience` seconds until other processes use at most `limit` of the CPUs (other
    engineers' test runs share this machine and slow Blender's threads more than our one)."""
    deadline = time.monotonic() + patience
    busy = cpu_busy()
    while busy > limit and time.monotonic() < deadline:
        busy = cpu_busy()
    return busy


def rss_now() -> float:
    """Resident set size of this process now, MiB (Linux; nan elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def bake_in_subprocess(target: str, n: int, frames: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--bake-child", target, str(n), str(frames)],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("BAKE "):
            return json.loads(line[5:])
    raise RuntimeError(f"bake child failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


# -- report ------------------------------------------------------------------------------------

def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def table(results: dict) -> str:
    """Markdown table: one row per scene, ms/frame of the three ways, ratios and quality."""
    head = ("| scene | Blender ms | add-on ms | core ms | add-on/Blender | core/Blender "
            "| strain Blender / ours | lowest z Blender / ours (m) | penetration Blender / ours (mm) |")
    lines = [head, "|" + "---|" * 9]
    for scene, runs in results.items():
        b, a, c = (runs[way] for way in WAYS)
        ours = a if a.times else c
        ratio_a, ratio_c = (f"1/{b.ms / run.ms:.1f}" if run.times and b.times else "n/a" for run in (a, c))
        quality = (f"{fmt(100 * b.strain, 2)}% / {fmt(100 * ours.strain, 2)}%",
                   f"{fmt(b.lowest, 3)} / {fmt(ours.lowest, 3)}",
                   f"{fmt(1000 * b.penetration)} / {fmt(1000 * ours.penetration)}"
                   if not scene.pinned else "-")
        if not ours.times:
            quality = ("n/a", "n/a", "n/a")
        lines.append(f"| {scene.label} | {fmt(b.ms)} | {fmt(a.ms)} | {fmt(c.ms)} | {ratio_a} | {ratio_c} | "
                     + " | ".join(quality) + " |")
    return "\n".join(lines)


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def label(scene, runs):
        blender, addon = runs["blender"], runs["addon"]
        ratio = f"add-on 1/{blender.ms / addon.ms:.1f}" if addon.times and blender.times else "add-on n/a"
        return scene.label.replace(" ", "\n", 1) + "\n" + ratio

    labels = [label(scene, runs) for scene, runs in results.items()]
    x = np.arange(len(labels))
    width = 0.27
    fig, ax = plt.subplots(figsize=(11, 4.8), dpi=110)
    colours = {"blender": "#e87d0d", "addon": "#2f6db3", "core": "#7fb0e0"}
    names = {"blender": "Blender Cloth modifier", "addon": "ours, through the add-on",
             "core": "ours, core alone"}
    for k, way in enumerate(WAYS):
        values = [runs[way].ms if way in runs and runs[way].times else 0.0 for runs in results.values()]
        bars = ax.bar(x + (k - 1) * width, values, width, label=names[way], color=colours[way])
        for bar, value in zip(bars, values, strict=True):
            ax.annotate("n/a" if value == 0.0 else f"{value:.0f}", (bar.get_x() + bar.get_width() / 2, value),
                        ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("median ms per frame (log scale)")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_title("Cloth at 24 fps: Blender's Cloth modifier (quality 5) vs ours "
                 "(fast mass-spring, 10 iterations)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.99, 0.01, f"{time.strftime('%Y-%m-%d')}, {machine()}", ha="right", va="bottom", fontsize=7,
             color="0.4")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


# Issue 6: ours/Blender through the add-on, by sheet size; with self-collision; bake seconds.
TARGET_RATIO = {50: 1 / 8, 100: 1 / 6}
TARGET_RATIO_SELF = 1 / 4
TARGET_STRAIN_FLOOR = 0.03
TARGET_BAKE_SECONDS = 30.0


def verdict(value: float, limit: float, unit: str) -> str:
    if value != value:
        return "n/a"
    if value <= limit:
        return f"met ({value:.1f} {unit} <= {limit:.1f})"
    return f"MISSED by {value / limit:.2f}x ({value:.1f} {unit}, needs <= {limit:.1f})"


def target_report(results: dict, bakes: list) -> list:
    """One line per target and scene: met, or missed by how much."""
    lines = []
    for scene, runs in results.items():
        blender, addon = runs["blender"], runs["addon"]
        limit = TARGET_RATIO_SELF if scene.self_collision else TARGET_RATIO.get(scene.n)
        if limit is None or not blender.times:
            continue
        ms = addon.ms if addon.times else float("nan")
        lines.append(f"{scene.label}: add-on ms/frame <= 1/{1 / limit:.0f} of Blender's: "
                     + verdict(ms, blender.ms * limit, "ms"))
        if addon.times:
            strain_limit = max(TARGET_STRAIN_FLOOR, 2.0 * blender.strain)
            lines.append(f"{scene.label}: max edge strain <= max(3%, 2x Blender's): "
                         + verdict(100 * addon.strain, 100 * strain_limit, "%"))
    for info in bakes:
        lines.append(f"bake {info['frames']} frames {BAKE_SIZE}x{BAKE_SIZE} to {info['target']}: "
                     + verdict(info["seconds"], TARGET_BAKE_SECONDS, "s"))
    return lines


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def run(argv) -> int:
    parser = argparse.ArgumentParser(prog="bench --vs-blender", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few frames per scene (smoke test)")
    parser.add_argument("--no-bake", action="store_true", help="skip the bake throughput runs")
    parser.add_argument("--no-chart", action="store_true", help=f"do not write {CHART.relative_to(ROOT)}")
    parser.add_argument("--only", nargs="+", metavar="TEXT", help="scenes whose label contains any TEXT")
    parser.add_argument("--repeat", type=int, default=1, help="runs per scene and way, frames pooled")
    parser.add_argument("--quiet", type=float, default=0.2, metavar="FRACTION",
                        help="before each run wait until other processes use at most this share of the CPUs")
    parser.add_argument("--patience", type=float, default=20.0, metavar="SECONDS",
                        help="... but no longer than this (default 20 s)")
    parser.add_argument("--bake-child", nargs=3, metavar=("TARGET", "N", "FRAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bake_child:
        target, n, frames = args.bake_child
        print("BAKE " + json.dumps(bake_once(target, int(n), int(frames))), flush=True)
        return 0

    import bpy

    register_addon()
    self_collision = core_has_self_collision()
    print(f"Blender {bpy.app.version_string}, numpy {np.__version__}, {machine()}; "
          f"load {os.getloadavg()[0]:.2f}; warm-up {WARMUP} frames; median ms/frame", flush=True)
    results = {}
    for scene in SCENES:
        if args.only and not any(text in scene.label for text in args.only):
            continue
        frames = scene.frames(args.quick)
        runs, busy = {}, []
        # Repeats alternate the three ways, so that a burst of load from other processes hits
        # all of them alike; the frames of all repeats are pooled into one median.
        for _ in range(args.repeat):
            for way, function in (("blender", run_blender), ("addon", run_addon), ("core", run_core)):
                if way != "blender" and scene.self_collision and not self_collision:
                    runs[way] = Run(note="core has no self-collision yet")
                    continue
                busy.append(wait_for_quiet(args.quiet, args.patience))
                run = function(scene, frames)
                if way in runs:
                    runs[way].times.extend(run.times)  # same frames, deterministic quality
                else:
                    runs[way] = run
        results[scene] = runs
        timings = ", ".join(f"{way} {fmt(r.ms)} ms" for way, r in runs.items())
        others = "/".join(f"{100 * b:.0f}" for b in busy)
        print(f"  {scene.label:22s} {args.repeat} x {frames} frames: {timings}; other processes' CPU "
              f"before each: {others}%", flush=True)
    print()
    print(table(results))
    if not self_collision:
        print("\nn/a: the core does not implement Settings.self_collision yet.")
    if not args.no_chart:
        chart(results, CHART)
        print(f"\nchart: {CHART.relative_to(ROOT)}")
    bakes = []
    if not args.no_bake:
        frames = 10 if args.quick else FRAMES_BAKE
        print(f"\nbake of {frames} frames, {BAKE_SIZE}x{BAKE_SIZE} pinned sheet, end to end "
              "(fresh process each):")
        for target in ("SHAPE_KEYS", "PC2"):
            busy = wait_for_quiet(args.quiet, args.patience)
            info = bake_in_subprocess(target, BAKE_SIZE, frames)
            per_frame = 1000 * info["seconds"] / frames
            print(f"  {target:10s} {info['seconds']:6.1f} s ({per_frame:.0f} ms/frame); "
                  f"RSS {info['rss_before_mb']:.0f} MiB before, peak {info['rss_peak_mb']:.0f}, "
                  f"after {info['rss_after_mb']:.0f} MiB; "
                  f"{info['shape_keys']} shape keys, PC2 {info['pc2_mb']:.1f} MiB; "
                  f"other processes' CPU before: {100 * busy:.0f}%", flush=True)
            bakes.append(info)
    print("\ntargets:")
    for line in target_report(results, bakes):
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
