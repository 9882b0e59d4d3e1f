"""`python build.py demo`: the add-on's main job, headless, in the real Blender (bpy).

Builds a scene (a cloth draped over a ball on a floor, a pinned curtain in a Wind field, the
paper's collision experiment: a pinned curtain hit by a ball moving 2 cm per frame, with
self-collision, a sleeve sewn from two flat panels around a bar, and a pillow inflated by
pressure), makes them cloth with the add-on's operators, bakes them (shape keys and PC2),
saves dist/demo.blend and renders a baked frame to dist/demo.png with Cycles on the CPU (the README's
picture, docs/demo.png, is a copy of it). Then the character (tools/character.py): a rigged body
turning and walking in a cape, beside Blender's Cloth on its twin, measured, baked, saved to
dist/character.blend and rendered to dist/character.png (docs/character.png is a copy).
"""

import argparse
import math
import sys
import time
from pathlib import Path

import bpy
from mathutils import Vector

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cloth_addon  # noqa: E402
from cloth_addon.blender.selection import select_only  # noqa: E402
from tools import character  # noqa: E402
from tools.bench_blender import move_linearly  # noqa: E402
from tools.scenes import capsule, cloth_cube, sewn_panels  # noqa: E402

FRAMES = 60


def material(name, colour, roughness=0.6):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    shader = mat.node_tree.nodes["Principled BSDF"]
    shader.inputs["Base Color"].default_value = (*colour, 1.0)
    shader.inputs["Roughness"].default_value = roughness
    return mat


def collider(obj, colour):
    obj.modifiers.new("Collision", "COLLISION")
    obj.data.materials.append(material(obj.name, colour))
    return obj


def pin_top_row(curtain):
    """A "Pins" vertex group holding the grid's top row (local +Y before the upright rotation)."""
    mesh = curtain.data
    top = max(v.co.y for v in mesh.vertices)
    pins = curtain.vertex_groups.new(name="Pins")
    pins.add([v.index for v in mesh.vertices if v.co.y > top - 1e-6], 1.0, "REPLACE")


def cloth(obj, colour, preset, **settings):
    obj.data.materials.append(material(obj.name, colour, roughness=0.9))
    bpy.ops.object.shade_smooth()
    select_only(obj)
    bpy.ops.cloth_addon.apply_preset(preset=preset)
    # The five cloths never meet: each is simulated alone, with its own settings (cloth objects
    # that collide with each other are stepped together with the first one's substeps, wind,
    # pressure and the rest).
    obj.cloth_addon.use_cloth_collision = False
    for field, value in settings.items():
        setattr(obj.cloth_addon, field, value)
    result = bpy.ops.cloth_addon.make_cloth()
    if result != {"FINISHED"}:
        raise SystemExit(f"make_cloth failed on {obj.name}")
    # Smooth the simulated cloth for the render, below the cloth stage as an artist would: a
    # coarse mesh's facets otherwise show as a jagged line where a hard sun shadow falls across it
    # (Cycles' shadow terminator)
    smooth = obj.modifiers.new("Subdivision", "SUBSURF")
    smooth.levels, smooth.render_levels = 1, 2
    obj.cloth_addon.frame_start, obj.cloth_addon.frame_end = 1, FRAMES
    return obj


def build_scene(solver: str):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    bpy.ops.mesh.primitive_plane_add(size=8.0)
    collider(bpy.context.active_object, (0.55, 0.55, 0.5)).name = "Floor"
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, segments=32, ring_count=16, location=(-1.0, 0.0, 0.5))
    ball = collider(bpy.context.active_object, (0.8, 0.25, 0.2))
    ball.name = "Ball"
    bpy.ops.object.shade_smooth()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=32, y_subdivisions=32, size=1.6,
                                    location=(-1.0, 0.0, 1.25))
    drape = bpy.context.active_object
    drape.name = "Drape"
    # Self-collision where the cloth folds onto itself: the drape's corners fold over on the ball,
    # and without it their layers pass through each other (a jagged seam where they cross).
    cloth(drape, (0.2, 0.4, 0.8), "COTTON", solver=solver, bake_target="SHAPE_KEYS", air_drag=0.3,
          use_self_collision=True)

    bpy.ops.mesh.primitive_grid_add(x_subdivisions=24, y_subdivisions=24, size=1.6,
                                    location=(1.1, 0.0, 1.25), rotation=(math.pi / 2, 0.0, 0.0))
    curtain = bpy.context.active_object
    curtain.name = "Curtain"
    pin_top_row(curtain)
    # the silk's lower part folds up over its upper part in the breeze: self-collision keeps them apart
    cloth(curtain, (0.85, 0.75, 0.3), "SILK", solver=solver, pin_group="Pins", bake_target="PC2",
          use_self_collision=True)
    # A Wind field's strength acts along its Z axis; turned to blow along +Y, through the curtain.
    bpy.ops.object.effector_add(type="WIND", location=(1.1, -1.5, 1.0), rotation=(-math.pi / 2, 0.0, 0.0))
    field = bpy.context.active_object.field
    field.strength = 2.5  # m/s, a light breeze
    # only as far as the curtain (a point field, by distance from it): the drape's air drag would
    # take it too, and blow it off its ball
    field.shape, field.use_max_distance, field.distance_max = "POINT", True, 2.0

    hit = curtain_and_ball(solver)
    garment, pillow = garment_and_pillow(solver)

    bpy.ops.object.camera_add(location=(1.2, -10.0, 2.8), rotation=(math.radians(81), 0.0, 0.0))
    scene.camera = bpy.context.active_object
    bpy.ops.object.light_add(type="SUN", rotation=(math.radians(40), math.radians(15), math.radians(30)))
    bpy.context.active_object.data.energy = 3.0
    world = bpy.data.worlds.new("World")
    world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.6, 0.65, 0.7, 1.0)
    scene.world = world
    return drape, curtain, hit, garment, pillow


