"""The frame update: show every live cloth object's simulation at the scene's current frame.

Called by the frame_change_post handler (handlers.py) and by the operators that refresh an
object. Per object: look its session up (store.py), compute or replay the frame (session.py),
write it into the cloth stage's result attribute (stage.py) and show tearing (tearing.py).
"""

import traceback

from . import colliders, groups, mesh_io, stage, store, tearing, wind
from .session import world_matrix


def update_scene(scene, depsgraph) -> None:
    """Step or serve each live cloth object for the new frame; errors go to the panel, not up."""
    store.forget_all_but({obj.session_uid for obj in scene.objects})
    for obj in groups.live_cloth_objects(scene):
        try:
            update_object(obj, scene, depsgraph)
        except Exception as error:  # a handler that raises breaks playback for everything
            store.fail(obj.session_uid, f"{type(error).__name__}: {error}")
            traceback.print_exc()


def update_object(obj, scene, depsgraph) -> None:
    """Show the simulation at the scene's current frame at the object's cloth stage.

    Objects simulated together share a session: the first of them to be shown steps the group,
    the others find the frame computed.
    """
    if stage.modifier(obj) is None or obj.cloth_addon.is_baked:
        return
    objects = groups.members(obj, scene)
    live = store.get(obj, scene, depsgraph, objects=objects)
    frame = scene.frame_current
    if frame <= live.frame_start:
        # Back at the start, keep the computed frames (a replay is free) unless the objects or the
        # colliders and wind fields moved since, or frames were jumped over while deformers
        # drive the cloth (session.jumped); setting edits drop the whole session anyway.
        poses = live.poses(objects, depsgraph)
        inputs = (b"".join(pose.matrix.tobytes() + (b"" if pose.local is None else pose.local.tobytes())
                           for pose in poses),
                  scene_signature(scene, depsgraph, set(live.uids)))
        if inputs != live.inputs or live.jumped:
            live.reset(poses)
            live.inputs = inputs
            # Colliders as they are at the start, so the first step sees how far they move.
            live.read_colliders(scene, depsgraph)
    world = live.positions_at(frame, objects, scene, depsgraph)
    member = live.member(obj.session_uid)
    matrix = world_matrix(obj, depsgraph)
    stage.write_result(obj, mesh_io.to_local(matrix, world[member.part], out=member.key_buffer))
    if live.sim.settings.tear_factor is not None or obj.modifiers.get(tearing.MODIFIER) is not None:
        tearing.show(obj, live, frame)


def scene_signature(scene, depsgraph, exclude_uids: set[int]) -> tuple:
    """What colliders and wind fields look like now (transforms and settings), to detect changes.

    A collider that deforms without moving (an armature, say) is not seen; Reset rebuilds then.
    """
    parts = []
    for obj in scene.objects:
        if obj.session_uid in exclude_uids:
            continue
        if colliders.is_collider(obj) or wind.is_wind(obj):
            matrix = obj.evaluated_get(depsgraph).matrix_world
            settings = (obj.collision.thickness_outer, obj.collision.cloth_friction) \
                if colliders.is_collider(obj) else wind.field_settings(obj)
            parts.append((obj.name, obj.visible_get(), tuple(matrix.col[3]) + tuple(matrix.col[2]),
                          tuple(matrix.col[0]) + tuple(matrix.col[1]), settings))
    return tuple(parts)
