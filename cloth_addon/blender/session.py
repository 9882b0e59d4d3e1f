"""Live simulations, outside bpy data: one ClothSession per cloth object, keyed by session_uid.

A session holds numpy arrays only (never a Blender reference), so undo and file reload cannot
leave it pointing at freed data; the handler looks the object up again every frame.
"""

import numpy as np

from .. import core
from . import colliders, mesh_io, tearing

_sessions: dict[int, "ClothSession"] = {}
# Last error per object, shown in the panel (the frame handler must never raise).
errors: dict[int, str] = {}
# Collision objects the last frame could not use, per cloth object, for the panel.
unsupported: dict[int, list[str]] = {}

SOLVER_NAMES = {"FAST_MASS_SPRING": "fast_mass_spring", "VERLET": "verlet"}
# weight × pin stiffness at or above this pins a vertex rigidly.
RIGID_PIN = 0.999


def scene_inputs(scene) -> tuple:
    """(frame length s, gravity m/s^2): what the simulation takes from the scene's settings.

    Our own properties drop the simulation when edited (update callbacks); the scene's frame
    rate and gravity have no such hook, so sessions compare these every frame instead.
    """
    gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    return scene.render.fps_base / scene.render.fps, gravity


def settings_from(props, scene) -> "core.Settings":
    """Core Settings from an object's cloth_addon properties and the scene (fps, gravity, wind)."""
    dt, gravity = scene_inputs(scene)
    return core.Settings(
        solver=SOLVER_NAMES[props.solver], dt=dt, substeps=props.substeps,
        iterations=props.iterations, gravity=gravity, density=props.density,
        stretch_stiffness=props.stretch_stiffness, shear_stiffness=props.shear_stiffness,
        bend_stiffness=props.bend_stiffness, damping=props.damping, air_drag=props.air_drag,
        wind=tuple(np.asarray(props.wind, dtype=np.float64) + colliders.scene_wind(scene)),
        tear_factor=props.tear_factor if props.use_tearing else None,
        self_collision=props.use_self_collision, collision_distance=props.collision_distance,
        self_collision_distance=props.self_distance or None,
        friction=props.friction)


class ClothSession:
    """A Simulation plus the frames it has computed (world space) since the start frame."""

    def __init__(self, obj, scene, depsgraph):
        props = obj.cloth_addon
        mesh = obj.data
        self.vertex_count = len(mesh.vertices)
        self.rest_local = mesh_io.read_positions(mesh)
        self.frame_start = props.frame_start
        self.frame_end = max(props.frame_end, props.frame_start)
        settings = settings_from(props, scene)
        self.scene_inputs = scene_inputs(scene)
        pull = mesh_io.read_group_weights(obj, props.pin_group) * props.pin_stiffness
        rigid = pull >= RIGID_PIN
        self.soft = np.flatnonzero((pull > 0.0) & ~rigid)
        self.soft_pull = pull[self.soft]
        matrix = world_matrix(obj, depsgraph)
        rest_world = mesh_io.to_world(matrix, self.rest_local)
        self.sim = core.Simulation(rest_world, mesh_io.read_faces(mesh), settings=settings,
                                   pinned=rigid, edges=mesh_io.read_edges(mesh))
        self.pinned = self.sim.model.pinned_indices
        # Only pinned rows (rigid, then soft) follow the object: per frame, transform just those.
        self.anchors = np.concatenate([self.pinned, self.soft])
        self.rest_anchors = self.rest_local[self.anchors]
        self.cache: dict[int, np.ndarray] = {self.frame_start: rest_world}
        self.last_frame = self.frame_start
        self.last_targets = rest_world[self.anchors]
        # float32 staging for the ClothSim key, reused every frame.
        self.key_buffer = np.empty((self.vertex_count, 3), dtype=np.float32)
        self.uid = obj.session_uid
        # What the cached frames were computed from; see update_object.
        self.inputs = None

    def targets(self, matrix: np.ndarray) -> np.ndarray:
        """(n, 3) world positions of the rest shape carried by the object's current transform."""
        return mesh_io.to_world(matrix, self.rest_local)

    def reset(self, matrix: np.ndarray | None = None) -> None:
        """Back to rest at the start frame; with a matrix, the rest shape where the object is now."""
        self.sim.reset()
        colliders.forget(self.uid)  # else a collider would seem to jump from the last frame to the first
        rest = self.cache[self.frame_start] if matrix is None else self.targets(matrix)
        if matrix is not None:
            self.sim.state = core.ClothState(rest.copy(), rest.copy(), None)
        self.cache = {self.frame_start: rest}
        self.last_frame = self.frame_start
        self.last_targets = rest[self.anchors]

    def positions_at(self, frame: int, obj, scene, depsgraph) -> np.ndarray:
        """World positions at `frame`: cached, or simulated on from the last computed frame.

        Frames before the start show the rest shape; frames after the end hold the last frame.
        """
        frame = min(max(frame, self.frame_start), self.frame_end)
        if frame in self.cache:
            return self.cache[frame]
        targets_now = mesh_io.to_world(world_matrix(obj, depsgraph), self.rest_anchors)
        found, missing = colliders.scene_colliders(scene, depsgraph, self.uid)
        self.sim.colliders = found
        unsupported[self.uid] = missing
        wind = tuple(np.asarray(obj.cloth_addon.wind, dtype=np.float64) + colliders.scene_wind(scene))
        if wind != self.sim.settings.wind:
            self.sim.settings = self.sim.settings.replace(wind=wind)
        steps, rigid = frame - self.last_frame, len(self.pinned)
        for k in range(1, steps + 1):
            # A jump forward has no transforms for the frames in between: pins move linearly.
            targets = self.last_targets + (targets_now - self.last_targets) * (k / steps)
            self.sim.move_pins(targets[:rigid])
            self.sim.step(1)
            if len(self.soft):
                self._pull_soft_pins(targets[rigid:])
            self.cache[self.last_frame + k] = np.array(self.sim.positions)
        self.last_frame, self.last_targets = frame, targets_now
        return self.cache[frame]

    def _pull_soft_pins(self, targets: np.ndarray) -> None:
        """Move softly pinned vertices part of the way to their pins (targets: (q, 3), in
        self.soft order), keeping their velocity."""
        state = self.sim.state
        shift = (targets - state.positions[self.soft]) * self.soft_pull[:, None]
        state.positions[self.soft] += shift
        state.previous[self.soft] += shift
        self.sim.state = state


