"""Mesh topology to springs, lumped masses and triangles (docs/PHYSICS.md §1, §2).

Faces are held like Blender's loops: one flat array of corner vertex indices (`corners`)
plus the first corner of every face (`face_start`) and its size (`face_size`). Every
function here is vectorised over faces and edges; the only Python loops run over the few
distinct face sizes.

      face f with k corners:   corners[face_start[f] : face_start[f] + k]
      loop L goes from corners[L] to corners[next_loop[L]]
"""

import functools
import warnings

import numpy as np
import scipy.sparse as sp

from .sparse_ops import MatVec

STRUCTURAL, SHEAR, BEND = 0, 1, 2
# Sewing springs (core/garment.py): loose edges of a mesh with faces, rest length 0.
SEWING = 3


class Faces:
    """Mixed polygons as flat corner arrays.

    corners:    (c,) int64, vertex index of every face corner, face after face.
    face_start: (m,) int64, index into `corners` of each face's first corner.
    face_size:  (m,) int64, corner count of each face (>= 3).
    n_vertices: vertex count of the mesh (corners index into it).
    """

    def __init__(self, corners: np.ndarray, face_start: np.ndarray, face_size: np.ndarray, n_vertices: int):
        self.corners = corners
        self.face_start = face_start
        self.face_size = face_size
        face_of_loop = np.repeat(np.arange(len(face_size)), face_size)
        position = np.arange(len(corners)) - face_start[face_of_loop]
        size = face_size[face_of_loop]
        self.next_loop = face_start[face_of_loop] + (position + 1) % size
        self.prev_loop = face_start[face_of_loop] + (position - 1) % size
        self.face_of_loop = face_of_loop
        self.face_of_triangle = np.repeat(np.arange(len(face_size)), face_size - 2)
        self.n_vertices = n_vertices

    @functools.cached_property
    def corner_average(self) -> sp.csr_matrix:
        """(m, n) sparse: 1/k at (face, corner vertex); `@ values` averages over each face."""
        weights = 1.0 / self.face_size[self.face_of_loop]
        return sp.csr_matrix((weights, (self.face_of_loop, self.corners)),
                             shape=(len(self), self.n_vertices))

    @functools.cached_property
    def corner_share(self) -> sp.csr_matrix:
        """(n, m) sparse: each corner vertex gets 1/k of a per-face quantity."""
        return self.corner_average.T.tocsr()

    @functools.cached_property
    def triangle_to_face(self) -> sp.csr_matrix:
        """(m, t) sparse: sums a per-triangle quantity over each face's fan."""
        t = len(self.face_of_triangle)
        return sp.csr_matrix((np.ones(t), (self.face_of_triangle, np.arange(t))), shape=(len(self), t))

    @functools.cached_property
    def _uniform(self):
        """The k corner columns ((m,) each, contiguous) when every face has the same k (3 or
        4), else None."""
        k = int(self.face_size[0]) if len(self.face_size) else 0
        if k not in (3, 4) or np.any(self.face_size != k):
            return None
        corners = self.corners.reshape(-1, k)
        return tuple(np.ascontiguousarray(corners[:, j]) for j in range(k))

    @functools.cached_property
    def _area_edges(self):
        """(edges, fans) for doubled_area_rows: edges maps coordinate rows (3n,) to two vectors
        (3, 2, k) per face or fan triangle whose cross product is twice its vector area (a
        quad's diagonals, a triangle's two edges from its first corner); fans (3t,) -> (3m,)
        sums the fan triangles' rows per face, or None where k is the faces themselves."""
        uniform = self._uniform
        if uniform is not None and len(uniform) == 4:
            a, b, c, d = uniform
            first, second, fans = (c, a), (d, b), None
        else:
            triangles = triangulate(self)
            first, second = (triangles[:, 1], triangles[:, 0]), (triangles[:, 2], triangles[:, 0])
            fans = None if uniform is not None else MatVec(sp.block_diag([self.triangle_to_face] * 3))
        k = len(first[0])
        rows = np.arange(2 * k).reshape(2, k)
        ends = np.concatenate([first[0], second[0], first[1], second[1]])
        edges = sp.csr_matrix((np.repeat([1.0, -1.0], 2 * k), (np.tile(rows.ravel(), 2), ends)),
                              shape=(2 * k, self.n_vertices))
        return MatVec(sp.block_diag([edges] * 3)), fans

    @functools.cached_property
    def corner_average_rows(self) -> MatVec:
        """corner_average on coordinate rows: (3n,) -> (3m,)."""
        return MatVec(sp.block_diag([self.corner_average] * 3))

    @functools.cached_property
    def corner_share_rows(self) -> MatVec:
        """corner_share on four rows of per-face values: (4m,) -> (4n,)."""
        return MatVec(sp.block_diag([self.corner_share] * 4))

    def doubled_area_rows(self, rows: np.ndarray) -> np.ndarray:
        """(3, m) float64: each face's vector area times 2 (normal times twice the area, m^2), as
        coordinate rows, from positions as coordinate rows (3n,) [x..., y..., z...].

        Any triangulation of a polygon gives it the same vector area; a quad's is the cross
        product of its diagonals, one product per face instead of two and a sum."""
        edges, fans = self._area_edges
        u, v = edges(rows).reshape(3, 2, -1).transpose(1, 0, 2)
        doubled = np.empty_like(u)
        np.multiply(u[1], v[2], out=doubled[0])
        doubled[0] -= u[2] * v[1]
        np.multiply(u[2], v[0], out=doubled[1])
        doubled[1] -= u[0] * v[2]
        np.multiply(u[0], v[1], out=doubled[2])
        doubled[2] -= u[1] * v[0]
        return doubled if fans is None else fans(doubled.ravel()).reshape(3, -1)

    def __len__(self) -> int:
        return len(self.face_size)


