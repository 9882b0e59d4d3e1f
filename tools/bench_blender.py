"""`python build.py bench --vs-blender`: our cloth next to Blender's own Cloth modifier, same scenes.

Every scene is built in the real Blender (PyPI bpy, background mode) and played once per way:
    Blender   Blender's Cloth modifier, its defaults (quality 5); Self Collision on where the way says
    ours      the add-on as a user gets it: Make Cloth with its defaults (only the pin group and,
              where the way says, Self Collision set), played through its frame_change_post handler
              that writes the result shown at the cloth stage
A frame is timed from scene.frame_set until the evaluated depsgraph is ready (the modifier's result,
or the mesh with the key just written); ms/frame is the median after WARMUP frames.

Scenes (floor: a 20 m plane with Collision at z = 0; colliders keep Blender's default Collision
settings; sheets are flat grids of quads, in world space at the identity transform):
    tablecloth  1.6 m square, 60 x 60, falls from 0.3 m above a 1.0 x 1.0 x 0.75 m box on the floor
    drape       1.6 m square, 50 x 50, falls from 0.3 m above a 0.45 m UV sphere (32 x 16) on the floor
    curtain     2 m square, 50 x 50, hanging, top row pinned; a 0.3 m UV sphere moves through it at
                1 m/s (from 0.8 m in front, centre 1 m below the top)
    flag        1.5 x 1.0 m, 45 x 30, hanging, pinned along its short (left) edge; a Wind field of
                strength 8 blowing along the flag, turned 10 degrees out of its plane
    pile        8 x 60 strip (0.4 x 3.0 m) hanging, bottom 0.1 m above the floor, falls; self-collision
                on in both; 30 fps
    folds       100 x 100 sheet (2 m) hanging from its pinned top row, bottom 5 cm above the floor,
                lowered 5 cm a frame (the object is keyframed down 2 m over frames 1-41, then held)
                so that it piles up in folds; Blender with self-collision, ours with and without
    sheet       2 m square, 50 x 50, hanging in the xz plane, pinned along its left edge, swings down
                under gravity for 40 frames (the solver alone: no collider, no wind)
    twist       30 x 30 sheet (1 m) hanging, its left and right columns pinned, the right one turned
                two turns about the sheet's horizontal axis over frames 1-97, then held; self-collision
                on in both. Blender's right column follows a Hook to a turning Empty; the add-on's
                pins follow only the object's transform, so ours is the core Simulation on the same
                mesh with the same pin targets (no add-on or depsgraph time in its frames)
    suzanne     50 x 50 sheet (1.4 m) falls from 0.3 m above Suzanne (Blender's monkey, 1.4 m wide,
                lying face-up on the floor)
    suzanne2    the same onto Suzanne subdivided twice (a Subdivision Surface modifier, level 2:
                15.7k triangles); both read the evaluated mesh
Measured from the evaluated mesh of every frame (tools/quality.py): p95 and max edge stretch;
cloth edges inside a collider (some point of the edge inside the box, ball or floor, not Suzanne:
she is not convex; count in the worst frame, deepest mm) and the deepest vertex; motion over the
last 10 frames (mean and max mm/frame); the curtain's push (largest displacement along the ball's
motion); the flag's out-of-plane motion (standard deviation in time of each vertex across the
flag's plane, mean over vertices, last 2 s); with self-collision, edge-triangle crossings every 10
frames and the pile's height (highest vertex at the last frame). Then the targets (quality and
speed against Blender's): met, or missed by how much.

Renders: frames 30, 60 and the last of every way, Workbench, smooth shading, one camera and studio
light per scene, to docs/vs_blender_<scene>.png (rows: frames; columns: the ways, Blender's left).

    python build.py bench --vs-blender [--scenes NAME ...] [--quick] [--no-render] [--no-chart]
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

from tools import quality  # noqa: E402  (bpy-free: the measures are unit-tested)
from tools.scenes import grid  # noqa: E402

DOCS = ROOT / "docs"
CHART = DOCS / "bench_vs_blender.png"
WARMUP = 5
FLOOR_SIZE = 20.0  # m
WIND_ANGLE = 10.0  # degrees between the wind and the flag's plane
SETTLE_FRAMES = 10  # motion is measured over the last this many frames
FLUTTER_SECONDS = 2.0
CROSSING_EVERY = 10  # frames between crossing counts (exact counts cost up to a second at 100 x 100)
RENDER_FRAMES = (30, 60)  # and the last
RENDER_SIZE = (520, 350)
CLOTH_COLOUR = (0.80, 0.33, 0.22, 1.0)
BODY_COLOUR = (0.55, 0.58, 0.62, 1.0)
FLOOR_COLOUR = (0.85, 0.85, 0.82, 1.0)


@dataclass(frozen=True)
class Way:
    """One simulator as a user would set it up."""

    label: str
    blender: bool
    self_collision: bool = False


BLENDER, OURS = Way("Blender", True), Way("ours", False)
BLENDER_SELF, OURS_SELF = Way("Blender, self-collision", True, True), Way("ours, self-collision", False, True)


@dataclass(frozen=True)
class Ball:
    """A UV sphere (32 segments, 16 rings) with Collision; `velocity` m/s, keyframed linearly."""

    radius: float
    location: tuple
    velocity: tuple = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Box:
    """A box with Collision, `size` (x, y, z) m, centred at `location`."""

    size: tuple
    location: tuple


@dataclass(frozen=True)
class Scene:
    name: str
    counts: tuple  # vertices across the sheet's width and height
    size: tuple  # (width, height) m
    plane: str  # "xy": lying flat; "xz": hanging, row 0 on top
    centre: tuple  # world position of the sheet's centre at frame 1
    frames: int  # the last frame played (frame 1 is the rest shape)
    quick_frames: int
    camera: tuple  # (location, point looked at)
    ways: tuple = (BLENDER, OURS)
    pins: str = ""  # "top" row or "left" column
    floor: bool = True
    box: Box | None = None
    ball: Ball | None = None
    wind: float = 0.0  # strength of a Wind field along +x, turned WIND_ANGLE towards +y
    lowered: tuple = ()  # (metres, frames): the cloth object, so its pins, moves down linearly
    fps: int = 24
    turns: float = 0.0  # the right column turned this many times about the sheet's axis ...
    turn_frames: int = 96  # ... over this many frames
    body: str = ""  # "suzanne" or "suzanne2" (subdivided twice)

    def last_frame(self, quick: bool) -> int:
        return self.quick_frames if quick else self.frames


# Suzanne lying face-up, SUZANNE_WIDTH m across (x), her lowest point on the floor: her highest
# point is then SUZANNE_TOP m up (Blender's monkey is 2.73 wide, 1.70 deep and 1.97 high at size 2;
# lying face-up, her depth is her height)
SUZANNE_WIDTH = 1.4
SUZANNE_TOP = SUZANNE_WIDTH * 1.70 / 2.73

# Frame counts: long enough to see the cloth settle (or, for the flag, keep moving for 2 s after
# its start-up), short enough for a whole run in minutes on 2 cores. Blender's self-collision at
# 100 x 100 costs 5-10 s a frame once the sheet piles up, so "folds" is lowered at 5 cm a frame
# and held for only 7 frames.
SCENES = {scene.name: scene for scene in (
    Scene("tablecloth", (60, 60), (1.6, 1.6), "xy", (0.0, 0.0, 1.05), 100, 14,
          ((2.1, -2.6, 2.0), (0.0, 0.0, 0.5)), box=Box((1.0, 1.0, 0.75), (0.0, 0.0, 0.375))),
    Scene("drape", (50, 50), (1.6, 1.6), "xy", (0.0, 0.0, 1.2), 100, 14,
          ((2.0, -2.5, 1.8), (0.0, 0.0, 0.45)), ball=Ball(0.45, (0.0, 0.0, 0.45))),
    Scene("curtain", (50, 50), (2.0, 2.0), "xz", (0.0, 0.0, 1.2), 96, 14,
          ((4.2, -2.0, 2.0), (0.0, 0.7, 1.1)), pins="top", floor=False,
          ball=Ball(0.3, (0.0, -0.8, 1.2), (0.0, 1.0, 0.0))),
    Scene("flag", (45, 30), (1.5, 1.0), "xz", (0.75, 0.0, 1.5), 120, 14,
          ((0.9, -3.2, 1.8), (0.75, 0.2, 1.4)), pins="left", floor=False, wind=8.0),
    Scene("pile", (8, 60), (0.4, 3.0), "xz", (0.0, 0.0, 1.6), 90, 14,
          ((1.0, -1.3, 0.8), (0.0, 0.0, 0.15)), ways=(BLENDER_SELF, OURS_SELF), fps=30),
    Scene("folds", (100, 100), (2.0, 2.0), "xz", (0.0, 0.0, 1.05), 48, 8,
          ((2.3, -2.9, 1.9), (0.0, 0.0, 0.3)), ways=(BLENDER_SELF, OURS_SELF, OURS), pins="top",
          lowered=(2.0, 40)),
    Scene("sheet", (50, 50), (2.0, 2.0), "xz", (0.0, 0.0, 1.5), 40, 14,
          ((3.6, -4.4, 1.6), (0.0, 0.0, 1.0)), pins="left", floor=False),
    Scene("twist", (30, 30), (1.0, 1.0), "xz", (0.0, 0.0, 1.0), 120, 14,
          ((1.6, -1.9, 1.4), (0.0, 0.0, 1.0)), ways=(BLENDER_SELF, OURS_SELF), pins="sides", floor=False,
          turns=2.0),
    Scene("suzanne", (50, 50), (1.4, 1.4), "xy", (0.0, 0.0, SUZANNE_TOP + 0.3), 100, 14,
          ((2.0, -2.5, 1.6), (0.0, 0.0, 0.3)), body="suzanne"),
    Scene("suzanne2", (50, 50), (1.4, 1.4), "xy", (0.0, 0.0, SUZANNE_TOP + 0.3), 100, 14,
          ((2.0, -2.5, 1.6), (0.0, 0.0, 0.3)), body="suzanne2"),
)}


@dataclass
class Run:
    """One scene played one way: timings and the quality measures."""

    times: list = field(default_factory=list)
    p95: float = 0.0  # largest per-frame 95th percentile of edge stretch
    strain: float = 0.0  # largest edge stretch in any frame
    inside: int = 0  # cloth edges inside a collider, worst frame
    edge_depth: float = 0.0  # m, deepest point of a cloth edge inside a collider, any frame
    vertex_depth: float = 0.0  # m, deepest vertex inside a collider, any frame
    motion: tuple = (float("nan"), float("nan"))  # m/frame over the last frames: mean, max
    push: float = float("nan")  # m, curtain
    flutter: float = float("nan")  # m, flag
    crossings: dict = field(default_factory=dict)  # frame -> edge-triangle crossings
    pile: float = float("nan")  # m, highest vertex above the floor at the last frame
    renders: dict = field(default_factory=dict)  # frame -> png path
    error: str = ""

    @property
    def ms(self) -> float:
        return 1000.0 * statistics.median(self.times) if self.times else float("nan")


# -- building a scene --------------------------------------------------------------------------

def sheet_arrays(scene: Scene):
    """(vertices (n, 3) world, quads (m, 4), pinned vertex indices) of the scene's sheet."""
    nx, ny = scene.counts
    vertices, quads, index = grid(nx, ny, 1.0, scene.plane)
    width, height = scene.size
    vertices = vertices * ((width, height, 1.0) if scene.plane == "xy" else (width, 1.0, height))
    vertices += np.asarray(scene.centre) - 0.5 * (vertices.max(axis=0) + vertices.min(axis=0))
    pinned = {"top": index[0], "left": index[:, 0], "sides": np.concatenate([index[:, 0], index[:, -1]]),
              "": np.empty(0, dtype=np.int64)}[scene.pins]
    return vertices, quads, pinned


