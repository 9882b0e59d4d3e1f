"""A rigged character wearing a cape, built in code: the add-on's cloth beside Blender's Cloth.

`python build.py demo` runs it after the main demo (tools/demo.py); `character_scene` is also what
tests/blender/test_character_demo.py plays. The character is a coarse body (a capped torso and
two capped legs, one closed mesh) on a three-bone armature (Spine, the root, turning the
character about its vertical axis; Leg.L and Leg.R, its children, swinging back and forth as in
a walk). The cape hangs down the back, pinned along its top row at the shoulders and skinned to
the Spine, so an Armature modifier above its cloth stage carries the pins; the body is a
Collision object, read through its evaluated (deformed) mesh: the cape swings out when the
character turns and the legs kick it. Blender's twin wears the same cape with Blender's Cloth
modifier after its Armature (its defaults, the shoulders as its pin group).
"""

import math

import bpy
import numpy as np

from cloth_addon.blender import colliders, mesh_io
from cloth_addon.blender.selection import select_only
from cloth_addon.core import MeshCollider
from tools.quality import edge_triangle_crossings

FRAMES = 60
CAPE_COLUMNS, CAPE_ROWS = 20, 30
BODY_THICKNESS = 0.01  # the body's Collision Outer Thickness, m


def tube_arrays(segments: int, rings: int, radii, heights, capped: bool = False, centre=(0.0, 0.0)):
    """(vertices (segments * rings, 3), faces) of a tube around a vertical axis through centre:
    ring r (segments vertices, ring 0 first) at radius radii[r], height heights[r]; quads between
    rings; capped: an n-gon closes each end (a closed part of a body). With heights rising and
    the angle turning counterclockwise seen from above, every face's normal points outwards."""
    angle = 2 * np.pi * np.arange(segments) / segments
    radii, heights = np.broadcast_arrays(np.asarray(radii, float), np.asarray(heights, float))
    vertices = np.concatenate([np.stack([centre[0] + r * np.cos(angle), centre[1] + r * np.sin(angle),
                                         np.full(segments, z)], axis=1)
                               for r, z in zip(radii, heights, strict=True)])
    ring = np.arange(segments)
    faces = [[r * segments + a, r * segments + b, (r + 1) * segments + b, (r + 1) * segments + a]
             for r in range(rings - 1) for a, b in zip(ring, np.roll(ring, -1), strict=True)]
    if capped:
        faces += [list(ring[::-1]), list((rings - 1) * segments + ring)]
    return vertices, [[int(i) for i in face] for face in faces]


def mesh_object(name: str, vertices, faces):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices).tolist(), [], faces)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def tube(name: str, segments: int, rings: int, radii, heights, capped: bool = False):
    """A tube object (tube_arrays) around the Z axis, linked to the scene."""
    return mesh_object(name, *tube_arrays(segments, rings, radii, heights, capped))


def sheet_arrays(columns: int, rows: int, width: float, height: float, top: float, y: float):
    """(vertices (columns * rows, 3), quads) of a vertical sheet in the plane at y, centred on
    x = 0, its top row at z = top; vertex k is column k % columns of row k // columns (row 0 on
    top)."""
    x = np.linspace(-width / 2, width / 2, columns)
    z = np.linspace(top, top - height, rows)
    vertices = np.stack([np.tile(x, rows), np.full(columns * rows, y), np.repeat(z, columns)], axis=1)
    corner = (np.arange(rows - 1)[:, None] * columns + np.arange(columns - 1)[None, :]).ravel()
    return vertices, np.stack([corner, corner + 1, corner + columns + 1, corner + columns], axis=1).tolist()


