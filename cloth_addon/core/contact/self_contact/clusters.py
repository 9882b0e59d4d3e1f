"""Clusters of the rest shape, each with its own reference motion, for the candidates' bounds.

The rest shape is cut into clusters of at most `size` vertices (halved at the median of their
longest extent, part by part). A cluster's reference motion is its vertices' mass-weighted mean
displacement; a vertex's deviation is its displacement apart from its own cluster's. Two features
a, b whose vertices deviate by at most dev_a, dev_b and whose clusters' reference motions drift
apart by at most m are at least gap - dev_a - dev_b - m apart (broad_phase.py): a whole cluster
falling, sliding or standing still costs its own pairs nothing.
"""

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ...geometry import gather


def cut(points, size):
    """(n,) int64 cluster of each of points (n, 3): the points halved at the median of their
    longest extent, part by part, until no part has more than `size` (>= 1)."""
    n = len(points)
    label = np.zeros(n, dtype=np.int64)
    count = 1
    while True:  # one pass per halving level: log2(n / size) of them
        sizes = np.bincount(label, minlength=count)
        split = np.flatnonzero(sizes > size)
        if not len(split):
            return label
        low, high = np.full((count, 3), np.inf), np.full((count, 3), -np.inf)
        np.minimum.at(low, label, points)
        np.maximum.at(high, label, points)
        key = points[np.arange(n), np.argmax(high - low, axis=1)[label]]
        order = np.lexsort((key, label))
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - start[label[order]]
        new = np.full(count, -1)
        new[split] = count + np.arange(len(split))
        upper = (new[label] >= 0) & (rank >= sizes[label] // 2)
        label[upper] = new[label[upper]]
        count += len(split)


def pairwise(mean):
    """(c, c) distances between the rows of mean (c, 3)."""
    return cdist(mean, mean)  # in C, without the (c, c, 3) offsets


def most(values, index):
    """(k,) the largest of values (m,) over each row of index (k, w): column by column, which is
    many times faster than a reduction along a short axis (geometry.row_max)."""
    out = values[index[:, 0]]
    for column in range(1, index.shape[1]):
        np.maximum(out, values[index[:, column]], out=out)
    return out


def largest(values, columns):
    """(k,) the largest of values (m,) at each column of index (w, k)."""
    out = values[columns[0]]
    for row in columns[1:]:
        np.maximum(out, values[row], out=out)
    return out


class Clusters:
    """The clusters of one ClothModel's rest shape and what the bounds need of them.

    label: (n,) int64 cluster of each vertex; count: c; mean: (c, n) sparse averaging matrix (each
    cluster's mass-weighted mean); the reach of a cluster: the vertices of every feature with a
    vertex in it (reach_vertex, grouped by cluster from reach_start)."""

    def __init__(self, model, triangles, edges, size):
        n = model.n_particles
        cluster = cut(model.rest_positions, size)
        self.label, self.count = cluster, int(cluster.max(initial=-1)) + 1
        c = self.count
        mass = np.asarray(model.mass, dtype=np.float64)
        total = np.bincount(cluster, mass, c)
        # a cluster of massless vertices (all pinned, say) takes their plain mean
        plain = total <= 0.0
        weight = np.where(plain[cluster], 1.0, mass)
        total = np.bincount(cluster, weight, c)
        self.mean = sp.csr_matrix((weight / total[cluster], (cluster, np.arange(n))), shape=(c, n))
        keys = [cluster * n + np.arange(n)]
        for features in (triangles, edges):
            for i in range(features.shape[1]):
                for j in range(features.shape[1]):
                    keys.append(cluster[features[:, i]] * n + features[:, j])
        keys = np.unique(np.concatenate(keys))
        self.reach_vertex, self.reach_cluster = keys % n, keys // n
        self.reach_start = np.searchsorted(self.reach_cluster, np.arange(c))
        self.of_triangles = cluster[triangles] if len(triangles) else np.zeros((0, 3), np.int64)
        self.of_edges = cluster[edges] if len(edges) else np.zeros((0, 2), np.int64)
        # the same, one row per corner or end (gathers along contiguous rows)
        self._triangle_rows = np.ascontiguousarray(self.of_triangles.T)
        self._edge_rows = np.ascontiguousarray(self.of_edges.T)

    def split(self, motion):
        """Motion (n, 3) as each cluster's mass-weighted mean (c, 3) and each vertex's deviation
        from its cluster's, (n,) m."""
        mean = self.mean @ motion
        rest = motion - mean[self.label]
        return mean, np.sqrt(np.einsum("ij,ij->i", rest, rest))

    def reach_largest(self, values):
        """(c,) the largest of values (n,) over each cluster's reach."""
        return np.maximum.reduceat(values[self.reach_vertex], self.reach_start)

    def apart(self, reference):
        """(c, c) m: how far the bounding spheres of the clusters' reaches at reference (n, 3) are
        apart (negative where they overlap), symmetric to the last bit."""
        centre = self.mean @ reference
        offset = gather(reference, self.reach_vertex) - gather(centre, self.reach_cluster)
        radius = np.maximum.reduceat(np.sqrt(np.einsum("ij,ij->i", offset, offset)), self.reach_start)
        apart = pairwise(centre) - radius[:, None] - radius[None, :]
        return np.minimum(apart, apart.T)

    def vf_pairs(self, p, t):
        """(3, k) flat (c, c) indices of the cluster pairs of vertex-triangle pairs (p, t) (one
        row per corner: contiguous rows gather fastest)."""
        first = self.label[p] * self.count
        return np.stack([first + corner[t] for corner in self._triangle_rows])

    def ee_pairs(self, a, b):
        """(4, k) flat (c, c) indices of the cluster pairs of edge-edge pairs (a, b)."""
        ends = self._edge_rows
        return np.stack([ends[i][a] * self.count + ends[j][b] for i in (0, 1) for j in (0, 1)])

    def vf_most(self, table, p, t):
        """(k,) the largest entry of table (c * c,) over the cluster pairs of vertex-triangle pairs
        (p, t), without listing them (vf_pairs)."""
        first, corners = self.label[p] * self.count, self._triangle_rows
        out = table[first + corners[0][t]]
        for corner in corners[1:]:
            np.maximum(out, table[first + corner[t]], out=out)
        return out

    def ee_most(self, table, a, b):
        """(k,) the largest entry of table (c * c,) over the cluster pairs of edge-edge pairs
        (a, b), without listing them (ee_pairs)."""
        ends = self._edge_rows
        a0, a1, b0, b1 = ends[0][a] * self.count, ends[1][a] * self.count, ends[0][b], ends[1][b]
        out = table[a0 + b0]
        for index in (a0 + b1, a1 + b0, a1 + b1):
            np.maximum(out, table[index], out=out)
        return out
