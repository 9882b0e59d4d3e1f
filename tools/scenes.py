"""Reference meshes and scenes for tests, benchmarks and the demo (not shipped with the add-on):
grids, a flag, sewn panels, a capsule, a cloth cube, a UV sphere, the buckling scenes and the
paper's test problems.

The paper's setup (Liu et al. 2013): a 50 x 50 particle sheet, 4,802 triangles, h = 1/30 s.
`paper_problem` freezes one implicit Euler step of it, so that solvers can be compared on
the same minimisation: same y, same x* (Newton run to convergence).
"""

from dataclasses import dataclass

import numpy as np

from cloth_addon.core import Settings, Simulation, forces


def grid(nx: int, ny: int, size: float = 1.0, plane: str = "xz", triangles: bool = False):
    """A regular sheet of nx x ny vertices, `size` metres square, row 0 on top.

    plane "xz": hanging (row r at z = -r * spacing, y = 0); "xy": lying flat at z = 0.
    triangles: split every quad into two triangles (the paper's 2 (nx-1)(ny-1) triangles).
    Returns vertices (n, 3) float64, faces (m, 4 or 3) int64, index (ny, nx) int64 (vertex
    number of each grid point, e.g. index[0] is the top row).
    """
    if plane not in ("xz", "xy"):
        raise ValueError(f"plane must be 'xz' or 'xy', got {plane!r}")
    xs, ys = np.meshgrid(np.linspace(0.0, size, nx), np.linspace(0.0, size, ny))
    zeros = np.zeros(nx * ny)
    if plane == "xz":
        vertices = np.stack([xs.ravel(), zeros, -ys.ravel()], axis=1)
    else:
        vertices = np.stack([xs.ravel(), ys.ravel(), zeros], axis=1)
    index = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([index[:-1, :-1], index[:-1, 1:], index[1:, 1:], index[1:, :-1]], axis=-1).reshape(-1, 4)
    if triangles:
        return vertices, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]), index
    return vertices, quads, index


@dataclass
class StepProblem:
    """One implicit Euler step, frozen: the solver's advance(positions, previous, accel, pin_targets)."""

    sim: Simulation
    positions: np.ndarray
    previous: np.ndarray
    accel: np.ndarray
    pin_targets: np.ndarray

    @property
    def h(self) -> float:
        return self.sim.settings.h

    def args(self):
        return self.positions, self.previous, self.accel, self.pin_targets


def paper_problem(kind: str = "gentle", n: int = 50, settings: Settings | None = None) -> StepProblem:
    """The paper's sheet (n x n particles, triangulated, 1 m, h = 1/30 s) hanging from its two
    top corners, at one step:

    "gentle":  30 frames after release from hanging straight: a softly swinging cloth.
    "violent": released from a pose stretched 30% along its height, at the first step.
    The paper's springs resist compression as they resist stretching (compression 1), and its
    sheet hangs exactly in its plane (no imperfection): its step is a minimisation with one
    minimiser in that plane, which Newton's method finds from y.
    """
    settings = settings or Settings(dt=1.0 / 30.0, substeps=1, iterations=10, compression=1.0,
                                    imperfection=0.0)
    vertices, faces, index = grid(n, n, 1.0, "xz", triangles=True)
    sim = Simulation(vertices, faces, settings, pinned=[index[0, 0], index[0, -1]])
    if kind == "gentle":
        sim.step(30)
    elif kind == "violent":
        state = sim.state
        state.positions = vertices * (1.0, 1.0, 1.3)
        state.previous = state.positions.copy()
        sim.state = state
    else:
        raise ValueError(f"kind must be 'gentle' or 'violent', got {kind!r}")
    state = sim.state
    h = settings.h
    velocity = (state.positions - state.previous) / h
    accel = forces.external_acceleration(sim.model, state.positions, velocity, settings, h)
    return StepProblem(sim, state.positions, state.previous, accel,
                       state.positions[sim.model.pinned_indices].copy())


def flag(nx: int = 45, ny: int = 30, length: float = 1.5, height: float = 1.0, angle: float = 10.0):
    """A flag: length x height m, nx x ny vertices, vertical in the XZ plane (x along the flag, z
    up, bottom edge at z = 1 m), pinned along its short edge at x = 0; and the direction (3,) of a
    wind along +x turned `angle` degrees out of the flag's plane (towards +y).

    Returns vertices (n, 3), faces (m, 4), pinned indices (ny,), wind direction (3,).
    """
    xs, zs = np.meshgrid(np.linspace(0.0, length, nx), np.linspace(height, 0.0, ny))
    vertices = np.stack([xs.ravel(), np.zeros(nx * ny), 1.0 + zs.ravel()], axis=1)
    index = np.arange(nx * ny).reshape(ny, nx)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    turn = np.radians(angle)
    return vertices, quads, index[:, 0].copy(), np.array([np.cos(turn), np.sin(turn), 0.0])


