"""How a cloth result looks, in numbers: stretch, passing through colliders and through itself, settling.

Used by the comparison with Blender's cloth (tools/bench_blender.py) and by tests, on plain arrays
(positions (n, 3) float64 in metres, edges (e, 2) and triangles (t, 3) int vertex indices), so the
same measure applies to any simulator's output. It shares no code with the contact stage it
judges: a bug there must not hide itself here.

Colliders are measured as convex bodies, each an intersection of half-spaces n . x <= offset
(outward unit normals): a box, a UV sphere's polygons, a floor (one half-space). Inside such a body
the depth of a point is its distance to the nearest face plane, exact for convex bodies.
"""

import numpy as np
from scipy.spatial import cKDTree


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


def segment_triangle_hits(p0, p1, a, b, c, eps=1e-12):
    """(k,) bool: the segment p0 -> p1 crosses the triangle (a, b, c) (touching counts).

    Signed volumes: the endpoints are on opposite sides of the triangle's plane and the segment's
    line passes inside all three edges.
    """
    def volume(u, v, w, x):
        return _dot(np.cross(v - u, w - u), x - u)

    s0, s1 = volume(a, b, c, p0), volume(a, b, c, p1)
    straddles = (s0 * s1 <= 0) & ((np.abs(s0) > eps) | (np.abs(s1) > eps))
    e0, e1, e2 = volume(p0, p1, a, b), volume(p0, p1, b, c), volume(p0, p1, c, a)
    inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    return straddles & inside


# The crossing count works in batches of edges and of candidate pairs, so that a dense pile (or
# a few huge stretched elements, which pair with much of the cloth) stays in memory.
_EDGE_BATCH = 256
_PAIR_BATCH = 200_000


def _crossing_hits(x, edges, triangles, i, j) -> int:
    """Crossings among the candidate pairs (edges[i], triangles[j]) that share no vertex."""
    count = 0
    for start in range(0, len(i), _PAIR_BATCH):
        e, t = edges[i[start:start + _PAIR_BATCH]], triangles[j[start:start + _PAIR_BATCH]]
        disjoint = ~np.any(e[:, :1] == t, axis=1) & ~np.any(e[:, 1:] == t, axis=1)
        e, t = e[disjoint], t[disjoint]
        count += int(segment_triangle_hits(x[e[:, 0]], x[e[:, 1]], x[t[:, 0]], x[t[:, 1]], x[t[:, 2]]).sum())
    return count


def edge_triangle_crossings(x, edges, triangles) -> int:
    """How many (edge, triangle) pairs that share no vertex intersect: 0 for a cloth that never
    passes through itself. Exact: only pairs whose bounding spheres (edge midpoint + half length,
    centroid + farthest corner) are apart are skipped. Positions must be finite."""
    x = np.asarray(x, dtype=np.float64)
    edges, triangles = np.asarray(edges), np.asarray(triangles)
    mid = 0.5 * (x[edges[:, 0]] + x[edges[:, 1]])
    half = 0.5 * np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    centre = x[triangles].mean(axis=1)
    radius = np.linalg.norm(x[triangles] - centre[:, None], axis=2).max(axis=1)
    reach = float(half.max() + radius.max()) if len(edges) and len(triangles) else 0.0
    centres = cKDTree(centre)
    count = 0
    # batches of edges keep the candidate list small even when a few elements are huge
    for start in range(0, len(edges), _EDGE_BATCH):
        rows = np.arange(start, min(start + _EDGE_BATCH, len(edges)))
        near = cKDTree(mid[rows]).sparse_distance_matrix(centres, reach, output_type="ndarray")
        i, j = rows[near["i"]], near["j"].astype(np.int64)
        keep = near["v"] <= half[i] + radius[j]
        count += _crossing_hits(x, edges, triangles, i[keep], j[keep])
    return count


def edge_lengths(x, edges) -> np.ndarray:
    """(e,) float64 length of each edge."""
    return np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)


def edge_strain(x, edges, rest_length) -> np.ndarray:
    """(e,) stretch of each edge: length / rest length - 1, compression counted as 0 (a cloth
    shortens an edge by folding, which is not a defect)."""
    return np.maximum(edge_lengths(x, edges) / rest_length - 1.0, 0.0)