def fresh_blend(scene: Scene, last: int):
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blend = bpy.context.scene
    blend.render.fps, blend.render.fps_base = scene.fps, 1.0
    blend.frame_start, blend.frame_end = 1, last
    blend.frame_set(1)
    return blend


def move_linearly(obj, start: int, end: int, location) -> None:
    """Keyframe obj's location where it is at frame `start` and at `location` at frame `end`, with
    linear interpolation: keyframe_insert makes Bezier keys whatever the preferences say, which
    ease in and out (the folds sheet came down 16 cm in its first 8 frames, not 35)."""
    import bpy

    obj.keyframe_insert("location", frame=start)
    obj.location = location
    obj.keyframe_insert("location", frame=end)
    anim = obj.animation_data
    if bpy.app.version < (4, 4, 0):
        curves = anim.action.fcurves
    else:  # f-curves live in the action's channelbag since Blender 4.4
        curves = anim.action.layers[0].strips[0].channelbag(anim.action_slot).fcurves
    for curve in curves:
        for point in curve.keyframe_points:
            point.interpolation = "LINEAR"


def link(obj, colour):
    import bpy

    bpy.context.scene.collection.objects.link(obj)
    obj.color = colour
    return obj


def mesh_object(name, vertices, faces, colour):
    import bpy

    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices).tolist(), [], np.asarray(faces).tolist())
    mesh.shade_smooth()
    mesh.update()
    return link(bpy.data.objects.new(name, mesh), colour)


