"""Quadratic isometric bending (Bergou, Wardetzky, Harmon, Zorin, Grinspun 2006).

For an interior edge (x0, x1) of a triangulation with opposite vertices x2 (triangle A) and
x3 (triangle B), and c_vT the cotangent of the rest angle at vertex v in triangle T,

    K = [c_1A + c_1B,  c_0A + c_0B,  -(c_0A + c_1A),  -(c_0B + c_1B)]      (on x0, x1, x2, x3)
    Q_e = 3 / (A_A + A_B) K^T K                                              (Bergou's 4 x 4)

Per triangle, c_1 x0 + c_0 x1 - (c_0 + c_1) x_opp = |e| u, with u the unit vector in that
triangle's plane, normal to the edge, pointing from the opposite vertex to it; so
K x = |e| (u_A + u_B): 0 for a flat diamond in any rigid position, of length 2 |e| sin(theta / 2)
for a dihedral angle theta. The energy is quadratic in x with a constant Hessian.

Calibration (tests/core/test_bending.py). A sheet bent into a cylinder of radius R about an
axis along a family of mesh edges stores, per unit area, sum_e x^T Q_e x = 3 / R^2 (only that
family's edges bend, each by theta = a / R); about other axes more, up to 3x that across the
diagonals of a quad grid cut along one diagonal everywhere, because the edge-based sum has no
cross terms between edges. So that k_b is the plate bending stiffness in N m, this module uses
Q = 1/3 sum_e Q_e, i.e. E / area = 1/2 k_b / R^2 for bends about mesh edges, and cuts
neighbouring quads along alternating diagonals (a checkerboard on a grid), which makes the two
diagonals alike: a bend about a grid diagonal then stores 1.5x that
(docs/PHYSICS.md §10).

The rest shape is taken as flat: a curved rest shape is not the zero-energy state, it relaxes
towards flat with the bending stiffness (no rest-curvature term).
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from .topology import Faces, pair_keys, triangulate

# Triangles whose rest area is below this fraction of the squared mesh size carry no bending
# (their cotangents are undefined).
_DEGENERATE_AREA = 1e-14
# Nor do slivers, triangles with an angle under about 0.06 degrees (a cotangent above this):
# Q_e grows with the cotangents squared, and a sliver's entries, orders of magnitude beyond its
# neighbours', leave M + h^2 (L + B) no longer positive definite in floating point.
_SLIVER_COTANGENT = 1e3


def hinges(triangles: np.ndarray, n: int) -> np.ndarray:
    """(e, 4) int64: (x0, x1, x2, x3) for every edge shared by exactly two triangles, x0 < x1.

    triangles: (t, 3) int. Boundary edges and edges of three or more triangles are left out.
    """
    a = triangles.reshape(-1)
    b = triangles[:, [1, 2, 0]].reshape(-1)
    opposite = triangles[:, [2, 0, 1]].reshape(-1)
    keys = pair_keys(a, b, n)
    order = np.argsort(keys, kind="stable")
    _, first, counts = np.unique(keys[order], return_index=True, return_counts=True)
    shared = first[counts == 2]
    one, two = order[shared], order[shared + 1]
    return np.stack([np.minimum(a[one], b[one]), np.maximum(a[one], b[one]),
                     opposite[one], opposite[two]], axis=1).astype(np.int64)


def _cotangent(apex: np.ndarray, p: np.ndarray, q: np.ndarray):
    """(e,) cot of the angle at `apex` between p and q, and (e,) twice the triangle's area."""
    u, v = p - apex, q - apex
    double_area = np.linalg.norm(np.cross(u, v), axis=1)
    return np.einsum("ij,ij->i", u, v) / np.maximum(double_area, 1e-300), double_area


class BendingTerms(NamedTuple):
    """The hinges behind a bending matrix, kept so that torn springs can cut theirs.

    hinges:  (h, 4) int64, (x0, x1, x2, x3) per hinge (see hinges()).
    values:  (h, 4, 4) float64, each hinge's block of the matrix (its units).
    springs: (h, 5) int64, index of the spring along each of the hinge's five edges
             ((x0, x1), (x0, x2), (x1, x2), (x0, x3), (x1, x3)), -1 where there is none.
    """

    hinges: np.ndarray
    values: np.ndarray
    springs: np.ndarray

    def matrix(self, n: int, active: np.ndarray | None = None) -> sp.csr_matrix:
        """(n, n) CSR sum of the blocks; with active ((s,) bool, springs that exist) only of
        hinges whose five edges are all intact: a torn edge leaves no fold to resist there."""
        hinge, values = self.hinges, self.values
        if active is not None:
            intact = np.all(np.where(self.springs >= 0, active[self.springs], True), axis=1)
            hinge, values = hinge[intact], values[intact]
        rows = np.broadcast_to(hinge[:, :, None], values.shape).ravel()
        cols = np.broadcast_to(hinge[:, None, :], values.shape).ravel()
        return sp.csr_matrix((values.ravel(), (rows, cols)), shape=(n, n))

    def scaled(self, factor) -> "BendingTerms":
        """The terms times factor: a float, or (h,) float64 one per hinge."""
        return self._replace(values=np.asarray(factor, dtype=np.float64)[..., None, None] * self.values)


