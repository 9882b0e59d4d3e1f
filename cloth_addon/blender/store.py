"""The one store of live simulations and their errors, keyed by the object's session_uid.

Objects simulated together (groups.py) share one session, stored under each member's uid;
dropping one member's session drops the group's. Cleared on file load and undo (handlers.py);
a session whose object was deleted is dropped on the next frame. Nothing here refers to bpy
data, only to uids.
"""

from . import groups, stage
from .session import ClothSession
from .settings import scene_inputs

_sessions: dict[int, ClothSession] = {}
# Last error per object, shown in the panel (the frame handler must never raise).
errors: dict[int, str] = {}


def _current(existing: ClothSession | None, objects, scene) -> bool:
    """Whether a session still simulates exactly these objects with these meshes, driven the same
    way (by deformers before the cloth stage or by the transform alone), and scene inputs."""
    return (existing is not None and existing.uids == [obj.session_uid for obj in objects]
            and all(member.vertex_count == len(obj.data.vertices)
                    and member.deformed == stage.is_deformed(obj)
                    for member, obj in zip(existing.members, objects, strict=True))
            and existing.scene_inputs == scene_inputs(scene))


def get(obj, scene, depsgraph, rebuild: bool = False, objects=None) -> ClothSession:
    """The session of the object's group, built (again) when missing, stale or asked for.

    objects: the group (groups.members(obj, scene)) when the caller has it already.
    """
    objects = groups.members(obj, scene) if objects is None else objects
    existing = _sessions.get(obj.session_uid)
    if rebuild or not _current(existing, objects, scene):
        for other in objects:
            discard(other.session_uid)
        existing = ClothSession(objects, scene, depsgraph)
        for uid in existing.uids:
            _sessions[uid] = existing
    return existing


def find(uid: int) -> ClothSession | None:
    """The session of the object with this session_uid, if one is live (never builds one)."""
    return _sessions.get(uid)


def live_uids() -> set[int]:
    return set(_sessions)


def _drop(uid: int) -> None:
    """Drop the session of `uid` for every member of its group (a group is stepped as one)."""
    session = _sessions.pop(uid, None)
    if session is not None:
        for other in session.uids:
            if _sessions.get(other) is session:
                del _sessions[other]


def fail(uid: int, message: str) -> None:
    """Drop the object's session (its group's) and keep the message for the panel."""
    _drop(uid)
    errors[uid] = message


def discard(uid: int) -> None:
    _drop(uid)
    errors.pop(uid, None)


def forget_all_but(uids: set[int]) -> None:
    """Drop the simulations of objects that were deleted (their frames can be large)."""
    for uid in [uid for uid in _sessions if uid not in uids]:
        discard(uid)


def clear() -> None:
    _sessions.clear()
    errors.clear()
