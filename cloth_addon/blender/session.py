"""One cloth object's live simulation, outside bpy data: a Simulation plus the frames it computed.

A session holds numpy arrays only (never a Blender reference), so undo and file reload cannot
leave it pointing at freed data; the frame update looks the object up again every frame. The
sessions themselves are kept, by session_uid, in `store`.
"""

import numpy as np

from .. import core
from . import colliders, mesh_io
from .settings import scene_inputs, settings_from, total_wind

# weight × pin stiffness at or above this pins a vertex rigidly.
RIGID_PIN = 0.999


class ClothSession:
    """A Simulation plus the frames it has computed (world space) since the start frame."""

    def __init__(self, obj, scene, depsgraph):
        props = obj.cloth_addon
        mesh = obj.data
        self.uid = obj.session_uid
        self.vertex_count = len(mesh.vertices)
        self.rest_local = mesh_io.read_positions(mesh)
        self.frame_start = props.frame_start
        self.frame_end = max(props.frame_end, props.frame_start)
        self.scene_inputs = scene_inputs(scene)
        pull = mesh_io.read_group_weights(obj, props.pin_group) * props.pin_stiffness
        rigid = pull >= RIGID_PIN
        self.soft = np.flatnonzero((pull > 0.0) & ~rigid)
        self.soft_pull = pull[self.soft]
        matrix = world_matrix(obj, depsgraph)
        rest_world = mesh_io.to_world(matrix, self.rest_local)
        self.sim = core.Simulation(rest_world, mesh_io.read_faces(mesh), settings=settings_from(props, scene),
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
        # What the cached frames were computed from (see playback.update_object).
        self.inputs = None
        # This cloth's MeshColliders by collider session_uid, moved every frame (colliders.py).
        self.mesh_colliders: dict[int, core.MeshCollider] = {}
        # Names of Collision objects the last frame could not use, for the panel.
        self.unsupported: list[str] = []
        # Tearing shown in the mesh (tearing.py): per mesh edge its spring or -1, and per spring
        # the frame it tore at; None until tearing first shows.
        self.tear_edge_springs: np.ndarray | None = None
        self.tear_frame: np.ndarray | None = None

    def targets(self, matrix: np.ndarray) -> np.ndarray:
        """(n, 3) world positions of the rest shape carried by the object's current transform."""
        return mesh_io.to_world(matrix, self.rest_local)

    def reset(self, matrix: np.ndarray | None = None) -> None:
        """Back to rest at the start frame; with a matrix, the rest shape where the object is now."""
        self.sim.reset()
        self.mesh_colliders.clear()  # else a collider would seem to jump from the last frame to the first
        rest = self.cache[self.frame_start] if matrix is None else self.targets(matrix)
        if matrix is not None:
            self.sim.state = core.ClothState(rest.copy(), rest.copy(), None)
        self.cache = {self.frame_start: rest}
        self.last_frame = self.frame_start
        self.last_targets = rest[self.anchors]

    def read_colliders(self, scene, depsgraph) -> None:
        """The scene's Collision objects as they are now become the simulation's colliders."""
        self.sim.colliders, self.unsupported = colliders.scene_colliders(scene, depsgraph, self.uid,
                                                                         self.mesh_colliders)

    def positions_at(self, frame: int, obj, scene, depsgraph) -> np.ndarray:
        """World positions at `frame`: cached, or simulated on from the last computed frame.

        Frames before the start show the rest shape; frames after the end hold the last frame.
        """
        frame = min(max(frame, self.frame_start), self.frame_end)
        if frame in self.cache:
            return self.cache[frame]
        targets_now = mesh_io.to_world(world_matrix(obj, depsgraph), self.rest_anchors)
        self.read_colliders(scene, depsgraph)
        wind = total_wind(obj.cloth_addon, scene)
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