def convex_planes(vertices, triangles):
    """(normals (f, 3), offsets (f,)): a closed convex mesh as half-spaces n . x <= offset.

    Normals are made to point away from the vertices' centroid, so the mesh's winding does not
    matter; zero-area triangles are dropped."""
    vertices = np.asarray(vertices, dtype=np.float64)
    a, b, c = (vertices[np.asarray(triangles)[:, k]] for k in range(3))
    normal = np.cross(b - a, c - a)
    length = np.linalg.norm(normal, axis=1)
    keep = length > 1e-12 * max(1.0, float(length.max(initial=0.0)))
    normal, a = normal[keep] / length[keep, None], a[keep]
    offset = _dot(normal, a)
    outward = np.where(offset - normal @ vertices.mean(axis=0) < 0.0, -1.0, 1.0)
    return normal * outward[:, None], offset * outward


def half_space(point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)):
    """(normals (1, 3), offsets (1,)): everything behind a plane (a floor's solid side)."""
    normal = np.asarray(normal, dtype=np.float64)
    normal = normal / np.linalg.norm(normal)
    return normal[None, :], np.array([normal @ np.asarray(point, dtype=np.float64)])


def point_depth(points, planes) -> np.ndarray:
    """(k,) how deep each point is inside the convex body `planes`, m; negative outside (then a
    lower bound of minus the distance)."""
    normals, offsets = planes
    return (offsets[None, :] - np.asarray(points) @ normals.T).min(axis=1)


# Golden-section steps on an edge: the bracket shrinks to 0.618^30 = 5e-7 of the edge's length.
_GOLDEN_STEPS = 30


def edge_depth(x, edges, planes) -> np.ndarray:
    """(e,) the deepest any point of each edge is inside the convex body `planes`, m (<= 0: the
    edge is outside). Finds a body's edge or corner passing between two cloth vertices, which a
    test of the vertices alone misses.

    Depth along a segment is a minimum of linear functions, hence concave, so a golden-section
    search finds its maximum. Depth is 1-Lipschitz, so only edges whose midpoint is less than
    half their length outside are searched."""
    p, q = x[edges[:, 0]], x[edges[:, 1]]
    depth = np.maximum(point_depth(p, planes), point_depth(q, planes))
    near = point_depth(0.5 * (p + q), planes) > -0.5 * np.linalg.norm(q - p, axis=1)
    if not near.any():
        return depth
    p, d = p[near], q[near] - p[near]
    lo, hi = np.zeros(len(p)), np.ones(len(p))
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    best = depth[near]
    for _ in range(_GOLDEN_STEPS):
        t1, t2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        f1 = point_depth(p + t1[:, None] * d, planes)
        f2 = point_depth(p + t2[:, None] * d, planes)
        best = np.maximum(best, np.maximum(f1, f2))
        left = f1 >= f2  # the maximum is in [lo, t2]
        hi = np.where(left, t2, hi)
        lo = np.where(left, lo, t1)
    depth[near] = best
    return depth


def percentile(values, q: float) -> float:
    """The q-th percentile of values (nan when empty)."""
    values = np.asarray(values)
    return float(np.percentile(values, q)) if values.size else float("nan")


def frame_motion(frames) -> tuple[float, float]:
    """(mean, max) distance a vertex moves from one frame to the next, m, over a sequence of
    frames (f, n, 3) with f >= 2: how far from settled a cloth is."""
    frames = np.asarray(frames, dtype=np.float64)
    step = np.linalg.norm(np.diff(frames, axis=0), axis=2)
    return float(step.mean()), float(step.max())


def out_of_plane_std(frames, normal) -> float:
    """Mean over vertices of the standard deviation in time of each vertex's distance along
    `normal`, m, over frames (f, n, 3): how much a flag keeps moving across its own plane."""
    normal = np.asarray(normal, dtype=np.float64)
    offsets = np.asarray(frames, dtype=np.float64) @ (normal / np.linalg.norm(normal))
    return float(offsets.std(axis=0).mean())