def sewn_panels(n: int = 20, width: float = 1.0, length: float = 1.0, gap: float = 0.6, height: float = 0.0):
    """Two flat n x n panels, one `gap` m above the other (z = height +- gap/2), with sewing edges
    joining their side columns row by row: sewn, they close into a tube along y.

    Returns vertices (2 n^2, 3) m, quads (2 (n-1)^2, 4), sewing edges (2 n, 2) int64. The lower
    panel's faces are wound the other way, so both panels' normals point out of the tube.
    """
    vertices, quads, index = grid(n, n, size=1.0, plane="xy")
    vertices = vertices * (width, length, 1.0) - (0.5 * width, 0.5 * length, 0.0)
    top = vertices + (0.0, 0.0, height + 0.5 * gap)
    bottom = vertices + (0.0, 0.0, height - 0.5 * gap)
    count = len(vertices)
    faces = np.concatenate([quads, quads[:, ::-1] + count])
    sides = np.concatenate([index[:, 0], index[:, -1]])
    edges = np.stack([sides, sides + count], axis=1).astype(np.int64)
    return np.concatenate([top, bottom]), faces, edges


def capsule(radius: float = 0.2, length: float = 1.2, segments: int = 24, rings: int = 12,
            center=(0.0, 0.0, 0.0), axis: str = "y"):
    """A closed capsule (a cylinder of `length` m between two half spheres of `radius` m) along
    the x, y or z axis: (vertices (v, 3) float64, triangles (t, 3) int64), outward-facing.

    rings: latitude rings of the two half spheres together (even); the cylinder is cut into
    rings about as far apart as its segments are wide, so that no triangle is a long sliver.
    """
    if rings % 2 or rings < 2 or segments < 3 or not radius > 0.0 or length < 0.0:
        raise ValueError("capsule needs an even rings >= 2, segments >= 3, radius > 0, length >= 0")
    half = 0.5 * length
    theta = np.linspace(0.0, np.pi, rings + 1)[1:-1]  # latitudes without the poles
    upper, lower = theta[theta <= np.pi / 2 + 1e-12], theta[theta > np.pi / 2 + 1e-12]
    cuts = max(1, int(np.ceil(length / (2.0 * np.pi * radius / segments))))
    z = np.concatenate([half + radius * np.cos(upper), np.linspace(half, -half, cuts + 1)[1:],
                        -half + radius * np.cos(lower)])
    rho = np.concatenate([radius * np.sin(upper), np.full(cuts, radius), radius * np.sin(lower)])
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.stack([rho[:, None] * np.cos(phi), rho[:, None] * np.sin(phi),
                     np.broadcast_to(z[:, None], (len(z), segments))], axis=-1).reshape(-1, 3)
    vertices = np.concatenate([[(0.0, 0.0, half + radius)], ring, [(0.0, 0.0, -half - radius)]])
    top, bottom = 0, len(vertices) - 1
    index = 1 + np.arange(len(z) * segments).reshape(len(z), segments)
    nxt = np.roll(index, -1, axis=1)
    caps_top = np.stack([np.full(segments, top), index[0], nxt[0]], axis=1)
    caps_bottom = np.stack([np.full(segments, bottom), nxt[-1], index[-1]], axis=1)
    a, b, c, d = index[:-1], nxt[:-1], nxt[1:], index[1:]
    quads = np.concatenate([np.stack([a, d, c], -1).reshape(-1, 3), np.stack([a, c, b], -1).reshape(-1, 3)])
    triangles = np.concatenate([caps_top, quads, caps_bottom]).astype(np.int64)
    order = {"x": [2, 0, 1], "y": [1, 2, 0], "z": [0, 1, 2]}[axis]  # cyclic: keeps the winding
    return vertices[:, order] + np.asarray(center, dtype=np.float64), triangles


def uv_sphere(radius=1.0, segments=32, rings=16, center=(0.0, 0.0, 0.0)):
    """A closed UV sphere like Blender's: (vertices (v, 3) float64, triangles (t, 3) int64),
    outward-facing, poles at +-Z."""
    if segments < 3 or rings < 2 or not radius > 0.0:
        raise ValueError("uv_sphere needs segments >= 3, rings >= 2 and radius > 0")
    theta = np.linspace(0.0, np.pi, rings + 1)[1:-1]  # latitudes without the poles
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    t, f = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(f), np.sin(t) * np.sin(f), np.cos(t)], axis=-1).reshape(-1, 3)
    vertices = np.concatenate([[(0.0, 0.0, 1.0)], ring, [(0.0, 0.0, -1.0)]]) * radius + np.asarray(center)
    top, bottom = 0, len(vertices) - 1
    index = 1 + np.arange((rings - 1) * segments).reshape(rings - 1, segments)
    nxt = np.roll(index, -1, axis=1)
    caps_top = np.stack([np.full(segments, top), index[0], nxt[0]], axis=1)
    caps_bottom = np.stack([np.full(segments, bottom), nxt[-1], index[-1]], axis=1)
    a, b, c, d = index[:-1], nxt[:-1], nxt[1:], index[1:]
    quads = np.concatenate([np.stack([a, d, c], -1).reshape(-1, 3), np.stack([a, c, b], -1).reshape(-1, 3)])
    return vertices, np.concatenate([caps_top, quads, caps_bottom]).astype(np.int64)