def world_matrix(obj, depsgraph) -> np.ndarray:
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    return mesh_io.matrix_to_numpy(source.matrix_world)


def get(obj, scene, depsgraph, rebuild: bool = False) -> ClothSession:
    """The object's session, built (again) when missing, stale or asked for."""
    uid = obj.session_uid
    existing = _sessions.get(uid)
    if (rebuild or existing is None or existing.vertex_count != len(obj.data.vertices)
            or existing.scene_inputs != scene_inputs(scene)):
        colliders.forget(uid)
        existing = _sessions[uid] = ClothSession(obj, scene, depsgraph)
        errors.pop(uid, None)
    return existing


def discard(uid: int) -> None:
    _sessions.pop(uid, None)
    errors.pop(uid, None)
    colliders.forget(uid)


def forget_all_but(uids: set[int]) -> None:
    """Drop the simulations of objects that were deleted (their frames can be large)."""
    for uid in [uid for uid in _sessions if uid not in uids]:
        discard(uid)


def clear() -> None:
    _sessions.clear()
    errors.clear()
    unsupported.clear()
    colliders.clear()


def update_object(obj, scene, depsgraph) -> None:
    """Show the simulation at the scene's current frame in the object's ClothSim key."""
    block = mesh_io.sim_key(obj)
    if block is None or obj.cloth_addon.is_baked:
        return
    live = get(obj, scene, depsgraph)
    frame = scene.frame_current
    matrix = world_matrix(obj, depsgraph)
    if frame <= live.frame_start:
        # Back at the start, keep the computed frames (a replay is free) unless the object or the
        # colliders and wind fields moved since; setting edits drop the whole session anyway.
        inputs = (matrix.tobytes(), colliders.scene_signature(scene, depsgraph, live.uid))
        if inputs != live.inputs:
            live.reset(matrix)
            live.inputs = inputs
            # Colliders as they are at the start, so the first step sees how far they move.
            colliders.scene_colliders(scene, depsgraph, live.uid)
    world = live.positions_at(frame, obj, scene, depsgraph)
    mesh_io.write_key(block, mesh_io.to_local(matrix, world, out=live.key_buffer))
    if live.sim.settings.tear_factor is not None or obj.modifiers.get(tearing.MODIFIER) is not None:
        tearing.show(obj, live, frame)
    if block.mute:  # muted when the add-on was disabled; playing again shows the cloth again
        block.mute = False
