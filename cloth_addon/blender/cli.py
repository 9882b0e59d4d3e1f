"""The headless bake command for render farms (Blender 4.2+ `--command`):

    blender -b shot.blend -c cloth_addon bake [--objects NAME ...] [--frames START END]
                                              [--target SHAPE_KEYS|PC2] [--rebake] [--save]

bakes the cloth objects (default: every cloth object of the file's scene) exactly as the Bake
operator does, prints one progress line per frame, and with --save writes the .blend file back.
Bad input (unknown object, an object that is not cloth, no cloth at all, a bad frame range, an
unsaved file for PC2 or --save, an existing bake without --rebake) prints why on stderr and
returns 1, which Blender makes its exit code.
"""

import argparse
import sys

import bpy

from . import bake

COMMAND = "cloth_addon"
TARGETS = ("SHAPE_KEYS", "PC2")

_handle = None


class CommandError(Exception):
    """Bad input for the command; the message is for the user."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would exit with 2; the farm expects our 1 and a message
        raise CommandError(f"{message}\n{self.format_usage().strip()}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=f"blender -b FILE.blend -c {COMMAND}", add_help=False)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    command = commands.add_parser("bake", help="bake cloth to shape keys or PC2", add_help=False)
    command.add_argument("--objects", nargs="+", metavar="NAME", help="cloth objects (default: all)")
    command.add_argument("--frames", nargs=2, type=int, metavar=("START", "END"),
                         help="frame range (default: each object's own)")
    command.add_argument("--target", type=str.upper, choices=TARGETS,
                         help="bake target (default: each object's own)")
    command.add_argument("--rebake", action="store_true", help="free existing bakes of these objects first")
    command.add_argument("--save", action="store_true", help="save the .blend file after baking")
    return parser


def _objects(scene, names):
    if names is None:
        objects = [obj for obj in scene.objects if obj.type == "MESH" and obj.cloth_addon.enabled]
        if not objects:
            raise CommandError(f"scene {scene.name!r} has no cloth objects (use Make Cloth first)")
        return objects
    objects = []
    for name in names:
        obj = scene.objects.get(name)
        if obj is None:
            raise CommandError(f"no object named {name!r} in scene {scene.name!r}")
        if obj.type != "MESH" or not obj.cloth_addon.enabled:
            raise CommandError(f"{name!r} is not cloth (use Make Cloth on it first)")
        objects.append(obj)
    return objects


def _prepare(args):
    """The objects to bake, with the command's frame range and target applied."""
    scene = bpy.context.scene
    objects = _objects(scene, args.objects)
    if args.frames is not None and args.frames[1] < args.frames[0]:
        raise CommandError(f"--frames END ({args.frames[1]}) is before START ({args.frames[0]})")
    if args.save and not bpy.data.filepath:
        raise CommandError("--save needs a saved .blend file (open one: blender -b FILE.blend ...)")
    for obj in objects:
        if obj.cloth_addon.is_baked and not args.rebake:
            raise CommandError(f"{obj.name!r} is already baked; pass --rebake to replace the bake")
    for obj in objects:
        props = obj.cloth_addon
        if args.rebake:
            bake.free(obj)
        if args.frames is not None:
            props.frame_start, props.frame_end = args.frames
        if args.target is not None:
            props.bake_target = args.target
    return scene, objects


def execute(argv: list[str]) -> int:
    """Run the command with Blender's arguments after `-c cloth_addon`; 0 on success, 1 on failure."""
    try:
        args = _parser().parse_args(list(argv))
        if args.command != "bake":
            raise CommandError(f"expected a command: bake\n{_parser().format_usage().strip()}")
        scene, objects = _prepare(args)
        baker = bake.Baker(bpy.context, objects)
    except (CommandError, bake.BakeError) as error:
        print(f"{COMMAND}: error: {error}", file=sys.stderr, flush=True)
        return 1
    names = ", ".join(baker.names)
    print(f"{COMMAND}: baking {names}, frames {baker.frames[0]}-{baker.frames[-1]}", flush=True)
    try:
        more = True
        while more:
            frame = baker.frames[baker.index]
            more = baker.step()
            print(f"{COMMAND}: frame {frame} ({baker.index}/{len(baker.frames)})", flush=True)
    except Exception as error:  # the simulation's own message (diverged, open mesh for pressure...)
        baker.cancel()
        print(f"{COMMAND}: error: bake failed, nothing was kept: {error}", file=sys.stderr, flush=True)
        return 1
    baker.finish()
    for name, record in baker.records.items():
        where = record["file"] if record["target"] == "PC2" else f"{len(record['keys'])} shape keys"
        print(f"{COMMAND}: baked {name} to {where}", flush=True)
    if args.save:
        bpy.ops.wm.save_mainfile()
        print(f"{COMMAND}: saved {bpy.data.filepath}", flush=True)
    return 0


def register():
    global _handle
    if hasattr(bpy.utils, "register_cli_command"):  # Blender 4.2+
        _handle = bpy.utils.register_cli_command(COMMAND, execute)


def unregister():
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