def add_collision(obj):
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def add_bodies(scene: Scene, last: int) -> list:
    """The scene's colliders; returns [(object or None, planes for a fixed body)]."""
    import bpy

    bodies = []
    if scene.floor:
        half = FLOOR_SIZE / 2
        floor = mesh_object("Floor", [(-half, -half, 0), (half, -half, 0), (half, half, 0), (-half, half, 0)],
                            [(0, 1, 2, 3)], FLOOR_COLOUR)
        bodies.append((None, quality.half_space()))
        add_collision(floor)
    if scene.box is not None:
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=scene.box.location)
        box = bpy.context.active_object
        box.scale = scene.box.size
        box.color = BODY_COLOUR
        bodies.append((add_collision(box), None))
    if scene.ball is not None:
        ball = scene.ball
        bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=ball.radius,
                                             location=ball.location)
        sphere = bpy.context.active_object
        sphere.color = BODY_COLOUR
        bpy.ops.object.shade_smooth()
        if any(ball.velocity):
            move_linearly(sphere, 1, last,
                          np.asarray(ball.location) + np.asarray(ball.velocity) * (last - 1) / scene.fps)
        bodies.append((add_collision(sphere), None))
    if scene.body:
        bodies.append((add_collision(suzanne_object(scene.body == "suzanne2")), "unmeasured"))
    if scene.wind:
        bpy.ops.object.effector_add(type="WIND", location=(-0.6, 0.0, scene.centre[2]),
                                    rotation=(0.0, np.pi / 2, np.radians(WIND_ANGLE)))
        bpy.context.active_object.field.strength = scene.wind
    return bodies