def parse_faces(faces, n_vertices: int) -> Faces:
    """Turn a sequence of index sequences or an (m, k) int array into `Faces`.

    Raises ValueError for indices out of range, non-integers, or faces with fewer than
    three distinct vertices.
    """
    if isinstance(faces, np.ndarray) and faces.ndim == 2:
        array = faces
        sizes = np.full(len(array), array.shape[1], dtype=np.int64)
        flat = array.reshape(-1)
    else:
        faces = [np.asarray(f).reshape(-1) for f in faces]
        sizes = np.fromiter((len(f) for f in faces), dtype=np.int64, count=len(faces))
        flat = np.concatenate(faces) if faces else np.zeros(0, dtype=np.int64)
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        if not np.all(np.isfinite(flat)) or np.any(flat != np.round(flat)):
            raise ValueError("faces must contain integer vertex indices")
    flat = flat.astype(np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= n_vertices):
        bad = flat[(flat < 0) | (flat >= n_vertices)][0]
        raise ValueError(f"face index {bad} is out of range for {n_vertices} vertices")
    if np.any(sizes < 3):
        raise ValueError(f"face {int(np.argmax(sizes < 3))} has fewer than 3 vertices")
    start = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=start[1:])
    parsed = Faces(flat, start, sizes, n_vertices)
    _check_distinct_corners(parsed)
    return parsed


