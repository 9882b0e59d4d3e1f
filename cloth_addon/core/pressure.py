"""Gas pressure inside a closed cloth mesh (pillows, balloons).

The force on each face is p * (vector area), along its outward normal, shared equally by the
face's k corners (like its mass and its drag, so a uniformly inflated sheet is not bent by the
sharing). The enclosed volume is V = 1/6 sum over triangles of a . (b x c). The gas follows
Boyle's law: p = Settings.pressure * V_target / V, with V_target = Settings.target_volume or,
when that is 0, the rest volume; so the pressure is Settings.pressure at the target volume, falls
as the cloth inflates past it and rises as it is squeezed. The force is explicit (evaluated at
the start of each substep) and added to the external acceleration, for every solver.
"""

import numpy as np

from . import topology

# The volume used in Boyle's law never drops below this fraction of the target volume: a cloth
# crushed flat would otherwise get an unbounded pressure.
MIN_VOLUME_FRACTION = 0.05


def closed_mesh_problem(faces: topology.Faces, n: int) -> str:
    """Why `faces` do not bound a volume ('' when they do: every edge in exactly two faces,
    the two faces traversing it in opposite directions)."""
    if not len(faces):
        return "it has no faces"
    start = faces.corners
    end = faces.corners[faces.next_loop]
    _, counts = np.unique(topology.pair_keys(start, end, n), return_counts=True)
    open_edges, shared = int((counts == 1).sum()), int((counts > 2).sum())
    if open_edges or shared:
        return (f"{open_edges} edge(s) belong to one face only and {shared} to more than two; "
                "close the mesh (every edge shared by exactly two faces)")
    if len(np.unique(start * n + end)) != len(start):
        return "its faces are not consistently oriented (recalculate normals)"
    return ""


class Pressure:
    """Pressure forces for one ClothModel; raises ValueError when the mesh is not closed."""

    def __init__(self, model):
        problem = closed_mesh_problem(model.faces, model.n_particles)
        if problem:
            raise ValueError(f"Settings.use_pressure needs a closed mesh: {problem}")
        self.faces = model.faces
        self.triangles = model.triangles
        volume, _ = self._measure(model.rest_positions)
        # faces wound inward give a negative volume: flip so that V > 0 and forces point out
        self.orientation = 1.0 if volume >= 0.0 else -1.0
        self.rest_volume = abs(volume)

    def _measure(self, positions):
        """(signed volume m^3, per-face vector areas (m, 3) m^2, unflipped)."""
        t = self.triangles
        p0, p1, p2 = positions[t[:, 0]], positions[t[:, 1]], positions[t[:, 2]]
        cross = np.cross(p1 - p0, p2 - p0)  # 2 x the triangle's vector area
        volume = float(np.einsum("ij,ij->", p0, cross)) / 6.0
        return volume, 0.5 * (self.faces.triangle_to_face @ cross)

    def volume(self, positions: np.ndarray) -> float:
        """m^3 enclosed by the cloth at positions (n, 3) m."""
        return self.orientation * self._measure(positions)[0]

    def forces(self, positions: np.ndarray, pressure: float, target_volume: float = 0.0) -> np.ndarray:
        """(n, 3) N on each vertex for `pressure` Pa at `target_volume` m^3 (0 = rest volume)."""
        signed, vector_area = self._measure(positions)
        target = target_volume if target_volume > 0.0 else self.rest_volume
        volume = max(self.orientation * signed, MIN_VOLUME_FRACTION * target)
        gas = self.orientation * pressure * target / volume
        return self.faces.corner_share @ (gas * vector_area)