def hinge_terms(rest: np.ndarray, triangles: np.ndarray, rigid: np.ndarray | None = None):
    """Each interior edge's 1/3 Q_e (Bergou's Q_e): (hinges (h, 4) int64, blocks (h, 4, 4)
    float64, 1/m^2).

    rest: (n, 3) float64 rest positions, m. triangles: (t, 3) int. rigid: optional (n,) bool,
    particles that do not move (pins); see bending_matrix.
    """
    n = len(rest)
    hinge = hinges(np.asarray(triangles, dtype=np.int64).reshape(-1, 3), n)
    x0, x1, x2, x3 = (rest[hinge[:, k]] for k in range(4))
    c0a, area_a = _cotangent(x0, x1, x2)
    c0b, area_b = _cotangent(x0, x1, x3)
    c1a, _ = _cotangent(x1, x0, x2)
    c1b, _ = _cotangent(x1, x0, x3)
    size = float(np.ptp(rest, axis=0).max()) if n else 0.0
    smallest = 2.0 * _DEGENERATE_AREA * size * size
    keep = (area_a > smallest) & (area_b > smallest)
    keep &= np.max(np.abs([c0a, c0b, c1a, c1b]), axis=0) < _SLIVER_COTANGENT
    k = np.stack([c1a + c1b, c0a + c0b, -(c0a + c1a), -(c0b + c1b)], axis=1)[keep]
    # 1/3 of 3 / (A_A + A_B), with the areas held doubled. Next to a rigid triangle (all three
    # corners pinned: a clamp) the fold's curvature can only spread over the free triangle, so
    # the hinge's area is that triangle's alone (twice the weight for equal triangles).
    area = area_a + area_b
    if rigid is not None:
        fixed_a = rigid[hinge[:, 0]] & rigid[hinge[:, 1]] & rigid[hinge[:, 2]]
        fixed_b = rigid[hinge[:, 0]] & rigid[hinge[:, 1]] & rigid[hinge[:, 3]]
        area = np.where(fixed_a, area_b, np.where(fixed_b, area_a, area))
    weight = 2.0 / area[keep]
    return hinge[keep], weight[:, None, None] * k[:, :, None] * k[:, None, :]


def alternating_triangles(faces: Faces) -> np.ndarray:
    """(t, 3) int64: the faces cut into triangles, neighbouring quads along alternating diagonals.

    A quad's fan starts at corner 0 or 1 by the parity of its distance (in faces, across shared
    edges) from the first face of its piece: on a grid, a checkerboard. Other faces fan from
    corner 0."""
    m, n = len(faces), faces.n_vertices
    first = np.zeros(m, dtype=np.int64)
    if m and np.any(faces.face_size == 4):
        keys = pair_keys(faces.corners, faces.corners[faces.next_loop], n)
        order = np.argsort(keys, kind="stable")
        same = keys[order][1:] == keys[order][:-1]
        a, b = faces.face_of_loop[order][:-1][same], faces.face_of_loop[order][1:][same]
        adjacency = sp.csr_matrix((np.ones(len(a)), (a, b)), shape=(m, m))
        _, piece = connected_components(adjacency, directed=False)
        roots = np.unique(piece, return_index=True)[1]
        steps = dijkstra(adjacency, directed=False, indices=roots, unweighted=True, min_only=True)
        first = np.where(faces.face_size == 4, steps.astype(np.int64) % 2, 0)
    return triangulate(faces, first)


def bending_terms(rest: np.ndarray, faces: Faces, rigid: np.ndarray | None = None,
                  springs: np.ndarray | None = None) -> BendingTerms:
    """The hinges of Q (see bending_matrix), 1/m^2. springs: optional (s, 2) int particle
    pairs, to name the spring along each hinge edge (BendingTerms.springs; all -1 without)."""
    n = len(rest)
    hinge, values = hinge_terms(rest, alternating_triangles(faces), rigid)
    edge_ends = hinge[:, [0, 0, 1, 0, 1]], hinge[:, [1, 2, 2, 3, 3]]
    edge_index = np.full(edge_ends[0].shape, -1, dtype=np.int64)
    if springs is not None and len(springs) and len(hinge):
        keys = pair_keys(springs[:, 0], springs[:, 1], n)
        order = np.argsort(keys)
        wanted = pair_keys(*edge_ends, n)
        at = np.minimum(np.searchsorted(keys[order], wanted), len(keys) - 1)
        found = keys[order][at] == wanted
        edge_index[found] = order[at][found]
    return BendingTerms(hinge, values, edge_index)


def bending_matrix(rest: np.ndarray, faces: Faces, rigid: np.ndarray | None = None) -> sp.csr_matrix:
    """Q, (n, n) symmetric positive semi-definite CSR float64, 1/m^2: E = 1/2 k_b sum_xyz x^T Q x.

    rest: (n, 3) float64 rest positions, m (taken as the flat, unbent shape). faces: the
    polygons, cut into triangles by alternating_triangles (so a grid's two diagonals count
    alike; cutting every quad both ways and averaging does too, but is 2x stiffer along the
    diagonals and its wider stencil has half as many non-zeros again in M + h^2 L).
    rigid: optional (n,) bool, pinned particles: a hinge between a pinned triangle and a free
    one is a clamp, where a cantilever's curvature is largest; counting it like any other hinge
    made a clamped leather strip droop 7% more at 25 mm spacing than at 6 mm (1.3% with it).
    """
    return bending_terms(rest, faces, rigid).matrix(len(rest))


def quadratic_energy(matrix: sp.spmatrix | None, positions: np.ndarray) -> float:
    """J: 1/2 sum over x, y, z of x^T B x for B (n, n) in N/m and positions (n, 3) in m."""
    return 0.0 if matrix is None else 0.5 * float(np.sum(positions * (matrix @ positions)))
