"""Vectorised triangle geometry shared by the mesh collider and self-collision.

Every function works on k independent (point, triangle) pairs at once: arrays of shape (k, 3),
float64, metres. No Python loop over pairs.
"""

import itertools

import numpy as np

# Feature of the triangle that holds the closest point (Ericson, Real-Time Collision Detection 5.1.5).
FACE, VERTEX_A, VERTEX_B, VERTEX_C, EDGE_AB, EDGE_BC, EDGE_CA = range(7)


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


def cross(u, v):
    """(k, 3) u x v for (k, 3) u, v, exactly as np.cross computes it: np.cross's axis handling
    costs more than the products on the arrays of a step (several times, on a few hundred rows)."""
    out = np.empty(np.broadcast_shapes(u.shape, v.shape))
    np.multiply(u[:, 1], v[:, 2], out=out[:, 0])
    out[:, 0] -= u[:, 2] * v[:, 1]
    np.multiply(u[:, 2], v[:, 0], out=out[:, 1])
    out[:, 1] -= u[:, 0] * v[:, 2]
    np.multiply(u[:, 0], v[:, 1], out=out[:, 2])
    out[:, 2] -= u[:, 1] * v[:, 0]
    return out


def bounds(points):
    """(low (3,), high (3,)): the bounding box of points (k, 3), k >= 1 (by column where that
    is cheaper: numpy's reductions along axis 0 of a long (k, 3) array cost many times more)."""
    if len(points) < 128:  # below that, the two reductions' fixed cost is the lower
        return points.min(axis=0), points.max(axis=0)
    low = np.array([points[:, 0].min(), points[:, 1].min(), points[:, 2].min()])
    high = np.array([points[:, 0].max(), points[:, 1].max(), points[:, 2].max()])
    return low, high