def suzanne_object(subdivided: bool):
    """Blender's monkey lying face-up, SUZANNE_WIDTH wide, resting on the floor; subdivided twice
    by a Subdivision Surface modifier (before the Collision modifier) if asked."""
    import bpy

    scale = SUZANNE_WIDTH / 2.73
    bpy.ops.mesh.primitive_monkey_add(size=2.0, rotation=(-np.pi / 2, 0.0, 0.0))
    monkey = bpy.context.active_object
    monkey.scale = (scale,) * 3  # (the operator's own scale argument leaves the object at 1)
    monkey.color = BODY_COLOUR
    bpy.ops.object.shade_smooth()
    if subdivided:
        modifier = monkey.modifiers.new("Subdivision", "SUBSURF")
        modifier.levels = modifier.render_levels = 2
    bpy.context.view_layer.update()
    lowest = evaluated_world(monkey, bpy.context.evaluated_depsgraph_get())[:, 2].min()
    monkey.location.z -= lowest
    bpy.context.view_layer.update()
    return monkey


def twisting_hook(cloth, scene: Scene, right, last: int):
    """A Hook modifier (before the cloth) that turns the right column `right` (vertex ids) about
    the sheet's horizontal axis, scene.turns times over scene.turn_frames frames, by an Empty."""
    import bpy

    centre = np.asarray(scene.centre, dtype=np.float64)
    empty = bpy.data.objects.new("Turner", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = (cloth.matrix_world @ cloth.data.vertices[int(right[0])].co).x, centre[1], centre[2]
    bpy.context.view_layer.update()
    hook = cloth.modifiers.new("Hook", "HOOK")
    hook.object = empty
    hook.vertex_indices_set([int(i) for i in right])
    hook.matrix_inverse = empty.matrix_world.inverted()
    empty.keyframe_insert("rotation_euler", frame=1)
    empty.rotation_euler = (2.0 * np.pi * scene.turns, 0.0, 0.0)
    empty.keyframe_insert("rotation_euler", frame=1 + scene.turn_frames)
    anim = empty.animation_data
    curves = (anim.action.fcurves if bpy.app.version < (4, 4, 0)
              else anim.action.layers[0].strips[0].channelbag(anim.action_slot).fcurves)
    for curve in curves:
        for point in curve.keyframe_points:
            point.interpolation = "LINEAR"


def add_camera(scene: Scene):
    import bpy
    from mathutils import Vector

    location, target = (Vector(v) for v in scene.camera)
    data = bpy.data.cameras.new("Camera")
    camera = bpy.data.objects.new("Camera", data)
    bpy.context.scene.collection.objects.link(camera)
    camera.location = location
    camera.rotation_euler = (target - location).to_track_quat("-Z", "Y").to_euler()
    data.lens = 38.0
    blend = bpy.context.scene
    blend.camera = camera
    blend.render.engine = "BLENDER_WORKBENCH"
    blend.render.resolution_x, blend.render.resolution_y = RENDER_SIZE
    blend.render.resolution_percentage = 100
    blend.render.image_settings.file_format = "PNG"
    shading = blend.display.shading
    shading.light, shading.color_type = "STUDIO", "OBJECT"
    shading.show_shadows, shading.show_cavity = True, False
    blend.display.shadow_focus = 0.5
    blend.world = bpy.data.worlds.new("World")
    blend.world.color = (0.62, 0.68, 0.75)


def build(scene: Scene, way: Way, last: int):
    """The scene in a fresh file with the cloth set up the way says: (cloth object, bodies)."""
    import bpy
    from mathutils import Vector

    fresh_blend(scene, last)
    bodies = add_bodies(scene, last)
    add_camera(scene)
    vertices, quads, pinned = sheet_arrays(scene)
    cloth = mesh_object("Cloth", vertices, quads, CLOTH_COLOUR)
    if len(pinned):
        cloth.vertex_groups.new(name="Pins").add(pinned.tolist(), 1.0, "REPLACE")
    if scene.turns and way.blender:
        twisting_hook(cloth, scene, sheet_arrays(scene)[2][len(pinned) // 2:], last)
    if scene.lowered:
        depth, frames = scene.lowered
        move_linearly(cloth, 1, 1 + frames, cloth.location - Vector((0.0, 0.0, depth)))
        # back to what frame 1's animation says: the location was edited after its key, and the
        # add-on takes the rest shape where the object is when Make Cloth runs
        bpy.context.scene.frame_set(1)
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    cloth.select_set(True)
    bpy.context.view_layer.objects.active = cloth
    if way.blender:
        modifier = cloth.modifiers.new("Cloth", "CLOTH")
        if len(pinned):
            modifier.settings.vertex_group_mass = "Pins"
        modifier.collision_settings.use_self_collision = way.self_collision
        modifier.point_cache.frame_start, modifier.point_cache.frame_end = 1, last
    else:
        props = cloth.cloth_addon
        if len(pinned):
            props.pin_group = "Pins"
        props.use_self_collision = way.self_collision
        if bpy.ops.cloth_addon.make_cloth() != {"FINISHED"}:
            raise RuntimeError("make_cloth failed")
    return cloth, bodies


# -- reading Blender's meshes ------------------------------------------------------------------

def evaluated_world(obj, depsgraph) -> np.ndarray:
    """(n, 3) float64 world positions of the object's evaluated mesh (modifiers, shape keys)."""
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        local = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", local)
        matrix = np.array(evaluated.matrix_world, dtype=np.float64)
    finally:
        evaluated.to_mesh_clear()
    return local.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]


def mesh_topology(mesh):
    """(edges (e, 2), triangles (t, 3)) int64 of a mesh."""
    mesh.calc_loop_triangles()
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", triangles)
    return edges.reshape(-1, 2).astype(np.int64), triangles.reshape(-1, 3).astype(np.int64)


def body_planes(bodies, depsgraph) -> list:
    """Each collider as half-spaces at the current frame (a moving ball's are read again)."""
    planes = []
    for obj, fixed in bodies:
        if isinstance(fixed, str):  # not convex: no planes to measure it by
            continue
        if fixed is not None:
            planes.append(fixed)
            continue
        _, triangles = mesh_topology(obj.data)
        planes.append(quality.convex_planes(evaluated_world(obj, depsgraph), triangles))
    return planes


# -- playing and measuring ---------------------------------------------------------------------

def play_core_twist(scene: Scene, last: int) -> Run:
    """Ours in the twist: the core Simulation on the scene's sheet (defaults, self-collision), its
    right column's pins moved every frame as Blender's Hook moves them; frames timed and measured
    as play does (no renders)."""
    from cloth_addon.core import Settings, Simulation

    vertices, quads, pinned = sheet_arrays(scene)
    sim = Simulation(vertices, quads, Settings(self_collision=True, dt=1.0 / scene.fps), pinned=pinned)
    right = pinned[len(pinned) // 2:]
    axis = np.array([vertices[right[0], 0], scene.centre[1], scene.centre[2]])
    features = sim.model.contact_features
    edges = features.edges
    rest_length = quality.edge_lengths(vertices, edges)
    run, frames = Run(), [vertices]
    for frame in range(2, last + 1):
        angle = 2.0 * np.pi * scene.turns * min(frame - 1, scene.turn_frames) / scene.turn_frames
        targets = vertices.copy()  # (n, 3): move_pins takes the pinned rows of it
        offset = vertices[right] - axis
        targets[right, 1] = axis[1] + np.cos(angle) * offset[:, 1] - np.sin(angle) * offset[:, 2]
        targets[right, 2] = axis[2] + np.sin(angle) * offset[:, 1] + np.cos(angle) * offset[:, 2]
        sim.move_pins(targets)
        start = time.perf_counter()
        sim.step(1)
        elapsed = time.perf_counter() - start
        if frame > WARMUP + 1:
            run.times.append(elapsed)
        x = np.array(sim.positions)
        frames.append(x)
        strain = quality.edge_strain(x, edges, rest_length)
        run.p95 = max(run.p95, quality.percentile(strain, 95))
        run.strain = max(run.strain, float(strain.max()))
        if frame % CROSSING_EVERY == 0 or frame == last:
            run.crossings[frame] = quality.edge_triangle_crossings(x, edges, features.triangles)
    finish(scene, run, np.stack(frames))
    return run


def play(scene: Scene, way: Way, last: int, render_to: Path | None) -> Run:
    """Build the scene, play frames 2 .. last in order, measure every frame, render some."""
    import bpy

    if scene.turns and not way.blender:
        return play_core_twist(scene, last)

    cloth, bodies = build(scene, way, last)
    blend = bpy.context.scene
    rest, _, _ = sheet_arrays(scene)
    edges, triangles = mesh_topology(cloth.data)
    rest_length = quality.edge_lengths(rest, edges)
    run, frames = Run(), [rest]
    for frame in range(2, last + 1):
        start = time.perf_counter()
        blend.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()  # flushes what the handler tagged
        elapsed = time.perf_counter() - start
        if frame > WARMUP + 1:
            run.times.append(elapsed)
        x = evaluated_world(cloth, depsgraph)
        if not np.isfinite(x).all():
            run.error = f"positions not finite from frame {frame} on; the run stops there"
            break
        frames.append(x)
        strain = quality.edge_strain(x, edges, rest_length)
        run.p95 = max(run.p95, quality.percentile(strain, 95))
        run.strain = max(run.strain, float(strain.max()))
        inside = np.zeros(len(edges), dtype=bool)
        for planes in body_planes(bodies, depsgraph):
            depth = quality.edge_depth(x, edges, planes)
            inside |= depth > 0.0
            run.edge_depth = max(run.edge_depth, float(depth.max()))
            run.vertex_depth = max(run.vertex_depth, float(quality.point_depth(x, planes).max()))
        run.inside = max(run.inside, int(inside.sum()))
        if way.self_collision and frame % CROSSING_EVERY == 0 or frame == last:
            run.crossings[frame] = quality.edge_triangle_crossings(x, edges, triangles)
        if render_to is not None and frame in render_frames(last):
            # Now, not after the run: going back to a frame, Blender's cloth shows the last frame
            # it was at, not the one it computed there.
            blend.render.filepath = str(render_to / f"{scene.name}_{way.label}_{frame}.png")
            bpy.ops.render.render(write_still=True)
            run.renders[frame] = blend.render.filepath
    if not way.blender:
        from cloth_addon.blender import store

        run.error = store.errors.get(cloth.session_uid, "")
    finish(scene, run, np.stack(frames))
    return run


def finish(scene: Scene, run: Run, frames: np.ndarray) -> None:
    """The measures that need the whole run: settling, the curtain's push, the flag, the pile."""
    run.motion = quality.frame_motion(frames[-SETTLE_FRAMES - 1:])
    if scene.ball is not None and any(scene.ball.velocity):
        direction = np.asarray(scene.ball.velocity) / np.linalg.norm(scene.ball.velocity)
        run.push = float(((frames - frames[0]) @ direction).max())
    if scene.wind:
        normal = (0.0, 1.0, 0.0) if scene.plane == "xz" else (0.0, 0.0, 1.0)
        run.flutter = quality.out_of_plane_std(frames[-int(FLUTTER_SECONDS * scene.fps):], normal)
    if scene.floor and not scene.pins and any(way.self_collision for way in scene.ways):
        run.pile = float(frames[-1][:, 2].max())


def render_frames(last: int) -> list:
    return sorted({frame for frame in RENDER_FRAMES if frame < last} | {last})


def side_by_side(scene: Scene, runs: dict, path: Path) -> None:
    """One image: a row per rendered frame, a column per way (Blender's first), labelled."""
    from PIL import Image, ImageDraw, ImageFont

    ways = [way for way in scene.ways if runs[way].renders]
    if not ways:
        return
    frames = sorted(runs[ways[0]].renders)
    width, height = RENDER_SIZE
    sheet = Image.new("RGB", (width * len(ways), height * len(frames)), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=16)
    for row, frame in enumerate(frames):
        for column, way in enumerate(ways):
            if frame in runs[way].renders:
                tile = Image.open(runs[way].renders[frame]).convert("RGB")
                sheet.paste(tile, (column * width, row * height))
            label, corner = f"{way.label}, frame {frame}", (column * width + 8, row * height + 6)
            draw.rectangle(draw.textbbox(corner, label, font=font), fill="white")
            draw.text(corner, label, fill="black", font=font)
    for column in range(1, len(ways)):
        draw.line([(column * width, 0), (column * width, sheet.height)], fill="black", width=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)


# -- targets -----------------------------------------------------------------------------------

def verdict(value: float, limit: float, unit: str, at_least: bool = False, scale: float = 1.0) -> str:
    """'met (...)' or 'MISSED by ...', value and limit in SI, printed times `scale` in `unit`."""
    if value != value or limit != limit:
        return "n/a"
    shown = f"{scale * value:.3g} {unit}, {'needs >=' if at_least else 'needs <='} {scale * limit:.3g}"
    if (value >= limit) if at_least else (value <= limit):
        return f"met ({shown})"
    if limit == 0.0 or value == 0.0:
        return f"MISSED ({shown})"
    factor = limit / value if at_least else value / limit
    return f"MISSED by {factor:.2f}x ({shown})"


def targets(scene: Scene, runs: dict) -> list:
    """(target, verdict) for ours in this scene: stretch, depth, speed and settling in the four
    scenes without self-collision; crossings, height and speed with it."""
    ours_self, ours = runs.get(OURS_SELF), runs.get(OURS)
    blender = runs.get(BLENDER) or runs.get(BLENDER_SELF)
    rows = []
    if scene.name in ("tablecloth", "drape", "curtain", "flag"):
        rows += [("p95 edge stretch <= 3% in every frame", verdict(ours.p95, 0.03, "%", scale=100)),
                 ("max edge stretch <= max(25%, Blender's)",
                  verdict(ours.strain, max(0.25, blender.strain), "%", scale=100)),
                 ("no cloth edge inside a collider, any frame", verdict(ours.inside, 0, "edges")),
                 ("no vertex deeper than 1 mm, any frame",
                  verdict(ours.vertex_depth, 0.001, "mm", scale=1000)),
                 ("ms/frame <= 1/3 of Blender's", verdict(ours.ms, blender.ms / 3, "ms"))]
    if scene.name in ("tablecloth", "drape"):
        rows += [("settled, last 10 frames mean <= 0.5 mm/frame",
                  verdict(ours.motion[0], 0.0005, "mm/frame", scale=1000)),
                 ("settled, no vertex > 5 mm in a frame (last 10)",
                  verdict(ours.motion[1], 0.005, "mm/frame", scale=1000))]
    if scene.name == "sheet":
        rows.append(("ms/frame <= 1/4 of Blender's", verdict(ours.ms, blender.ms / 4, "ms")))
    if scene.name == "curtain":
        rows.append(("pushed >= 0.8x Blender's", verdict(ours.push, 0.8 * blender.push, "m", at_least=True)))
    if scene.name == "flag":
        rows.append(("still moving, out-of-plane std, last 2 s >= 20 mm",
                     verdict(ours.flutter, 0.02, "mm", at_least=True, scale=1000)))
    if ours_self is not None:
        rows.append(("0 edge-triangle crossings (every 10th frame)",
                     verdict(max(ours_self.crossings.values(), default=float("nan")), 0, "crossings")))
    if scene.name == "pile":
        rows += [("pile keeps height >= 50 mm",
                  verdict(ours_self.pile, 0.05, "mm", at_least=True, scale=1000)),
                 ("ms/frame <= Blender's", verdict(ours_self.ms, blender.ms, "ms"))]
    if scene.name == "folds":
        rows += [("ms/frame <= Blender's self-collision", verdict(ours_self.ms, blender.ms, "ms"))]
    if scene.name == "twist":
        rows.append(("ms/frame <= 2x Blender's", verdict(ours_self.ms, 2 * blender.ms, "ms")))
    if scene.body:
        share = 0.5 if scene.body == "suzanne" else 1.0
        rows += [("p95 edge stretch <= 3% in every frame", verdict(ours.p95, 0.03, "%", scale=100)),
                 (f"ms/frame <= {share:g}x Blender's", verdict(ours.ms, share * blender.ms, "ms"))]
    return rows


# -- report ------------------------------------------------------------------------------------

def fmt(value: float, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value != value else f"{scale * value:.{digits}f}"


TABLE_HEAD = ("| scene | way | ms/frame | vs Blender | stretch p95 / max | edges inside (deepest mm) "
              "| deepest vertex mm | last 10 frames mm/frame mean / max | scene's own |")


def scene_own(scene: Scene, run: Run) -> str:
    parts = []
    if run.push == run.push:
        parts.append(f"push {run.push:.2f} m")
    if run.flutter == run.flutter:
        parts.append(f"out-of-plane {1000 * run.flutter:.0f} mm")
    if run.crossings and any(way.self_collision for way in scene.ways):
        parts.append(f"crossings max {max(run.crossings.values())}, last {run.crossings[max(run.crossings)]}")
    if run.pile == run.pile:
        parts.append(f"height {1000 * run.pile:.0f} mm")
    return "; ".join(parts) or "-"


def speed_ratio(ours: float, blender: float) -> str:
    """'1/4.2' when ours takes a 4.2th of Blender's time, '2.1x' when it takes 2.1 times as long."""
    return f"1/{blender / ours:.1f}" if ours <= blender else f"{ours / blender:.1f}x"


def table_rows(scene: Scene, runs: dict, frames: int) -> list:
    blender = next(runs[way] for way in scene.ways if way.blender)
    rows = []
    for way in scene.ways:
        run = runs[way]
        ratio = "-" if way.blender or not run.times else speed_ratio(run.ms, blender.ms)
        rows.append(f"| {scene.name} ({frames} fr, {scene.fps} fps) | {way.label} | {fmt(run.ms)} "
                    f"| {ratio} | {fmt(run.p95, 100)}% / {fmt(run.strain, 100)}% | "
                    f"{run.inside} ({fmt(run.edge_depth, 1000)}) | {fmt(run.vertex_depth, 1000)} | "
                    f"{fmt(run.motion[0], 1000, 2)} / {fmt(run.motion[1], 1000)} | {scene_own(scene, run)} |")
    return rows


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [(scene, way, runs[way]) for scene, runs in results.items() for way in scene.ways]
    fig, ax = plt.subplots(figsize=(11, 4.2), dpi=110)
    x = np.arange(len(bars))
    values = [run.ms for _, _, run in bars]
    colours = ["#e87d0d" if way.blender else "#2f6db3" for _, way, _ in bars]
    for k, value in enumerate(values):
        ax.annotate(fmt(value, digits=0), (x[k], value), ha="center", va="bottom", fontsize=7)
    ax.bar(x, values, color=colours)
    ax.set_yscale("log")
    ax.set_ylabel("median ms per frame (log scale)")
    names = [f"{scene.name}\n{way.label.replace(', ', chr(10))}" for scene, way, _ in bars]
    ax.set_xticks(x, names, fontsize=7)
    ax.set_title("Same scenes, defaults: Blender's Cloth modifier (orange) vs the add-on (blue)")
    ax.grid(axis="y", alpha=0.3)
    fig.text(0.99, 0.01, f"{time.strftime('%Y-%m-%d')}, {machine()}", ha="right", va="bottom", fontsize=7,
             color="0.4")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


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


# -- bake (opt-in: the bake throughput of docs/BENCHMARKS.md) ------------------------------------

BAKE_FRAMES, BAKE_SIZE = 250, 100
BAKE_SCENE = Scene("bake", (BAKE_SIZE, BAKE_SIZE), (2.0, 2.0), "xz", (0.0, 0.0, 1.0), BAKE_FRAMES, 10,
                   ((0.0, -5.0, 1.0), (0.0, 0.0, 1.0)), ways=(OURS,), pins="top", floor=False)


def bake_once(target: str, frames: int) -> dict:
    """Bake `frames` frames of the 100 x 100 hanging sheet to target; seconds and memory."""
    import resource

    import bpy

    import cloth_addon

    cloth_addon.register()
    cloth, _ = build(BAKE_SCENE, OURS, frames)
    props = cloth.cloth_addon
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
    # a PC2 bake adds no shape key: a mesh that never had one has no key set at all
    keys = cloth.data.shape_keys
    written = 0 if keys is None else sum(1 for block in keys.key_blocks if block.name.startswith("ClothBake"))
    size = sum(f.stat().st_size for f in Path(folder).glob("*.pc2"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    return {"target": target, "frames": frames, "seconds": seconds, "rss_before_mb": rss_before,
            "rss_peak_mb": peak, "rss_after_mb": rss_now(), "shape_keys": written, "pc2_mb": size / 2**20}


def rss_now() -> float:
    """Resident set size of this process now, MiB (Linux; nan elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def bake_in_subprocess(target: str, frames: int) -> dict:
    """Each bake in a fresh process, so that its peak RSS is its own."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--bake-child", target, str(frames)],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("BAKE "):
            return json.loads(line[5:])
    raise RuntimeError(f"bake child failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def bake_report(quick: bool) -> None:
    frames = 10 if quick else BAKE_FRAMES
    print(f"\nbake of {frames} frames, {BAKE_SIZE}x{BAKE_SIZE} pinned sheet, end to end "
          "(fresh process each):")
    for target in ("SHAPE_KEYS", "PC2"):
        info = bake_in_subprocess(target, frames)
        per_frame = 1000 * info["seconds"] / frames
        print(f"  {target:10s} {info['seconds']:6.1f} s ({per_frame:.0f} ms/frame); RSS "
              f"{info['rss_before_mb']:.0f} MiB before, peak {info['rss_peak_mb']:.0f}, after "
              f"{info['rss_after_mb']:.0f}; {info['shape_keys']} shape keys, PC2 {info['pc2_mb']:.1f} MiB",
              flush=True)


# -- main --------------------------------------------------------------------------------------

def run(argv) -> int:
    parser = argparse.ArgumentParser(prog="bench --vs-blender", description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", nargs="+", choices=list(SCENES), metavar="NAME",
                        help=f"only these scenes ({', '.join(SCENES)})")
    parser.add_argument("--quick", action="store_true", help="a few frames per scene (smoke test)")
    parser.add_argument("--no-render", action="store_true", help="skip the side-by-side renders")
    parser.add_argument("--no-chart", action="store_true", help=f"do not write {CHART.relative_to(ROOT)}")
    parser.add_argument("--bake", action="store_true", help="also time baking 250 frames of 100 x 100")
    parser.add_argument("--quiet", type=float, default=0.25, metavar="FRACTION",
                        help="before each run wait until other processes use at most this share of the CPUs")
    parser.add_argument("--patience", type=float, default=10.0, metavar="SECONDS",
                        help="... but no longer than this (default 10 s)")
    parser.add_argument("--bake-child", nargs=2, metavar=("TARGET", "FRAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bake_child:
        print("BAKE " + json.dumps(bake_once(args.bake_child[0], int(args.bake_child[1]))), flush=True)
        return 0

    import bpy

    import cloth_addon

    cloth_addon.register()
    scenes = [SCENES[name] for name in (args.scenes or SCENES)]
    began = time.perf_counter()
    print(f"Blender {bpy.app.version_string}, numpy {np.__version__}, {machine()}; load "
          f"{os.getloadavg()[0]:.2f}; median ms/frame after {WARMUP} warm-up frames", flush=True)
    results, lines = {}, []
    with tempfile.TemporaryDirectory(prefix="vs_blender_") as folder:
        for scene in scenes:
            last = scene.last_frame(args.quick)
            runs = {}
            for way in scene.ways:
                busy = wait_for_quiet(args.quiet, args.patience)
                started = time.perf_counter()
                runs[way] = play(scene, way, last, None if args.no_render else Path(folder))
                seconds = time.perf_counter() - started
                print(f"  {scene.name:10s} {way.label:24s} {fmt(runs[way].ms):>7s} ms/frame, {last} frames "
                      f"in {seconds:5.1f} s (other processes' CPU before: {100 * busy:.0f}%)"
                      + (f"; ERROR {runs[way].error}" if runs[way].error else ""), flush=True)
            results[scene] = runs
            lines += table_rows(scene, runs, last)
            print("\n".join("    " + line for line in table_rows(scene, runs, last)), flush=True)
            if not args.no_render:
                side_by_side(scene, runs, DOCS / f"vs_blender_{scene.name}.png")
            for target, result in targets(scene, runs):
                print(f"    {scene.name}: {target}: {result}", flush=True)
            for way in scene.ways:
                if runs[way].crossings and way.self_collision:
                    counts = ", ".join(f"{k}: {n}" for k, n in sorted(runs[way].crossings.items()))
                    print(f"    {scene.name}: {way.label}: crossings by frame {counts}", flush=True)
    print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"`python build.py bench --vs-blender{' --quick' if args.quick else ''}"
          f"{' --scenes ' + ' '.join(args.scenes) if args.scenes else ''}`, "
          f"{time.perf_counter() - began:.0f} s in all:\n")
    print(TABLE_HEAD)
    print("|" + "---|" * (TABLE_HEAD.count("|") - 1))
    print("\n".join(lines))
    print("\n| scene | target (ours) | result |\n|---|---|---|")
    for scene, runs in results.items():
        for target, result in targets(scene, runs):
            print(f"| {scene.name} | {target} | {result} |")
    if not args.no_render:
        print("\nrenders: " + ", ".join(f"docs/vs_blender_{scene.name}.png" for scene in results))
    if not args.no_chart:
        chart(results, CHART)
        print(f"chart: {CHART.relative_to(ROOT)}")
    if args.bake:
        bake_report(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