def cloth_cube(n: int = 10, size: float = 0.5, center=(0.0, 0.0, 0.0)):
    """A closed cube surface of quads, n x n vertices per side, `size` m wide, faces wound
    outward: (vertices (v, 3) float64, quads (6 (n-1)^2, 4) int64). A pillow or a box of cloth."""
    sheet, quads, _ = grid(n, n, size=1.0, plane="xy")
    u, v = sheet[:, 0] - 0.5, sheet[:, 1] - 0.5
    half = np.full_like(u, 0.5)
    sides = [np.stack(c, axis=1) for c in ((u, v, half), (u, v, -half), (u, half, v), (u, -half, v),
                                            (half, u, v), (-half, u, v))]
    points = np.concatenate(sides)
    faces = np.concatenate([quads + k * len(sheet) for k in range(6)])
    # merge the vertices the sides share along the cube's edges
    _, first, inverse = np.unique(np.round(points * (n - 1) * 2).astype(np.int64), axis=0,
                                  return_index=True, return_inverse=True)
    vertices = points[first]
    faces = inverse.reshape(-1)[faces]
    a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a + c) < 0.0
    faces[inward] = faces[inward, ::-1]
    return vertices * size + np.asarray(center, dtype=np.float64), faces


# The buckling scenes (tools/bench_buckling.py, tests/core/test_buckling.py): cloth compressed in
# its own plane, which a converged implicit step, Blender's Cloth and real cloth fold.

def standing_strip():
    """The pile's strip standing on its edge: 8 x 60 vertices, 0.4 x 3.0 m, vertical in the xz
    plane (exactly planar), its bottom 0.1 m above the floor z = 0. Returns vertices (480, 3) m,
    quads (413, 4). Played at 30 fps over PlaneCollider(thickness=0.02, friction=0.5)."""
    vertices, faces, _ = grid(8, 60, 1.0, "xz")
    vertices = vertices * (0.4, 1.0, 3.0)
    vertices += np.array([0.0, 0.0, 1.6]) - 0.5 * (vertices.max(axis=0) + vertices.min(axis=0))
    return vertices, faces


def open_tube(radius: float = 0.25, height: float = 1.2, segments: int = 32, rings: int = 48,
              lift: float = 0.05):
    """An open cylinder of cloth standing upright (axis z, no caps), its bottom ring `lift` m
    above the floor z = 0: vertices (segments * rings, 3) m, quads ((rings - 1) segments, 4)
    wound with normals outward. Played at 24 fps."""
    angle = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    z = lift + np.linspace(0.0, height, rings)
    vertices = np.stack([np.tile(radius * np.cos(angle), rings), np.tile(radius * np.sin(angle), rings),
                         np.repeat(z, segments)], axis=1)
    index = np.arange(segments * rings).reshape(rings, segments)
    after = np.roll(index, -1, axis=1)
    quads = np.stack([index[:-1], after[:-1], after[1:], index[1:]], axis=-1).reshape(-1, 4)
    return vertices, quads


def squeezed_sheet(n: int = 20, size: float = 1.0, squeeze: float = 0.6, frames: int = 24):
    """A vertical size x size m sheet of n x n vertices (xz plane, exactly planar, top row at
    z = 1.5 m), and its pins' path: the top row drawn towards its centre to `squeeze` of its width
    over `frames` frames, then held. Returns vertices (n^2, 3), quads, pinned indices (n,) and
    targets(frame) -> (n, 3) m, where the pins are at the end of that frame (1-based)."""
    vertices, faces, index = grid(n, n, size, "xz")
    vertices = vertices + (-0.5 * size, 0.0, 1.5)
    pinned = index[0].copy()
    start = vertices[pinned]
    centre = start[:, 0].mean()

    def targets(frame: int) -> np.ndarray:
        shrink = 1.0 - (1.0 - squeeze) * min(frame / frames, 1.0)
        moved = start.copy()
        moved[:, 0] = centre + (start[:, 0] - centre) * shrink
        return moved

    return vertices, faces, pinned, targets