def row_all(mask):
    """(k,) bool: whether every column of mask (k, m) is true in each row. Like
    np.all(mask, axis=1), which costs several times more on a few columns."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out &= mask[:, j]
    return out


def row_any(mask):
    """(k,) bool: whether any column of mask (k, m) is true in each row (np.any(mask, axis=1))."""
    out = mask[:, 0].copy()
    for j in range(1, mask.shape[1]):
        out |= mask[:, j]
    return out


def row_max(values):
    """(k,): the largest of the m columns of values (k, m) in each row (values.max(axis=1))."""
    out = values[:, 0].copy()
    for j in range(1, values.shape[1]):
        np.maximum(out, values[:, j], out=out)
    return out


def row_min(values):
    """(k,): the least of the m columns of values (k, m) in each row (values.min(axis=1))."""
    out = values[:, 0].copy()
    for j in range(1, values.shape[1]):
        np.minimum(out, values[:, j], out=out)
    return out


def vector_lengths(vectors):
    """(k,) lengths of vectors (k, 3) (np.linalg.norm along a short axis is several times slower)."""
    return np.sqrt(_dot(vectors, vectors))


def gather(array, index):
    """array[index] for an integer index array of any shape, along the first axis: the rows of an
    (n, 3) array gathered by np.take, which does it several times faster than fancy indexing
    (numpy 1.26, and 2.x as Blender 5.1 ships it)."""
    return np.take(array, index, axis=0)


def closest_points(p, a, b, c):
    """Closest point of each triangle (a, b, c) to p.

    p, a, b, c: (k, 3) float64. Returns (q (k, 3), bary (k, 3) weights of a, b, c with
    q = bary @ [a, b, c], region (k,) int8: FACE, VERTEX_*, EDGE_*). Degenerate triangles
    (zero area: coincident or collinear corners) take the closest point of their edges.
    """
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = p - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = p - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2

    k = len(p)
    bary = np.empty((k, 3))
    region = np.full(k, FACE, dtype=np.int8)
    done = np.zeros(k, dtype=bool)

    def take(mask, r, wa, wb, wc):
        # Ericson's tests are ordered: a pair belongs to the first region whose test it passes.
        nonlocal done
        mask = mask & ~done
        bary[mask, 0], bary[mask, 1], bary[mask, 2] = wa[mask], wb[mask], wc[mask]
        region[mask] = r
        done |= mask

    zero, one = np.zeros(k), np.ones(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        take((d1 <= 0) & (d2 <= 0), VERTEX_A, one, zero, zero)
        take((d3 >= 0) & (d4 <= d3), VERTEX_B, zero, one, zero)
        v = d1 / (d1 - d3)
        take((vc <= 0) & (d1 >= 0) & (d3 <= 0), EDGE_AB, 1 - v, v, zero)
        take((d6 >= 0) & (d5 <= d6), VERTEX_C, zero, zero, one)
        w = d2 / (d2 - d6)
        take((vb <= 0) & (d2 >= 0) & (d6 <= 0), EDGE_CA, 1 - w, zero, w)
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        take((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), EDGE_BC, zero, 1 - w, w)
        denom = va + vb + vc
        v, w = vb / denom, vc / denom
        take(np.isfinite(v) & np.isfinite(w), FACE, 1 - v - w, v, w)
    # Zero-area triangles (coincident or collinear corners): the tests above divide by zero or
    # by a rounding error; the closest point is then that of the nearest of the three edges.
    # (|ab x ac|^2 from the edges alone: va + vb + vc equals it too, but through p its rounding
    # error stays far above a collinear triangle's zero; below 1e-10 relative, an angle under
    # 1e-5 rad, the edges' closest point is as good)
    aa, cc = _dot(ab, ab), _dot(ac, ac)
    gram = aa * cc - _dot(ab, ac) ** 2
    flat = ~done | ~row_all(np.isfinite(bary)) | (gram <= 1e-10 * aa * cc)
    if np.any(flat):
        _closest_on_edges(p[flat], a[flat], b[flat], c[flat], bary, region, np.flatnonzero(flat))
    q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c
    return q, bary, region


def _closest_on_edges(p, a, b, c, bary, region, rows):
    """closest_points for degenerate triangles: the nearest point of the edges ab, bc and ca to
    p (all (k, 3)), written into bary and region at rows (k,)."""
    best = np.full(len(p), np.inf)
    for start, end, i, j, kind in ((a, b, 0, 1, EDGE_AB), (b, c, 1, 2, EDGE_BC), (c, a, 2, 0, EDGE_CA)):
        _, t = segment_closest(p, p, start, end)  # p as a segment of zero length
        gap = p - (start + t[:, None] * (end - start))
        dist = _dot(gap, gap)
        closer = dist < best
        best[closer] = dist[closer]
        weights = np.zeros((int(closer.sum()), 3))
        weights[:, i], weights[:, j] = 1.0 - t[closer], t[closer]
        bary[rows[closer]] = weights
        region[rows[closer]] = kind


def triangle_normals(vertices, triangles, unit=True):
    """(t, 3) float64 normals (right-handed in corner order); unit length, or 2 x area long.

    Zero-area triangles get a zero normal.
    """
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    normal = cross(b - a, c - a)
    if not unit:
        return normal
    length = np.linalg.norm(normal, axis=1)
    return normal / np.where(length > 0.0, length, 1.0)[:, None]


def barycentric(p, a, b, c):
    """(k, 3) barycentric coordinates of p projected onto the plane of each triangle (a, b, c).

    Zero-area triangles give NaN rows (which compare false with any bound).
    """
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = _dot(v0, v0), _dot(v0, v1), _dot(v1, v1)
    d20, d21 = _dot(v2, v0), _dot(v2, v1)
    denom = d00 * d11 - d01 * d01
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (d11 * d20 - d01 * d21) / denom
        w = (d00 * d21 - d01 * d20) / denom
    return np.stack([1.0 - v - w, v, w], axis=1)


def segment_triangle_hits(p0, p1, a, b, c, eps=1e-12):
    """(k,) bool: the segment p0 -> p1 crosses the triangle (a, b, c) (touching counts).

    Signed volumes: the endpoints are on opposite sides of the triangle's plane and the segment's
    line passes inside all three edges. Used by tests and the self-collision check.
    """
    def volume(u, v, w, x):
        return _dot(cross(v - u, w - u), x - u)

    s0, s1 = volume(a, b, c, p0), volume(a, b, c, p1)
    straddles = (s0 * s1 <= 0) & ((np.abs(s0) > eps) | (np.abs(s1) > eps))
    e0, e1, e2 = volume(p0, p1, a, b), volume(p0, p1, b, c), volume(p0, p1, c, a)
    inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
    return straddles & inside


def uv_sphere(radius=1.0, segments=32, rings=16, center=(0.0, 0.0, 0.0)):
    """A closed UV sphere like Blender's: (vertices (v, 3) float64, triangles (t, 3) int64),
    outward-facing, poles at +-Z. For tests, benchmarks and scripts."""
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


def segment_closest(p1, q1, p2, q2):
    """Parameters (s, t), each (k,) in [0, 1], of the closest points p1 + s (q1 - p1) and
    p2 + t (q2 - p2) of two segments (Ericson 5.1.9); parallel segments take s = 0."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    c, b = _dot(d1, r), _dot(d1, d2)
    a_safe, e_safe = np.maximum(a, 1e-300), np.maximum(e, 1e-300)
    denom = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(denom > 1e-12 * a * e, np.clip((b * f - c * e) / denom, 0.0, 1.0), 0.0)
    t = (b * s + f) / e_safe
    low, high = t < 0.0, t > 1.0
    s = np.where(low, np.clip(-c / a_safe, 0.0, 1.0), np.where(high, np.clip((b - c) / a_safe, 0.0, 1.0), s))
    return s, np.clip(t, 0.0, 1.0)


