"""App handlers: live playback on frame change, and forgetting simulations on file load."""

import traceback

import bpy
from bpy.app.handlers import persistent

from . import session


def cloth_objects(scene):
    # In Edit Mode the mesh lives in an edit copy that would overwrite what we write on exit.
    return [obj for obj in scene.objects if obj.type == "MESH" and obj.cloth_addon.enabled
            and not obj.cloth_addon.is_baked and obj.mode != "EDIT"]


@persistent
def cloth_addon_frame_change(scene, depsgraph=None):
    """Step or serve each live cloth object for the new frame; errors go to the panel, not up."""
    session.forget_all_but({obj.session_uid for obj in scene.objects})
    for obj in cloth_objects(scene):
        try:
            session.update_object(obj, scene, depsgraph)
        except Exception as error:  # a handler that raises breaks playback for everything
            session.discard(obj.session_uid)
            session.errors[obj.session_uid] = f"{type(error).__name__}: {error}"
            traceback.print_exc()


@persistent
def cloth_addon_load_post(*_args):
    """A loaded file has new objects (and maybe reused session_uids): start from scratch."""
    session.clear()


@persistent
def cloth_addon_undo_post(*_args):
    """Undo/redo can restore settings without calling their update callbacks: start over."""
    session.clear()


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
