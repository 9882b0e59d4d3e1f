"""Broad-phase kernels: pairs of overlapping spheres (or points within a radius) from scipy's k-d
trees, listed in C. Every function returns int64 row arrays, never a Python list of pairs.
"""

import itertools

import numpy as np

from ..geometry import bounds, gather, row_all


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
# A search over at most COUNT_SAMPLE spheres a side that can list no more than this many pairs
# (a few tens of MB) lists them and counts the list, instead of counting first: its count would be
# exact, so the same searches are refused, and an exact count costs about as much as the list.
LIST_FIRST = 2_000_000
# A search that measures at most this many distances between spheres measures them all (one cdist
# call in C) instead of building k-d trees per radius group: the few vertices a growth of the
# candidates or an impact zone moved, against the features near them, cost many times less so.
MEASURE_ALL = 1 << 16


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
    estimate is over the limit, so a low estimate may let somewhat more through; small searches,
    LIST_FIRST, are listed and then counted; searches of at most MEASURE_ALL distances measure
    them all and count only the overlapping pairs); None: no limit.
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


def _list_first(a, b, size):
    """Whether a search between a and b spheres that may list `size` pairs lists, then counts."""
    return a <= COUNT_SAMPLE and b <= COUNT_SAMPLE and size <= LIST_FIRST


def _measured(points, point_radius, centres, centre_radius, limit, distance, upper=False):
    """sphere_pairs from every distance between points and centres (upper: they are one set,
    and only pairs i < j are listed), in ascending order of (point, centre)."""
    from scipy.spatial.distance import cdist

    length = cdist(points, centres)
    i, j = np.nonzero(length <= point_radius[:, None] + centre_radius[None, :])
    if upper:
        keep = i < j
        i, j = i[keep], j[keep]
    if limit is not None and len(i) > limit:
        raise TooManyPairs(f"{len(i)} sphere pairs, more than {limit}")
    return (i, j, length[i, j]) if distance else (i, j)


def _sphere_pairs(points, point_radius, centres, centre_radius, limit, distance):
    """sphere_pairs without the first cut of the many."""
    if len(points) == 0 or len(centres) == 0:
        none = np.zeros(0, dtype=np.int64)
        return (none, none, np.zeros(0)) if distance else (none, none)
    if len(points) * len(centres) <= MEASURE_ALL:
        return _measured(points, point_radius, centres, centre_radius, limit, distance)
    searches = [(p_rows, p_tree, c_rows, c_tree, p_top + c_top)
                for p_rows, p_tree, p_top in _radius_groups(points, point_radius)
                for c_rows, c_tree, c_top in _radius_groups(centres, centre_radius)]
    size = len(points) * len(centres)
    listed = limit is not None and size > limit and _list_first(len(points), len(centres), size)
    if limit is not None and size > limit and not listed:
        count = sum(_count(p_tree, c_tree, r) for _, p_tree, _, c_tree, r in searches)
        if count > limit:  # an estimate refuses only once the exact count confirms it
            count = sum(_count(p_tree, c_tree, r, True) for _, p_tree, _, c_tree, r in searches)
        if count > limit:
            raise TooManyPairs(f"{count:.0f} sphere pairs, more than {limit}")
    lists = [p_tree.sparse_distance_matrix(c_tree, r, output_type="ndarray")
             for _, p_tree, _, c_tree, r in searches]
    if listed and (count := sum(len(found) for found in lists)) > limit:
        raise TooManyPairs(f"{count} sphere pairs, more than {limit}")
    rows, cols, lengths = [], [], []
    for (p_rows, _, c_rows, _, _), found in zip(searches, lists, strict=True):
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
    if len(centres) ** 2 <= MEASURE_ALL:
        return _measured(centres, radius, centres, radius, limit, distance, upper=True)
    groups = _radius_groups(centres, radius)
    size = len(centres) * (len(centres) - 1) // 2
    listed = limit is not None and size > limit and _list_first(len(centres), len(centres), size)
    if limit is not None and size > limit and not listed:
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
    if listed and (count := sum(len(part) for part in rows)) > limit:
        raise TooManyPairs(f"{count} sphere pairs, more than {limit}")
    i, j, length = np.concatenate(rows), np.concatenate(cols), np.concatenate(lengths)
    keep = length <= radius[i] + radius[j]
    if distance:
        return i[keep], j[keep], length[keep]
    return i[keep], j[keep]
