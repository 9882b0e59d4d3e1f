"""The live simulation of a group of cloth objects, outside bpy data: a Simulation plus the
frames it computed.

A group (groups.py) is usually one object; cloth objects that collide with each other are one
group and one core Simulation over their combined meshes (core.Simulation.from_parts), each
object a part with its own material and pins. A session holds numpy arrays only (never a Blender
reference), so undo and file reload cannot leave it pointing at freed data; the frame update
looks the objects up again every frame. The sessions themselves are kept, by each member's
session_uid, in `store`.
"""

from dataclasses import dataclass

import numpy as np

from .. import core
from . import colliders, garment, mesh_io, wind
from .settings import scene_inputs, settings_from

# weight × pin stiffness at or above this pins a vertex rigidly.
RIGID_PIN = 0.999


@dataclass
class Member:
    """One object of a session: where its particles are in the simulation, and its own buffers."""

    uid: int
    name: str
    rest_local: np.ndarray  # (n, 3) the mesh's own coordinates
    part: slice  # its particles in sim.positions
    anchor_rows: np.ndarray  # its rows in ClothSession.anchors
    rest_anchors: np.ndarray  # local rest positions of those rows
    key_buffer: np.ndarray  # float32 staging for the ClothSim key, reused every frame
    # Tearing shown in the mesh (tearing.py): per mesh edge its spring or -1; None until shown.
    tear_edge_springs: np.ndarray | None = None

    @property
    def vertex_count(self) -> int:
        return len(self.rest_local)


def _pin_pull(obj) -> np.ndarray:
    props = obj.cloth_addon
    return mesh_io.read_group_weights(obj, props.pin_group) * props.pin_stiffness


class ClothSession:
    """A Simulation of one group of cloth objects plus the frames it has computed (world space,
    all members' particles) since the start frame.

    objects: the group, leader first (groups.members); the leader's settings step the group.
    """

    def __init__(self, objects, scene, depsgraph):
        leader = objects[0].cloth_addon
        self.frame_start = leader.frame_start
        self.frame_end = max(leader.frame_end, leader.frame_start)
        self.scene_inputs = scene_inputs(scene)
        settings = settings_from(leader, scene)
        # A name, not the Collection (no Blender references here); the group's first object's
        # setting, like the others that step the group; editing it rebuilds the session.
        self.collision_collection = leader.collision_collection.name if leader.collision_collection else ""
        if len(objects) > 1:
            # Cloth-to-cloth contact is the core's self-contact over the combined meshes.
            settings = settings.replace(self_collision=True)
        rests = [mesh_io.read_positions(obj.data) for obj in objects]
        pulls = [_pin_pull(obj) for obj in objects]
        parts = [core.ClothPart(mesh_io.to_world(world_matrix(obj, depsgraph), rest),
                                mesh_io.read_faces(obj.data), settings=settings_from(obj.cloth_addon, scene),
                                pinned=pull >= RIGID_PIN, edges=mesh_io.read_edges(obj.data),
                                **garment.simulation_inputs(obj, world_matrix(obj, depsgraph)))
                 for obj, rest, pull in zip(objects, rests, pulls, strict=True)]
        self.sim = core.Simulation.from_parts(parts, settings=settings)
        starts = [part.start for part in self.sim.parts]
        pull = np.concatenate(pulls)
        self.pinned = self.sim.model.pinned_indices
        self.soft = np.flatnonzero((pull > 0.0) & (pull < RIGID_PIN))
        self.soft_pull = pull[self.soft]
        # Only pinned rows (rigid, then soft) follow the objects: per frame, transform just those.
        self.anchors = np.concatenate([self.pinned, self.soft])
        owner = np.searchsorted(starts, self.anchors, side="right") - 1
        self.members = []
        for k, obj in enumerate(objects):
            rows = np.flatnonzero(owner == k)
            self.members.append(Member(obj.session_uid, obj.name, rests[k], self.sim.parts[k], rows,
                                       rests[k][self.anchors[rows] - starts[k]],
                                       np.empty((len(rests[k]), 3), dtype=np.float32)))
        rest_world = np.concatenate([part.vertices for part in parts])
        self.cache: dict[int, np.ndarray] = {self.frame_start: rest_world}
        self.last_frame = self.frame_start
        self.last_targets = rest_world[self.anchors]
        # What the cached frames were computed from (see playback.update_object).
        self.inputs = None
        # The group's colliders by collider session_uid, moved every frame (colliders.py).
        self.kept_colliders: dict[int, core.MeshCollider | core.SphereCollider] = {}
        # Names of Collision objects the last frame could not use, for the panel.
        self.unsupported: list[str] = []
        # Per spring the frame it tore at (tearing.py); None until tearing first shows.
        self.tear_frame: np.ndarray | None = None

    @property
    def uids(self) -> list[int]:
        return [member.uid for member in self.members]

    def member(self, uid: int) -> Member:
        return next(member for member in self.members if member.uid == uid)

    def targets(self, matrices) -> np.ndarray:
        """(n, 3) world positions of the rest shapes carried by the members' current transforms."""
        return np.concatenate([mesh_io.to_world(matrix, member.rest_local)
                               for matrix, member in zip(matrices, self.members, strict=True)])

    def anchor_targets(self, matrices) -> np.ndarray:
        """(len(anchors), 3) world positions of the pinned rows carried by the members' transforms."""
        targets = np.empty((len(self.anchors), 3))
        for matrix, member in zip(matrices, self.members, strict=True):
            targets[member.anchor_rows] = mesh_io.to_world(matrix, member.rest_anchors)
        return targets

    def reset(self, matrices=None) -> None:
        """Back to rest at the start frame; with the members' matrices, the rest shapes where the
        objects are now."""
        self.kept_colliders.clear()  # else a collider would seem to jump from the last frame to the first
        rest = self.cache[self.frame_start] if matrices is None else self.targets(matrices)
        self.sim.reset(rest if matrices is not None else None)
        self.cache = {self.frame_start: rest}
        self.last_frame = self.frame_start
        self.last_targets = rest[self.anchors]

    def read_colliders(self, scene, depsgraph) -> None:
        """The scene's Collision objects as they are now become the simulation's colliders."""
        self.sim.colliders, self.unsupported = colliders.scene_colliders(
            scene, depsgraph, set(self.uids), self.kept_colliders, self.collision_collection)

    def positions_at(self, frame: int, objects, scene, depsgraph) -> np.ndarray:
        """World positions of all members at `frame`: cached, or simulated on from the last
        computed frame. objects: the members, in the session's order.

        Frames before the start show the rest shape; frames after the end hold the last frame.
        """
        frame = min(max(frame, self.frame_start), self.frame_end)
        if frame in self.cache:
            return self.cache[frame]
        targets_now = self.anchor_targets([world_matrix(obj, depsgraph) for obj in objects])
        self.read_colliders(scene, depsgraph)
        self.sim.wind_fields = wind.scene_wind_fields(scene, depsgraph)
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