def _check_distinct_corners(faces: Faces) -> None:
    """A face must have at least 3 distinct vertices; repeated neighbours are tolerated."""
    if not len(faces):
        return
    order = np.lexsort((faces.corners, faces.face_of_loop))
    sorted_corners = faces.corners[order]
    sorted_face = faces.face_of_loop[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (sorted_corners[1:] != sorted_corners[:-1]) | (sorted_face[1:] != sorted_face[:-1])
    distinct = np.bincount(sorted_face[new], minlength=len(faces))
    if np.any(distinct < 3):
        bad = int(np.argmax(distinct < 3))
        raise ValueError(f"face {bad} has fewer than 3 distinct vertices")


def pair_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """(k,) int64 key min * n + max of each unordered pair (a[i], b[i]) of particles below n:
    equal for (a, b) and (b, a), and key // n, key % n give the sorted pair back."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return lo.astype(np.int64) * n + hi


def _unique_pairs(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """(k, 2) sorted, de-duplicated (lo, hi) pairs without self pairs."""
    keep = a != b
    keys = np.unique(pair_keys(a[keep], b[keep], n))
    return np.stack([keys // n, keys % n], axis=1)


def structural_pairs(faces: Faces, n: int, edges: np.ndarray | None = None) -> np.ndarray:
    """Every face edge plus every extra (loose) edge, (k, 2) int64, unique."""
    a = faces.corners
    b = faces.corners[faces.next_loop]
    if edges is not None and len(edges):
        a = np.concatenate([a, edges[:, 0]])
        b = np.concatenate([b, edges[:, 1]])
    return _unique_pairs(a, b, n)


def shear_pairs(faces: Faces, n: int) -> np.ndarray:
    """Chords of every face with 4+ corners (both quad diagonals; all non-edge pairs of n-gons)."""
    chunks_a, chunks_b = [], []
    for k in np.unique(faces.face_size):
        if k < 4:
            continue
        starts = faces.face_start[faces.face_size == k]
        i, j = np.triu_indices(k, 1)
        chord = (j - i != 1) & (j - i != k - 1)
        i, j = i[chord], j[chord]
        chunks_a.append(faces.corners[(starts[:, None] + i[None, :]).ravel()])
        chunks_b.append(faces.corners[(starts[:, None] + j[None, :]).ravel()])
    if not chunks_a:
        return np.zeros((0, 2), dtype=np.int64)
    return _unique_pairs(np.concatenate(chunks_a), np.concatenate(chunks_b), n)


def bend_pairs(faces: Faces, n: int) -> np.ndarray:
    """Springs across every edge shared by exactly two faces.

    For edge (u, w) between faces A and B, join u's other neighbour in A with u's other
    neighbour in B, and the same for w. For two triangles both pairs are the two opposite
    vertices; on a quad grid they are the classic skip-one springs:

        a_u - u - b_u          a_u, b_u: u's neighbours in A and B off the edge
         |  A |  B |
        a_w - w - b_w
    """
    loops = np.arange(len(faces.corners))
    start = faces.corners
    end = faces.corners[faces.next_loop]
    before_start = faces.corners[faces.prev_loop]
    after_end = faces.corners[faces.next_loop[faces.next_loop]]
    keys = pair_keys(start, end, n)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    _, first, counts = np.unique(sorted_keys, return_index=True, return_counts=True)
    shared = counts == 2
    la = loops[order[first[shared]]]
    lb = loops[order[first[shared] + 1]]
    u = np.minimum(start[la], end[la])
    # u's neighbour off the edge: before the loop's start if u starts it, else after its end
    a_u = np.where(start[la] == u, before_start[la], after_end[la])
    a_w = np.where(start[la] == u, after_end[la], before_start[la])
    b_u = np.where(start[lb] == u, before_start[lb], after_end[lb])
    b_w = np.where(start[lb] == u, after_end[lb], before_start[lb])
    return _unique_pairs(np.concatenate([a_u, a_w]), np.concatenate([b_u, b_w]), n)


def build_springs(faces: Faces, n: int, edges: np.ndarray | None = None):
    """All springs, each pair once, with its kind.

    Returns (pairs (s, 2) int64, kind (s,) int8 in {STRUCTURAL, SHEAR, BEND}). A pair that
    qualifies for several kinds keeps the first (structural, then shear, then bend).
    """
    groups = [structural_pairs(faces, n, edges), shear_pairs(faces, n), bend_pairs(faces, n)]
    taken = np.zeros(0, dtype=np.int64)
    pairs, kinds = [], []
    for kind, group in enumerate(groups):
        keys = pair_keys(group[:, 0], group[:, 1], n)
        fresh = ~np.isin(keys, taken)
        pairs.append(group[fresh])
        kinds.append(np.full(int(fresh.sum()), kind, dtype=np.int8))
        taken = np.concatenate([taken, keys[fresh]])
    return np.concatenate(pairs), np.concatenate(kinds)


def triangulate(faces: Faces, first=0) -> np.ndarray:
    """Fan triangulation, (t, 3) int64: a k-gon gives k - 2 triangles (see face_of_triangle).

    first: int or (m,) int, the corner each face's fan starts from (1 cuts a quad along its
    other diagonal)."""
    counts = faces.face_size - 2
    face = np.repeat(np.arange(len(faces)), counts)
    local = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    base, size = faces.face_start[face], faces.face_size[face]
    first = np.broadcast_to(np.asarray(first, dtype=np.int64), (len(faces),))[face]
    return np.stack([faces.corners[base + (first + corner) % size]
                     for corner in (np.zeros_like(local), local + 1, local + 2)], axis=1)


def triangle_areas(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(t,) float64 areas, m^2."""
    p0, p1, p2 = (vertices[triangles[:, i]] for i in range(3))
    return 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)


def lumped_masses(vertices, faces: Faces, triangles, loose_edges, density, linear_density):
    """(n,) float64 kg: each face gives density * area / k to its k corners, each loose edge
    linear_density * length / 2 to its two ends. Vertices that get nothing (isolated, or only
    in zero-area faces) get the smallest positive mass, so every particle stays finite."""
    n = len(vertices)
    tri_area = triangle_areas(vertices, triangles)
    face_area = np.bincount(faces.face_of_triangle, weights=tri_area, minlength=len(faces))
    share = np.repeat(density * face_area / faces.face_size, faces.face_size)
    mass = np.bincount(faces.corners, weights=share, minlength=n).astype(np.float64)
    if len(loose_edges):
        length = np.linalg.norm(vertices[loose_edges[:, 0]] - vertices[loose_edges[:, 1]], axis=1)
        half = 0.5 * linear_density * length
        mass += np.bincount(loose_edges[:, 0], weights=half, minlength=n)
        mass += np.bincount(loose_edges[:, 1], weights=half, minlength=n)
    empty = mass <= 0
    if np.any(empty):
        fallback = mass[~empty].min() if np.any(~empty) else 1e-3
        mass[empty] = fallback
    return mass


def drop_degenerate(pairs, kinds, vertices, min_length):
    """Remove springs shorter than min_length (coincident vertices), warning how many."""
    length = np.linalg.norm(vertices[pairs[:, 0]] - vertices[pairs[:, 1]], axis=1)
    keep = length > min_length
    dropped = int((~keep).sum())
    if dropped:
        warnings.warn(f"dropped {dropped} zero-length spring(s) between coincident vertices; "
                      "those vertices move independently (merge them in the mesh to join them)",
                      stacklevel=3)
    return pairs[keep], kinds[keep], length[keep], dropped
