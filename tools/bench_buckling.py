"""`python build.py bench --buckling`: cloth compressed in its own plane must buckle and fold.

Three scenes, each exactly symmetric as a user makes it (no noise of the bench's own: the only
perturbation is the one every Simulation gives a fresh state, docs/PHYSICS.md §9), self-collision
off, played with ours at the defaults, with each option tried on the way there, with Newton's method
and with Blender's Cloth modifier at its defaults (the same scene built in the real Blender):
    strip     the pile's strip (8 x 60, 0.4 x 3.0 m) standing on its edge 0.1 m above the floor,
              released; 30 fps
    tube      an open tube of cloth (radius 0.25 m, 1.2 m tall, 32 x 48) standing on the floor,
              its bottom 5 cm above it; 24 fps
    squeezed  a vertical 1 m sheet (20 x 20), its top row pinned and drawn to 60% of its width
              over 24 frames, then held; 24 fps (Blender's pins follow a shape key)
Every 6 frames: the highest vertex (m) and the largest distance from the starting surface (cm:
the plane of the strip and the sheet, the tube's cylinder); at the end, the 5th percentile of
edge length / rest length (folded, not crushed). Renders of the last frame, Blender's beside ours
and the solver before this work (compression 1, no vertex step), go to docs/buckling_<scene>.png.

    python build.py bench --buckling [--scenes strip tube squeezed] [--no-blender] [--no-render]
Prints numbers; asserts nothing.
"""

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tools"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from cloth_addon.core import PlaneCollider, Settings, Simulation  # noqa: E402
from tools.scenes import open_tube, squeezed_sheet, standing_strip  # noqa: E402

DOCS = ROOT / "docs"
EVERY = 6


@dataclass(frozen=True)
class BucklingScene:
    name: str
    fps: int
    frames: int  # the last frame (frame 1 is the rest shape)
    camera: tuple  # (location, point looked at)


SCENES = {s.name: s for s in (
    BucklingScene("strip", 30, 30, ((2.0, -2.8, 1.6), (0.0, 0.0, 0.9))),
    BucklingScene("tube", 24, 30, ((1.2, -1.7, 1.0), (0.0, 0.0, 0.35))),
    BucklingScene("squeezed", 24, 48, ((1.5, -2.0, 1.5), (0.0, 0.0, 1.05))),
)}

# (label, Settings changes, whether the vertex Newton step runs): ours at the defaults, then what
# each part of it does, then the solver as it was before compression, the vertex step and the
# imperfection every fresh state gets
WAYS = (("ours, defaults", {}, True),
        ("ours, no vertex step", {}, False),
        ("ours, compression 1", {"compression": 1.0}, True),
        ("ours, compression 0.1", {"compression": 0.1}, True),
        ("ours, 10 iterations", {"iterations": 10}, True),
        ("before: compression 1, no vertex step", {"compression": 1.0, "imperfection": 0.0}, False),
        ("before, 10 iterations", {"compression": 1.0, "iterations": 10, "imperfection": 0.0}, False),
        ("verlet", {"solver": "verlet"}, True),
        ("newton", {"solver": "newton"}, True))
BEFORE = "before: compression 1, no vertex step"


def scene_arrays(scene: BucklingScene):
    """(vertices, faces, pinned indices, pin targets(frame) or None, floor?) of a scene."""
    if scene.name == "strip":
        return (*standing_strip(), None, None, True)
    if scene.name == "tube":
        return (*open_tube(), None, None, True)
    vertices, faces, pinned, targets = squeezed_sheet()
    return vertices, faces, pinned, targets, False


def departure(scene: BucklingScene, x: np.ndarray, rest: np.ndarray) -> float:
    """m: how far the cloth got from its starting surface (plane y = 0, or the tube's cylinder)."""
    if scene.name == "tube":
        radius = np.hypot(rest[0, 0], rest[0, 1])
        return float(np.abs(np.hypot(x[:, 0], x[:, 1]) - radius).max())
    return float(np.abs(x[:, 1]).max())


