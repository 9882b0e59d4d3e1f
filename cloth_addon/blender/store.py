"""The one store of live simulations and their errors, keyed by the object's session_uid.

Cleared on file load and undo (handlers.py); a session whose object was deleted is dropped on
the next frame. Nothing here refers to bpy data, only to uids.
"""

from .session import ClothSession
from .settings import scene_inputs

_sessions: dict[int, ClothSession] = {}
# Last error per object, shown in the panel (the frame handler must never raise).
errors: dict[int, str] = {}


def get(obj, scene, depsgraph, rebuild: bool = False) -> ClothSession:
    """The object's session, built (again) when missing, stale or asked for."""
    uid = obj.session_uid
    existing = _sessions.get(uid)
    if (rebuild or existing is None or existing.vertex_count != len(obj.data.vertices)
            or existing.scene_inputs != scene_inputs(scene)):
        existing = _sessions[uid] = ClothSession(obj, scene, depsgraph)
        errors.pop(uid, None)
    return existing


def find(uid: int) -> ClothSession | None:
    """The session of the object with this session_uid, if one is live (never builds one)."""
    return _sessions.get(uid)


def live_uids() -> set[int]:
    return set(_sessions)


def fail(uid: int, message: str) -> None:
    """Drop the object's session and keep the message for the panel."""
    _sessions.pop(uid, None)
    errors[uid] = message


def discard(uid: int) -> None:
    _sessions.pop(uid, None)
    errors.pop(uid, None)


def forget_all_but(uids: set[int]) -> None:
    """Drop the simulations of objects that were deleted (their frames can be large)."""
    for uid in [uid for uid in _sessions if uid not in uids]:
        discard(uid)


def clear() -> None:
    _sessions.clear()
    errors.clear()