def segment_gap(p1, q1, p2, q2):
    """(gap (k, 3) from the closest point of segment 2 to that of segment 1, s (k,), t (k,)):
    the vector between the closest points of segments p1 q1 and p2 q2, with their parameters
    (segment_closest). All points (k, 3), m."""
    s, t = segment_closest(p1, q1, p2, q2)
    return (p1 + s[:, None] * (q1 - p1)) - (p2 + t[:, None] * (q2 - p2)), s, t


def push_features(positions, who, weights, normal, depth, movable):
    """Move k features (edges, triangles) so that their point with barycentric `weights` goes
    `depth` further along `normal`, in place.

    positions: (n, 3) m; who: (k, m) int vertex ids; weights: (k, m) barycentric weights;
    normal: (k, 3) unit; depth: (k,) m; movable: (n,) bool. The shares follow the inelastic
    projection of a point on the feature (weights over their sum of squares), fixed vertices
    passing their share to the others; several features at one vertex are averaged (Jacobi)."""
    weights = weights * movable[who]
    denom = np.einsum("ij,ij->i", weights, weights)
    ok = denom > 1e-12
    if not np.any(ok):
        return
    step = (weights[ok] * (depth[ok] / denom[ok])[:, None])[:, :, None] * normal[ok][:, None, :]
    index = who[ok].ravel()
    count = np.bincount(index, minlength=len(positions)).astype(np.float64)
    for axis in range(3):
        total = np.bincount(index, step[:, :, axis].ravel(), len(positions))
        positions[:, axis] += total / np.maximum(count, 1.0)


def ball_pairs(tree, points, radius):
    """(point rows (k,), tree rows (k,)) int64: the points of a scipy cKDTree within `radius`
    (scalar or per point) of each of points (p, 3)."""
    lists = tree.query_ball_point(points, radius, return_sorted=False)
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    rows = np.repeat(np.arange(len(points)), counts)
    # scipy returns one list per point; chain flattens them in C, without a Python loop body
    return rows, np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(counts.sum()))


class TooManyPairs(RuntimeError):
    """sphere_pairs would list more pairs than its limit."""