def edge_ratio_p5(x: np.ndarray, faces: np.ndarray, rest: np.ndarray) -> float:
    """5th percentile over the mesh's edges of length / rest length."""
    edges = np.concatenate([faces[:, [k, (k + 1) % faces.shape[1]]] for k in range(faces.shape[1])])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    length = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    return float(np.percentile(length / np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1), 5))


def play_core(scene: BucklingScene, changes: dict, vertex_step: bool):
    """(row of (frame, top m, departure m), final positions, ms/frame) of the core."""
    vertices, faces, pinned, targets, floor = scene_arrays(scene)
    settings = Settings(dt=1.0 / scene.fps, **changes)
    colliders = [PlaneCollider(thickness=0.02, friction=0.5)] if floor else []
    sim = Simulation(vertices, faces, settings, pinned=pinned, colliders=colliders)
    if not vertex_step and hasattr(sim.solver, "vertex_newton"):
        sim.solver.vertex_newton = None
    row, elapsed = [], 0.0
    for frame in range(2, scene.frames + 1):  # frame 1 is the rest shape, as in Blender
        if targets is not None:
            sim.move_pins(targets(frame - 1))
        start = time.perf_counter()
        sim.step(1)
        elapsed += time.perf_counter() - start
        if frame % EVERY == 0:
            x = sim.positions
            row.append((frame, float(x[:, 2].max()), departure(scene, x, vertices)))
    return row, sim.positions.copy(), 1000.0 * elapsed / (scene.frames - 1)


def play_blender(scene: BucklingScene):
    """The same for Blender's Cloth modifier at its defaults (collision floor at its defaults)."""
    import bench_blender
    import bpy

    vertices, faces, pinned, targets, floor = scene_arrays(scene)
    blend = fresh(scene)
    if floor:
        bench_blender.add_collision(floor_object())
    cloth = bench_blender.mesh_object("Cloth", vertices, faces, bench_blender.CLOTH_COLOUR)
    modifier = cloth.modifiers.new("Cloth", "CLOTH")
    modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, scene.frames
    if pinned is not None:
        cloth.vertex_groups.new(name="Pins").add(pinned.tolist(), 1.0, "REPLACE")
        modifier.settings.vertex_group_mass = "Pins"
        # the pins follow the mesh as shape keys deform it: the squeeze is a key from 0 to 1
        cloth.shape_key_add(name="Basis")
        key = cloth.shape_key_add(name="Squeezed")
        moved = vertices.copy()
        moved[pinned] = targets(10_000)
        key.data.foreach_set("co", moved.astype(np.float32).ravel())
        # targets(k) moves linearly over its frames, as the key's value does between its keys
        for frame, value in ((1, 0.0), (1 + squeeze_frames(targets), 1.0)):
            key.value = value
            key.keyframe_insert("value", frame=frame)
        linear(cloth.data.shape_keys)
        blend.frame_set(1)
    row = []
    for frame in range(2, scene.frames + 1):
        blend.frame_set(frame)
        if frame % EVERY == 0:
            x = bench_blender.evaluated_world(cloth, bpy.context.evaluated_depsgraph_get())
            row.append((frame, float(x[:, 2].max()), departure(scene, x, vertices)))
    x = bench_blender.evaluated_world(cloth, bpy.context.evaluated_depsgraph_get())
    return row, x


def floor_object():
    """The bench's floor: a 20 m square at z = 0."""
    import bench_blender

    half = bench_blender.FLOOR_SIZE / 2
    corners = [(-half, -half, 0), (half, -half, 0), (half, half, 0), (-half, half, 0)]
    return bench_blender.mesh_object("Floor", corners, [(0, 1, 2, 3)], bench_blender.FLOOR_COLOUR)


def squeeze_frames(targets) -> int:
    """Frames over which targets(frame) moves (it is constant after them)."""
    frame = 1
    while not np.array_equal(targets(frame), targets(frame + 1)):
        frame += 1
    return frame