def mesh_object(name, vertices, faces, edges=()):
    """A new mesh object from numpy arrays, selected and active."""
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(vertices.tolist(), [list(map(int, e)) for e in edges],
                     [list(map(int, f)) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    select_only(obj)
    return obj


def garment_and_pillow(solver: str):
    """A sleeve: two flat 20 x 20 panels 0.6 m apart, their side columns joined by loose edges,
    sewn around a bar (a capsule with Collision) behind the drape; and a cube of cloth on the
    floor inflated to a pillow at 1,000 Pa, in front."""
    vertices, faces, edges = sewn_panels(20, width=1.0, length=1.0, gap=0.6, height=1.9)
    vertices = vertices[:, [1, 0, 2]] + (-1.0, 2.5, 0.0)  # the tube along x, side-on to the camera
    body, triangles = capsule(radius=0.2, length=1.4, center=(-1.0, 2.5, 1.9), axis="x")
    collider(mesh_object("Bar", body, triangles), (0.3, 0.3, 0.35))
    bpy.ops.object.shade_smooth()
    garment = cloth(mesh_object("Sleeve", vertices, faces[:, ::-1], edges), (0.25, 0.6, 0.45), "COTTON",
                    solver=solver, use_sewing=True, bake_target="SHAPE_KEYS")
    vertices, faces = cloth_cube(12, size=0.5, center=(2.2, -1.5, 0.26))
    pillow = cloth(mesh_object("Pillow", vertices, faces), (0.9, 0.85, 0.75), "COTTON", solver=solver,
                   use_pressure=True, pressure=1000.0, bake_target="SHAPE_KEYS")
    return garment, pillow


def curtain_and_ball(solver: str):
    """The paper's collision test: a pinned curtain (self-collision on) and a ball that moves
    2 cm per frame along +Y into it, keyframed linearly; the ball is a Collision mesh."""
    x, speed, radius = 3.3, 0.02, 0.3
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=28, y_subdivisions=28, size=1.6,
                                    location=(x, 0.0, 1.25), rotation=(math.pi / 2, 0.0, 0.0))
    curtain = bpy.context.active_object
    curtain.name = "CurtainHit"
    pin_top_row(curtain)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, segments=32, ring_count=16,
                                         location=(x, -radius - 0.1, 1.0))
    ball = collider(bpy.context.active_object, (0.25, 0.55, 0.3))
    ball.name = "MovingBall"
    bpy.ops.object.shade_smooth()
    # a constant 2 cm per frame
    move_linearly(ball, 1, FRAMES, ball.location + Vector((0.0, speed * (FRAMES - 1), 0.0)))
    bpy.context.scene.frame_set(1)
    # No air drag: the scene's wind field (for the other curtain) does not touch this one.
    cloth(curtain, (0.75, 0.3, 0.55), "COTTON", solver=solver, pin_group="Pins", bake_target="SHAPE_KEYS",
          use_self_collision=True, self_distance=0.03, air_drag=0.0)
    return curtain


def render(path: Path, frame: int, samples: int):
    scene = bpy.context.scene
    scene.frame_set(frame)
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = 960, 540
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", default="FAST_MASS_SPRING", choices=["FAST_MASS_SPRING", "VERLET"])
    parser.add_argument("--samples", type=int, default=24, help="Cycles samples for the preview")
    parser.add_argument("--no-render", action="store_true", help="skip the PNG preview")
    parser.add_argument("--character-only", action="store_true", help="only the rigged character")
    args = parser.parse_args(argv)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    cloth_addon.register()
    if not args.character_only:
        main_demo(args)
    character.demo(ROOT / "dist", render=not args.no_render)
    return 0


def main_demo(args) -> None:
    """The five cloths of the main scene, baked, saved and rendered."""
    drape, curtain, hit, garment, pillow = build_scene(args.solver)
    blend = ROOT / "dist" / "demo.blend"
    blend.parent.mkdir(exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))  # PC2 caches go next to the saved file

    select_only(drape)
    curtain.select_set(True)
    for obj in (hit, garment, pillow):
        obj.select_set(True)
    started = time.perf_counter()
    if bpy.ops.cloth_addon.bake() != {"FINISHED"}:
        raise SystemExit("bake failed")
    seconds = time.perf_counter() - started
    vertices = sum(len(obj.data.vertices) for obj in (drape, curtain, hit, garment, pillow))
    print(f"baked {FRAMES} frames of {vertices} cloth vertices (drape, the curtain hit by the ball, the "
          f"sewn sleeve and the pillow to shape keys, the curtain in the wind to PC2) in {seconds:.2f} s = "
          f"{1000 * seconds / FRAMES:.1f} "
          "ms/frame")
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    print(f"saved {blend.relative_to(ROOT)}")
    if not args.no_render:
        png = ROOT / "dist" / "demo.png"
        started = time.perf_counter()
        render(png, FRAMES, args.samples)
        print(f"rendered frame {FRAMES} to {png.relative_to(ROOT)} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