# The pair limit guards memory, so an estimate serves: of a group of more spheres than this, an
# evenly spread sample is counted and the count scaled up (an exact count costs about as much as
# listing the pairs, and is made before every large search); only an estimate over the limit is
# checked by an exact count before a search is refused.
COUNT_SAMPLE = 4096


def _count(tree, other, radius, exact=False) -> float:
    """About how many pairs of a point of cKDTree `tree` and one of cKDTree `other` lie within
    radius of each other (a tree with itself: every pair both ways, and each point with itself);
    exact: counted, not estimated."""
    from scipy.spatial import cKDTree

    points = tree.data
    if exact or len(points) <= COUNT_SAMPLE:
        return float(tree.count_neighbors(other, radius))
    step = -(-len(points) // COUNT_SAMPLE)
    sample = points[::step]
    return float(cKDTree(sample).count_neighbors(other, radius)) * len(points) / len(sample)


def _radius_groups(points, radius):
    """[(rows, k-d tree of points[rows], largest radius among them)]: the points grouped by
    radius in powers of two below the largest (at most seven groups)."""
    from scipy.spatial import cKDTree  # scipy is bundled with the extension; imported lazily

    top = float(radius.max(initial=0.0))
    level = np.zeros(len(points), dtype=np.int64)
    if top > 0.0:
        level = np.floor(np.log2(np.maximum(radius, top / 64.0) / top)).astype(np.int64)
    groups = []
    for value in np.unique(level):
        rows = np.flatnonzero(level == value)
        groups.append((rows, cKDTree(points[rows]), float(radius[rows].max())))
    return groups


# sphere_pairs: one side this many times smaller than the other is few (see there)
_FEW = 8


def _touching_box(centres, radius, others, other_radius):
    """(k,) int64 rows of the spheres (centres (c, 3), radius (c,)) that reach the bounding box
    of the spheres (others (o, 3), other_radius (o,)), in ascending order."""
    low, high = bounds(others - other_radius[:, None])[0], bounds(others + other_radius[:, None])[1]
    reach = radius[:, None]
    return np.flatnonzero(row_all((centres + reach >= low) & (centres - reach <= high)))


def sphere_pairs(points, point_radius, centres, centre_radius, limit=None, distance=False):
    """(point rows (k,), centre rows (k,)) int64: the pairs whose spheres overlap,
    |points_i - centres_j| <= point_radius_i + centre_radius_j. points (p, 3), centres (c, 3),
    radii (p,) and (c,) m, >= 0. limit: raise TooManyPairs instead of listing more candidate
    pairs than this (counted before any list is made, unless p c is within it; for more than
    COUNT_SAMPLE spheres, estimated from a sample of them, and counted exactly only when the
    estimate is over the limit, so a low estimate may let somewhat more through); None: no limit.
    distance: also return |points_i - centres_j| (k,) m.

    Both sides are grouped by radius in powers of two and every two groups are searched with
    their largest radii (one dual-tree search each, listed in C): one large sphere (a fast vertex)
    does not widen the search for all others. When one side has far fewer spheres than the
    other (a few moved vertices against a whole cloth), the other side's spheres that miss the
    few's bounding box are dropped first, so that its trees hold only the neighbourhood."""
    if len(points) == 0 or len(centres) == 0:
        none = np.zeros(0, dtype=np.int64)
        return (none, none, np.zeros(0)) if distance else (none, none)
    if len(points) * _FEW < len(centres):
        rows = _touching_box(centres, centre_radius, points, point_radius)
        found = _sphere_pairs(points, point_radius, gather(centres, rows), centre_radius[rows], limit,
                              distance)
        return (found[0], rows[found[1]], *found[2:])
    if len(centres) * _FEW < len(points):
        rows = _touching_box(points, point_radius, centres, centre_radius)
        found = _sphere_pairs(gather(points, rows), point_radius[rows], centres, centre_radius, limit,
                              distance)
        return (rows[found[0]], *found[1:])
    return _sphere_pairs(points, point_radius, centres, centre_radius, limit, distance)


def _sphere_pairs(points, point_radius, centres, centre_radius, limit, distance):
    """sphere_pairs without the first cut of the many."""
    if len(points) == 0 or len(centres) == 0:
        none = np.zeros(0, dtype=np.int64)
        return (none, none, np.zeros(0)) if distance else (none, none)
    searches = [(p_rows, p_tree, c_rows, c_tree, p_top + c_top)
                for p_rows, p_tree, p_top in _radius_groups(points, point_radius)
                for c_rows, c_tree, c_top in _radius_groups(centres, centre_radius)]
    if limit is not None and len(points) * len(centres) > limit:
        count = sum(_count(p_tree, c_tree, r) for _, p_tree, _, c_tree, r in searches)
        if count > limit:  # an estimate refuses only once the exact count confirms it
            count = sum(_count(p_tree, c_tree, r, True) for _, p_tree, _, c_tree, r in searches)
        if count > limit:
            raise TooManyPairs(f"{count:.0f} sphere pairs, more than {limit}")
    rows, cols, lengths = [], [], []
    for p_rows, p_tree, c_rows, c_tree, r in searches:
        found = p_tree.sparse_distance_matrix(c_tree, r, output_type="ndarray")
        i, j = p_rows[found["i"]], c_rows[found["j"]]
        keep = found["v"] <= point_radius[i] + centre_radius[j]
        rows.append(i[keep])
        cols.append(j[keep])
        lengths.append(found["v"][keep])
    if distance:
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(lengths)
    return np.concatenate(rows), np.concatenate(cols)


def sphere_pairs_within(centres, radius, limit=None, distance=False):
    """(i (k,), j (k,)) int64, i < j: the pairs of one set of spheres that overlap,
    |centres_i - centres_j| <= radius_i + radius_j; centres (c, 3), radius (c,) m, >= 0. Each pair
    once (sphere_pairs(c, r, c, r) lists it both ways, and every sphere with itself). limit, and
    distance (also return |centres_i - centres_j|): as for sphere_pairs."""
    if len(centres) < 2:
        none = np.zeros(0, dtype=np.int64)
        return (none, none, np.zeros(0)) if distance else (none, none)
    groups = _radius_groups(centres, radius)
    if limit is not None and len(centres) * (len(centres) - 1) // 2 > limit:
        def counted(exact):
            count = 0.0
            for g, (_, tree, top) in enumerate(groups):
                # a group with itself counts every pair both ways and every sphere with itself
                count += (_count(tree, tree, 2.0 * top, exact) - tree.n) / 2
                count += sum(_count(tree, other, top + other_top, exact)
                             for _, other, other_top in groups[g + 1:])
            return count

        # an estimate refuses only once the exact count confirms it
        if counted(False) > limit and (count := counted(True)) > limit:
            raise TooManyPairs(f"{count:.0f} sphere pairs, more than {limit}")
    rows, cols, lengths = [], [], []
    for g, (g_rows, tree, top) in enumerate(groups):
        pairs = tree.query_pairs(2.0 * top, output_type="ndarray")
        i, j = g_rows[pairs[:, 0]], g_rows[pairs[:, 1]]  # i < j: the rows are in order
        rows.append(i)
        cols.append(j)
        offset = gather(centres, i) - gather(centres, j)
        lengths.append(np.sqrt(np.einsum("ij,ij->i", offset, offset)))
        for other_rows, other, other_top in groups[g + 1:]:
            found = tree.sparse_distance_matrix(other, top + other_top, output_type="ndarray")
            i, j = g_rows[found["i"]], other_rows[found["j"]]
            rows.append(np.minimum(i, j))
            cols.append(np.maximum(i, j))
            lengths.append(found["v"])
    i, j, length = np.concatenate(rows), np.concatenate(cols), np.concatenate(lengths)
    keep = length <= radius[i] + radius[j]
    if distance:
        return i[keep], j[keep], length[keep]
    return i[keep], j[keep]
