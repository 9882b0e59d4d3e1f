"""App handlers: live playback on frame change, and on file load forgetting simulations and
bringing cloth objects of older releases up to date (legacy.py)."""

import bpy
from bpy.app.handlers import persistent

from . import legacy, playback, store


@persistent
def cloth_addon_frame_change(scene, depsgraph=None):
    """Step or serve each live cloth object for the new frame."""
    playback.update_scene(scene, depsgraph)


@persistent
def cloth_addon_load_post(*_args):
    """A loaded file has new objects (and maybe reused session_uids): start from scratch."""
    store.clear()
    try:
        upgraded = legacy.upgrade()
    except Exception as error:  # a handler that raises stops the others; the file must still open
        print(f"Cloth add-on: could not upgrade the file's cloth objects: {error}")
    else:
        if upgraded:
            print(f"Cloth add-on: cloth objects saved by release 0.1.0 upgraded: {', '.join(upgraded)}")


@persistent
def cloth_addon_undo_post(*_args):
    """Undo/redo can restore settings without calling their update callbacks: start over."""
    store.clear()


HANDLERS = ((bpy.app.handlers.frame_change_post, cloth_addon_frame_change),
            (bpy.app.handlers.load_post, cloth_addon_load_post),
            (bpy.app.handlers.undo_post, cloth_addon_undo_post),
            (bpy.app.handlers.redo_post, cloth_addon_undo_post))


def _remove(handler_list, function):
    # Match by name, not identity: a reloaded module brings new function objects.
    for existing in [h for h in handler_list if getattr(h, "__name__", None) == function.__name__]:
        handler_list.remove(existing)


def register():
    for handler_list, function in HANDLERS:
        _remove(handler_list, function)
        handler_list.append(function)


def unregister():
    for handler_list, function in HANDLERS:
        _remove(handler_list, function)
