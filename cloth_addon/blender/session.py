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
from . import colliders, garment, mesh_io, stage, wind
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
    anchor_vertices: np.ndarray  # the mesh vertices of those rows
    rest_anchors: np.ndarray  # local rest positions of those rows
    key_buffer: np.ndarray  # float32 staging for the shown result, reused every frame
    # Whether deformers before the cloth stage move the mesh (stage.is_deformed): then its pins
    # follow the stage's input, read every frame; else the rest mesh carried by the transform.
    deformed: bool = False
    # Dynamic Mesh: its rest shape is the stage's input, every frame (deformed members only).
    dynamic: bool = False
    # Tearing shown in the mesh (tearing.py): per mesh edge its spring or -1; None until shown.
    tear_edge_springs: np.ndarray | None = None

    @property
    def vertex_count(self) -> int:
        return len(self.rest_local)


@dataclass
class Pose:
    """Where one object drives its cloth this frame: its world matrix (4, 4) and, for a deformed
    object, the stage's input ((n, 3) float64, object space); local None: the rest mesh."""

    matrix: np.ndarray
    local: np.ndarray | None = None


def pose_of(obj, depsgraph, deformed: bool, buffer: np.ndarray | None = None) -> Pose:
    """The object's Pose now; deformed: read the stage's input (stage.read_input)."""
    local = stage.read_input(obj, depsgraph, buffer) if deformed else None
    return Pose(world_matrix(obj, depsgraph), local)


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
        deformed = [stage.is_deformed(obj) for obj in objects]
        poses = [pose_of(obj, depsgraph, flag) for obj, flag in zip(objects, deformed, strict=True)]
        # Masses, bending and rest lengths come from the rest mesh (or the rest shape key); a
        # deformed object then starts from the shape the deformers give it now.
        parts = [core.ClothPart(mesh_io.to_world(pose.matrix, rest),
                                mesh_io.read_faces(obj.data), settings=settings_from(obj.cloth_addon, scene),
                                pinned=pull >= RIGID_PIN, edges=mesh_io.read_edges(obj.data),
                                **garment.simulation_inputs(obj, pose.matrix))
                 for obj, rest, pull, pose in zip(objects, rests, pulls, poses, strict=True)]
        self.sim = core.Simulation.from_parts(parts, settings=settings)
        starts = [part.start for part in self.sim.parts]
        pull = np.concatenate(pulls)
        # pins given as masks: move_pins takes their targets in index order, this order
        self.pinned = self.sim.model.pinned_indices
        self.soft = np.flatnonzero((pull > 0.0) & (pull < RIGID_PIN))
        self.soft_pull = pull[self.soft]
        # Only pinned rows (rigid, then soft) follow the objects: per frame, transform just those.
        self.anchors = np.concatenate([self.pinned, self.soft])
        owner = np.searchsorted(starts, self.anchors, side="right") - 1
        self.members = []
        for k, obj in enumerate(objects):
            rows = np.flatnonzero(owner == k)
            vertices = self.anchors[rows] - starts[k]
            self.members.append(Member(obj.session_uid, obj.name, rests[k], self.sim.parts[k], rows,
                                       vertices, rests[k][vertices],
                                       np.empty((len(rests[k]), 3), dtype=np.float32), deformed[k],
                                       deformed[k] and obj.cloth_addon.use_dynamic_mesh))
        # The shape each member rests in as built (world), for the members a Dynamic Mesh
        # rebuild leaves alone: its rest shape key, else its mesh.
        self.built_rest = np.concatenate([part.vertices if part.rest_shape is None else part.rest_shape
                                          for part in parts])
        self.dynamic = any(member.dynamic for member in self.members)
        rest_world = self.targets(poses)
        if any(deformed):
            self.sim.reset(rest_world)
        self.cache: dict[int, np.ndarray] = {self.frame_start: rest_world}
        self.last_frame = self.frame_start
        self.last_targets = rest_world[self.anchors]
        self.last_rest = self.rest_shapes(poses) if self.dynamic else None
        if self.dynamic:
            self.sim.set_rest_shape(self.last_rest)
        # Whether cached frames were stepped over a jump while deformers drive a member: its
        # pins then moved linearly between two poses, not along the deformers' path, so they
        # are dropped back at the start (playback.update_object) and a bake recomputes them.
        self.jumped = False
        # What the cached frames were computed from (see playback.update_object).
        self.inputs = None
        # The group's colliders by collider session_uid, moved every frame (colliders.py).
        self.kept_colliders: dict[int, core.MeshCollider | core.SphereCollider] = {}
        self.known_winds = {}  # wind fields of earlier frames, by transform and settings (wind.py)
        # Names of Collision objects the last frame could not use, for the panel.
        self.unsupported: list[str] = []
        # Per spring the frame it tore at (tearing.py); None until tearing first shows.
        self.tear_frame: np.ndarray | None = None

    @property
    def uids(self) -> list[int]:
        return [member.uid for member in self.members]

    def member(self, uid: int) -> Member:
        return next(member for member in self.members if member.uid == uid)

    def poses(self, objects, depsgraph) -> list[Pose]:
        """The members' Poses now (objects: the members, in the session's order)."""
        return [pose_of(obj, depsgraph, member.deformed, member.key_buffer)
                for obj, member in zip(objects, self.members, strict=True)]

    def targets(self, poses) -> np.ndarray:
        """(n, 3) world positions of the members' shapes in these poses: the stage's input of a
        deformed member, else its rest shape carried by its transform."""
        return np.concatenate([mesh_io.to_world(pose.matrix, member.rest_local if pose.local is None
                                                else pose.local)
                               for pose, member in zip(poses, self.members, strict=True)])

    def rest_shapes(self, poses) -> np.ndarray:
        """(n, 3) world shape the members rest in for these poses: the stage's input of a Dynamic
        Mesh member, the shape it was built with for the others."""
        shape = self.built_rest.copy()
        for pose, member in zip(poses, self.members, strict=True):
            if member.dynamic:
                shape[member.part] = mesh_io.to_world(pose.matrix, pose.local)
        return shape

    def anchor_targets(self, poses) -> np.ndarray:
        """(len(anchors), 3) world positions of the pinned rows in these poses."""
        targets = np.empty((len(self.anchors), 3))
        for pose, member in zip(poses, self.members, strict=True):
            local = member.rest_anchors if pose.local is None else pose.local[member.anchor_vertices]
            targets[member.anchor_rows] = mesh_io.to_world(pose.matrix, local)
        return targets

    def reset(self, poses=None) -> None:
        """Back to rest at the start frame; with the members' poses, their shapes in those poses."""
        self.kept_colliders.clear()  # else a collider would seem to jump from the last frame to the first
        rest = self.cache[self.frame_start] if poses is None else self.targets(poses)
        self.sim.reset(rest)
        self.cache = {self.frame_start: rest}
        self.last_frame = self.frame_start
        self.last_targets = rest[self.anchors]
        self.jumped = False
        if self.dynamic and poses is not None:
            self.last_rest = self.rest_shapes(poses)
            self.sim.set_rest_shape(self.last_rest)

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
        poses = self.poses(objects, depsgraph)
        targets_now = self.anchor_targets(poses)
        rest_now = self.rest_shapes(poses) if self.dynamic else None
        self.read_colliders(scene, depsgraph)
        self.sim.wind_fields = wind.scene_wind_fields(scene, depsgraph, self.known_winds)
        steps, rigid = frame - self.last_frame, len(self.pinned)
        self.jumped |= steps > 1 and any(member.deformed for member in self.members)
        for k in range(1, steps + 1):
            # A jump forward has no poses for the frames in between: pins move linearly.
            targets = self.last_targets + (targets_now - self.last_targets) * (k / steps)
            self.sim.move_pins(targets[:rigid])
            if self.dynamic:
                # Dynamic Mesh: the frame is stepped toward the shape the deformers give at its end.
                self.sim.set_rest_shape(self.last_rest + (rest_now - self.last_rest) * (k / steps))
            self.sim.step(1)
            if len(self.soft):
                self._pull_soft_pins(targets[rigid:])
            self.cache[self.last_frame + k] = np.array(self.sim.positions)
        self.last_frame, self.last_targets = frame, targets_now
        if self.dynamic:
            self.last_rest = rest_now
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