def armature(name: str, bones: dict):
    """An armature object; bones: {name: (head, tail, parent name or None)}, world = armature space."""
    rig = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    edit = rig.data.edit_bones
    for bone, (head, tail, _) in bones.items():
        added = edit.new(bone)
        added.head, added.tail = head, tail
    for bone, (_, _, parent) in bones.items():
        if parent is not None:
            edit[bone].parent = edit[parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    for pose in rig.pose.bones:
        pose.rotation_mode = "XYZ"
    return rig


def skin(obj, rig, weights: dict):
    """Deform `obj` by `rig` through an Armature modifier; weights: {bone: (n,) float weights}."""
    for bone, values in weights.items():
        values = np.asarray(values, dtype=float)
        group = obj.vertex_groups.new(name=bone)
        for value in np.unique(values[values > 0]):
            group.add([int(i) for i in np.flatnonzero(values == value)], float(value), "REPLACE")
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    return modifier


def animate(rig) -> None:
    """The Spine turns the character 100 degrees left by frame 24 and 40 right of its start by
    frame 50; the legs swing +-0.45 rad with a 24-frame period, opposite to each other."""
    spine = rig.pose.bones["Spine"]
    for frame, degrees in ((1, 0.0), (24, 100.0), (50, -40.0), (FRAMES, -40.0)):
        spine.rotation_euler = (0.0, math.radians(degrees), 0.0)  # the bone's Y axis is world Z
        spine.keyframe_insert("rotation_euler", frame=frame)
    for frame in range(1, FRAMES + 1, 6):
        swing = 0.45 * math.sin(2 * math.pi * (frame - 1) / 24)
        for side, sign in (("Leg.L", 1.0), ("Leg.R", -1.0)):
            leg = rig.pose.bones[side]
            leg.rotation_euler = (sign * swing, 0.0, 0.0)
            leg.keyframe_insert("rotation_euler", frame=frame)


def character(name: str, x: float):
    """(body, rig, cape) of one character standing at world x, facing -Y."""
    rig = armature(f"{name}Rig", {"Spine": ((x, 0, 0.86), (x, 0, 1.55), None),
                                  "Leg.L": ((x + 0.09, 0, 0.84), (x + 0.09, 0, 0.05), "Spine"),
                                  "Leg.R": ((x - 0.09, 0, 0.84), (x - 0.09, 0, 0.05), "Spine")})
    torso = [0.15, 0.17, 0.17, 0.18, 0.16, 0.1]  # radii from the hips up to the neck
    parts = [tube_arrays(14, 6, torso, np.linspace(0.86, 1.55, 6), True, (x, 0)),
             tube_arrays(8, 5, 0.07, np.linspace(0.05, 0.84, 5), True, (x + 0.09, 0)),
             tube_arrays(8, 5, 0.07, np.linspace(0.05, 0.84, 5), True, (x - 0.09, 0))]
    starts = np.cumsum([0] + [len(v) for v, _ in parts])
    body = mesh_object(f"{name}Body", np.concatenate([v for v, _ in parts]),
                       [[i + int(s) for i in face] for (_, faces), s in zip(parts, starts, strict=False)
                        for face in faces])
    owner = np.repeat(np.arange(3), np.diff(starts))
    skin(body, rig, {"Spine": owner == 0, "Leg.L": owner == 1, "Leg.R": owner == 2})
    body.modifiers.new("Collision", "COLLISION")
    body.collision.thickness_outer = BODY_THICKNESS
    # 0.5 x 0.9 m, 2 cm behind the back, its top row at the shoulders
    cape = mesh_object(f"{name}Cape", *sheet_arrays(CAPE_COLUMNS, CAPE_ROWS, 0.5, 0.9, 1.45, 0.2))
    cape.location.x = x
    skin(cape, rig, {"Spine": np.ones(len(cape.data.vertices))})
    cape.vertex_groups.new(name="Shoulders").add(list(range(CAPE_COLUMNS)), 1.0, "REPLACE")
    animate(rig)
    return body, rig, cape


def character_scene(frames: int = FRAMES, blender_twin: bool = True):
    """A fresh scene: our character at x = 0 wearing the add-on's cloth, and (blender_twin)
    Blender's at x = -1.4 wearing Blender's Cloth, both at their defaults but for the pins.
    Returns (ours: (body, rig, cape), Blender's or None)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, frames
    ours = character("Ours", 0.0)
    twin = character("Blender", -1.4) if blender_twin else None
    scene.frame_set(1)
    cape = ours[2]
    select_only(cape)
    props = cape.cloth_addon
    props.pin_group, props.frame_start, props.frame_end = "Shoulders", 1, frames
    if bpy.ops.cloth_addon.make_cloth() != {"FINISHED"}:
        raise SystemExit("make_cloth failed on the cape")
    if twin is not None:
        cloth = twin[2].modifiers.new("Cloth", "CLOTH")  # after the Armature, as Blender adds it
        cloth.settings.vertex_group_mass = "Shoulders"
        cloth.point_cache.frame_end = frames
    return ours, twin


def through_body(cape, body) -> tuple[int, int]:
    """(cape edges crossing the body's surface, cape vertices inside the body) as shown now."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    vertices, triangles, _, _ = colliders.world_mesh(body, depsgraph)
    cloth = world_positions(cape)
    edges = mesh_io.read_edges(cape.data) + len(vertices)
    crossings = edge_triangle_crossings(np.concatenate([vertices, cloth]), edges, triangles)
    return crossings, int(MeshCollider(vertices, triangles).closest(cloth)[2].sum())


def world_positions(obj) -> np.ndarray:
    """(n, 3) world positions of the evaluated object."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    try:
        return mesh_io.to_world(mesh_io.matrix_to_numpy(evaluated.matrix_world), mesh_io.read_positions(mesh))
    finally:
        evaluated.to_mesh_clear()


def shoulder_targets(cape, rig) -> np.ndarray:
    """(CAPE_COLUMNS, 3) world positions of the shoulder row carried by the Spine bone now: where
    the pins belong."""
    bone = rig.pose.bones["Spine"]
    deform = mesh_io.matrix_to_numpy(rig.matrix_world) @ mesh_io.matrix_to_numpy(bone.matrix) \
        @ np.linalg.inv(mesh_io.matrix_to_numpy(bone.bone.matrix_local)) \
        @ np.linalg.inv(mesh_io.matrix_to_numpy(rig.matrix_world))
    rest = mesh_io.to_world(mesh_io.matrix_to_numpy(cape.matrix_world),
                            mesh_io.read_positions(cape.data)[:CAPE_COLUMNS])
    return mesh_io.to_world(deform, rest)


def play_and_measure(ours, twin, frames: int = FRAMES) -> dict:
    """Play frames 1..frames; per frame, each cape's crossings of its body and the largest
    distance of our pins from where the Spine carries the shoulders. Returns
    {"ours": [(crossings, inside)...], "blender": [...], "pin_error": m}."""
    scene = bpy.context.scene
    measured = {"ours": [], "blender": [], "pin_error": 0.0}
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        body, rig, cape = ours
        measured["ours"].append(through_body(cape, body))
        error = np.abs(world_positions(cape)[:CAPE_COLUMNS] - shoulder_targets(cape, rig)).max()
        measured["pin_error"] = max(measured["pin_error"], float(error))
        if twin is not None:
            measured["blender"].append(through_body(twin[2], twin[0]))
    return measured


RENDER_FRAMES = (12, 24, 36, 50)
TILE = (640, 400)


def stage_for_render(ours, twin) -> None:
    """Camera, Workbench light and colours: both characters side by side, seen from behind."""
    from mathutils import Vector

    scene = bpy.context.scene
    data = bpy.data.cameras.new("Camera")
    camera = bpy.data.objects.new("Camera", data)
    scene.collection.objects.link(camera)
    # From behind, where the cape hangs: world +X is on the image's left, so ours (x = 0) is
    # left of Blender's twin (x = -1.4).
    camera.location = Vector((-0.7, 4.3, 1.35))
    camera.rotation_euler = (Vector((-0.7, 0.0, 0.85)) - camera.location).to_track_quat("-Z", "Y").to_euler()
    data.lens = 42.0
    scene.camera = camera
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x, scene.render.resolution_y = TILE
    scene.render.image_settings.file_format = "PNG"
    shading = scene.display.shading
    shading.light, shading.color_type = "STUDIO", "OBJECT"
    shading.show_shadows = True
    scene.world = bpy.data.worlds.new("World")
    scene.world.color = (0.62, 0.68, 0.75)
    for body, rig, cape in filter(None, (ours, twin)):
        body.color = (0.78, 0.7, 0.62, 1.0)
        cape.color = (0.75, 0.22, 0.3, 1.0)
        rig.hide_render = True
        for obj in (body, cape):
            select_only(obj)
            bpy.ops.object.shade_smooth()


def render_sheet(path, frames=RENDER_FRAMES) -> None:
    """Render `frames` into one labelled image at `path` (2 columns of tiles)."""
    import tempfile
    from pathlib import Path

    from PIL import Image, ImageDraw, ImageFont

    scene = bpy.context.scene
    columns = 2
    rows = (len(frames) + columns - 1) // columns
    width, height = TILE
    sheet = Image.new("RGB", (width * columns, height * rows), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=16)
    with tempfile.TemporaryDirectory() as folder:
        for k, frame in enumerate(frames):
            scene.frame_set(frame)
            scene.render.filepath = str(Path(folder) / f"{frame}.png")
            bpy.ops.render.render(write_still=True)
            corner = ((k % columns) * width, (k // columns) * height)
            sheet.paste(Image.open(scene.render.filepath).convert("RGB"), corner)
            label = f"frame {frame}: the add-on (left), Blender's Cloth (right)"
            text_at = (corner[0] + 8, corner[1] + 6)
            draw.rectangle(draw.textbbox(text_at, label, font=font), fill="white")
            draw.text(text_at, label, fill="black", font=font)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)


def demo(out_dir, render: bool = True) -> None:
    """Build the two characters, play them measuring the capes against the bodies, bake ours to
    shape keys (it then plays without the add-on), save out_dir/character.blend and render
    out_dir/character.png."""
    import time
    from pathlib import Path

    out_dir = Path(out_dir)
    started = time.perf_counter()
    ours, twin = character_scene(FRAMES)
    if render:
        # Before playing: smoothing the meshes afterwards would free Blender's Cloth cache.
        stage_for_render(ours, twin)
    measured = play_and_measure(ours, twin, FRAMES)
    seconds = time.perf_counter() - started
    for way in ("ours", "blender"):
        crossings = [c for c, _ in measured[way]]
        inside = [i for _, i in measured[way]]
        print(f"character, {way}: cape edges through the body, worst frame {max(crossings)}, frames with "
              f"any {sum(c > 0 for c in crossings)} of {FRAMES}; vertices inside, worst {max(inside)}")
    print(f"character: our pins' largest distance from the shoulders the Spine carries "
          f"{measured['pin_error']:.2e} m; played both in {seconds:.1f} s")
    cape = ours[2]
    select_only(cape)
    cape.cloth_addon.bake_target = "SHAPE_KEYS"
    if bpy.ops.cloth_addon.bake() != {"FINISHED"}:
        raise SystemExit("bake of the cape failed")
    out_dir.mkdir(exist_ok=True)
    blend = out_dir / "character.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"saved {blend}")
    if render:
        png = out_dir / "character.png"
        render_sheet(png)
        print(f"rendered frames {', '.join(map(str, RENDER_FRAMES))} to {png}")