def linear(owner) -> None:
    """Make every f-curve of owner's animation linear (keyframe_insert makes Bezier keys)."""
    import bpy

    anim = owner.animation_data
    if bpy.app.version < (4, 4, 0):
        curves = anim.action.fcurves
    else:  # f-curves live in the action's channelbag since Blender 4.4
        curves = anim.action.layers[0].strips[0].channelbag(anim.action_slot).fcurves
    for curve in curves:
        for point in curve.keyframe_points:
            point.interpolation = "LINEAR"


def fresh(scene: BucklingScene):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blend = bpy.context.scene
    blend.render.fps, blend.render.fps_base = scene.fps, 1.0
    blend.frame_start, blend.frame_end = 1, scene.frames
    blend.frame_set(1)
    return blend


def render(scene: BucklingScene, finals: dict, path: Path) -> None:
    """Render each way's last frame (Workbench, smooth) and put them side by side."""
    import bench_blender
    import bpy
    from PIL import Image, ImageDraw, ImageFont

    vertices, faces, _, _, floor = scene_arrays(scene)
    tiles = []
    with tempfile.TemporaryDirectory() as folder:
        for label, x in finals.items():
            fresh(scene)
            if floor:
                floor_object()
            bench_blender.mesh_object("Cloth", x, faces, bench_blender.CLOTH_COLOUR)
            bench_blender.add_camera(bench_blender.Scene(scene.name, (0, 0), (0, 0), "xz", (0, 0, 0), 1, 1,
                                                         scene.camera))
            blend = bpy.context.scene
            blend.render.filepath = str(Path(folder) / f"{len(tiles)}.png")
            bpy.ops.render.render(write_still=True)
            tiles.append((label, Image.open(blend.render.filepath).convert("RGB")))
    width, height = tiles[0][1].size
    sheet = Image.new("RGB", (width * len(tiles), height), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=16)
    for column, (label, tile) in enumerate(tiles):
        sheet.paste(tile, (column * width, 0))
        text = f"{label}, frame {scene.frames}"
        corner = (column * width + 8, 6)
        draw.rectangle(draw.textbbox(corner, text, font=font), fill="white")
        draw.text(corner, text, fill="black", font=font)
        if column:
            draw.line([(column * width, 0), (column * width, height)], fill="black", width=2)
    sheet.save(path)
    print(f"  render: {path.relative_to(ROOT)}")


def row_text(row) -> str:
    return "  ".join(f"{frame}: {top:.2f} m / {100 * away:.1f} cm" for frame, top, away in row)


def run(argv) -> int:
    parser = argparse.ArgumentParser(prog="build.py bench --buckling")
    parser.add_argument("--scenes", nargs="+", choices=list(SCENES), default=list(SCENES))
    parser.add_argument("--no-blender", action="store_true", help="without Blender's Cloth")
    parser.add_argument("--no-render", action="store_true")
    args = parser.parse_args(argv)
    blender = not args.no_blender
    if blender:
        import bpy  # noqa: F401  (fails early, before the core runs, where there is no Blender)
    for name in args.scenes:
        scene = SCENES[name]
        vertices, faces, *_ = scene_arrays(scene)
        print(f"\n{name}: highest vertex / distance from the starting surface, every {EVERY} frames "
              f"({scene.fps} fps, self-collision off); p5 = 5th percentile of edge length / rest at "
              f"frame {scene.frames}")
        finals = {}
        if blender:
            row, x = play_blender(scene)
            finals["Blender Cloth"] = x
            p5 = edge_ratio_p5(x, faces, vertices)
            print(f"  {'Blender Cloth, defaults':40s} {row_text(row)}  p5 {p5:.3f}")
        for label, changes, vertex_step in WAYS:
            row, x, ms = play_core(scene, changes, vertex_step)
            if label in ("ours, defaults", BEFORE):
                finals[label] = x
            print(f"  {label:40s} {row_text(row)}  p5 {edge_ratio_p5(x, faces, vertices):.3f}  "
                  f"{ms:.1f} ms/frame", flush=True)
        if blender and not args.no_render:
            render(scene, finals, DOCS / f"buckling_{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
