"""A collider mesh's topology and its geometry at the current vertices, rebuilt when they change.

Topology (fixed): every edge and its (up to) two triangles, and which triangles are part of a closed
surface (each of their edges shared by exactly two). Geometry: oriented face normals (a closed
part's fixed by its signed volume), angle-weighted vertex and edge pseudo-normals (Baerentzen &
Aanaes 2005), a k-d tree of the triangles' centroids, bounding boxes, and each triangle's plane
frame: (p - a) . [n, g1, g2] gives the height over the plane and the barycentric v, w of the foot.
"""

import numpy as np

from ... import geometry
from .. import sphere_search

# Meshes of up to this many triangles are paired with particles by testing every pair (one array
# operation); larger ones through the centroid tree first. A box's few triangles are so large that
# the tree would pair nearly every particle with all of them anyway, and bounds finer than a
# triangle's plane prune nothing there (narrow_phase.py).
DENSE_TRIANGLES = 64


class Surface:
    """vertices (v, 3) float64 m (reassign to move; `refresh` rebuilds what depends on them),
    triangles (t, 3) int64, closed (t,) bool."""

    def __init__(self, vertices, triangles):
        self.triangles = triangles
        self._topology()
        self.vertices = vertices
        self.geometry_of = None

    def _topology(self):
        """Edges, the triangles of each edge, and which triangles are part of a closed surface."""
        tris = self.triangles
        n = int(tris.max()) + 1
        # Edge k of a triangle goes from corner k to corner k+1: AB, BC, CA (geometry.EDGE_*).
        starts, ends = tris.ravel(), tris[:, [1, 2, 0]].ravel()
        keys = np.minimum(starts, ends) * n + np.maximum(starts, ends)
        unique, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        self.tri_edges = inverse.reshape(-1, 3)
        self.edge_count = len(unique)
        self.edge_ends = np.stack([unique // n, unique % n], axis=1)
        # the (up to) two triangles of every edge, -1 where it has only one
        order = np.argsort(inverse, kind="stable")
        first = np.searchsorted(inverse[order], np.arange(len(unique)))
        self.edge_tris = np.full((len(unique), 2), -1, dtype=np.int64)
        self.edge_tris[:, 0] = order[first] // 3
        two = counts >= 2
        self.edge_tris[two, 1] = order[first[two] + 1] // 3
        # A triangle is part of a closed surface when each of its edges has exactly two triangles.
        self.closed = np.all(counts[self.tri_edges] == 2, axis=1)

    def refresh(self):
        """Per-geometry data (normals, pseudo-normals, centroid tree), rebuilt when vertices change."""
        if self.geometry_of is self.vertices:
            return
        from scipy.spatial import cKDTree  # scipy is bundled with the extension, imported lazily

        v, tris = self.vertices, self.triangles
        normal = geometry.triangle_normals(v, tris)
        if np.any(self.closed):
            # Signed volume of the closed part: negative means its triangles face inwards.
            a, b, c = (v[tris[self.closed, k]] for k in range(3))
            if np.einsum("ij,ij->", a, np.cross(b, c)) < 0.0:
                normal[self.closed] *= -1.0
        # Angle-weighted vertex pseudo-normals and edge pseudo-normals (sum of the two faces).
        corners = v[tris]
        angles = np.empty((len(tris), 3))
        for k in range(3):  # the three corners of every triangle at once
            u = corners[:, (k + 1) % 3] - corners[:, k]
            w = corners[:, (k + 2) % 3] - corners[:, k]
            cos = np.einsum("ij,ij->i", u, w) / np.maximum(
                np.linalg.norm(u, axis=1) * np.linalg.norm(w, axis=1), 1e-300)
            angles[:, k] = np.arccos(np.clip(cos, -1.0, 1.0))
        vertex_normal = np.zeros((len(v), 3))
        edge_normal = np.zeros((self.edge_count, 3))
        for axis in range(3):
            vertex_normal[:, axis] = np.bincount(tris.ravel(), (angles * normal[:, axis, None]).ravel(),
                                                 len(v))
            edge_normal[:, axis] = np.bincount(self.tri_edges.ravel(),
                                               np.repeat(normal[:, axis], 3), self.edge_count)
        centroid = corners.mean(axis=1)
        self.normal, self.vertex_normal, self.edge_normal = normal, vertex_normal, edge_normal
        # Per triangle, the pseudo-normal of each region (distance.FACE, VERTEX_A..C, EDGE_AB..CA).
        self.features = np.concatenate([normal[:, None], vertex_normal[tris], edge_normal[self.tri_edges]],
                                        axis=1).reshape(-1, 3)
        each = np.linalg.norm(corners - centroid[:, None], axis=2).max(axis=1)
        # (t,) m, each triangle's farthest corner from its centroid (NarrowPhase.lower_bound)
        self.extent = each
        self.radius = float(each.max())
        self.tree = cKDTree(centroid)
        self.groups = _radius_groups(centroid, each, self.tree)
        self.lo, self.hi = corners.min(axis=1), corners.max(axis=1)
        self.bounds = geometry.bounds(v)
        # Plane coordinates: (p - a) . [n, g1, g2] = (height over the plane, barycentric v, w), with
        # g1, g2 the in-plane duals of the edges AB, AC; NaN for zero-area triangles.
        e1, e2 = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
        d00, d01, d11 = (np.einsum("ij,ij->i", x, y) for x, y in ((e1, e1), (e1, e2), (e2, e2)))
        self.gram = (d00, d01, d11)  # for _closest_outside
        denom = d00 * d11 - d01 * d01
        twice_area = np.sqrt(np.maximum(denom, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = np.where(denom > 0.0, denom, np.nan)[:, None]
            duals = ((d11[:, None] * e1 - d01[:, None] * e2) / denom,
                     (d00[:, None] * e2 - d01[:, None] * e1) / denom)
            # distance of each corner to the line of the opposite edge
            opposite = corners[:, [2, 0, 1]] - corners[:, [1, 2, 0]]
            self.altitude = twice_area[:, None] / np.linalg.norm(opposite, axis=2)
        self.frame = np.stack([normal, *duals], axis=1)
        self.frame_offset = np.einsum("ikj,ij->ik", self.frame, corners[:, 0])
        self.offset = self.frame_offset[:, 0]
        closed = corners[self.closed].reshape(-1, 3)
        self.closed_box = (closed.min(axis=0), closed.max(axis=0)) if len(closed) else None
        self.geometry_of = self.vertices

    def pseudo_normal(self, tri, region):
        """(k, 3) pseudo-normal of the closest feature (face, edge or vertex) of triangles `tri`."""
        return np.take(self.features, tri * 7 + region, axis=0)

    def pairs(self, points, distance):
        """(particle rows, triangle indices): the triangles that may come within `distance` (scalar
        or (k,), m) of points (k, 3): their centroids are within it plus their own radius."""
        if len(self.groups) == 1:
            return sphere_search.ball_pairs(self.tree, points, distance + self.radius)
        found = [sphere_search.ball_pairs(tree, points, distance + radius) for _, tree, radius in self.groups]
        return (np.concatenate([rows for rows, _ in found]),
                np.concatenate([ids[tri] for (ids, _, _), (_, tri) in zip(self.groups, found, strict=True)]))

    def nearest_centroid(self, points, within):
        """(k,) m: the distance from each of points (k, 3) to the nearest triangle centroid (an upper
        bound of its distance to the surface), inf where that is beyond `within` (scalar or (k,), m)."""
        self.refresh()
        within = np.broadcast_to(np.asarray(within, dtype=np.float64), len(points))
        nearest = np.full(len(points), np.inf)
        if len(points) == 0:
            return nearest
        low, high = self.bounds
        pad = within[:, None]
        ask = np.flatnonzero(geometry.row_all((points + pad >= low) & (points - pad <= high)))
        if len(ask):
            found = self.tree.query(points[ask], k=1, distance_upper_bound=float(within[ask].max()))[0]
            nearest[ask] = np.where(found <= within[ask], found, np.inf)
        return nearest

    def apart(self, distance, before, *points):
        """Whether the bounding box of the point sets (k, 3) (a cloth's start and end: its paths)
        lies more than `distance` (m) from the mesh's over its sweep from `before` (v, 3) to
        now, along some axis."""
        low, high = self.bounds
        if before is not self.vertices:
            start = geometry.bounds(before)
            low, high = np.minimum(low, start[0]), np.maximum(high, start[1])
        boxes = [geometry.bounds(p) for p in points if len(p)]
        if not boxes:
            return True
        p_low = np.min([box[0] for box in boxes], axis=0)
        p_high = np.max([box[1] for box in boxes], axis=0)
        return bool(np.any(p_low > high + distance) or np.any(p_high < low - distance))



# Triangles are grouped by their radius in powers of two below the largest, down to this fraction
# of it: a centroid search pads each group by its own largest radius, not the mesh's (a few large
# triangles on a finely meshed body would pad every query by theirs).
_SMALLEST_GROUP = 1.0 / 8.0


def _radius_groups(centroid, radius, tree):
    """[(triangle ids, k-d tree of their centroids, their largest radius)] for centroids (t, 3) and
    radii (t,) m; one group (with `tree`, of every centroid) when they are alike."""
    from scipy.spatial import cKDTree

    top = float(radius.max())
    level = np.ceil(np.log2(np.maximum(radius, top * _SMALLEST_GROUP) / top)).astype(np.int64)
    levels = np.unique(level)
    if len(levels) == 1:
        return [(np.arange(len(radius)), tree, top)]
    groups = []
    for value in levels:
        ids = np.flatnonzero(level == value)
        groups.append((ids, cKDTree(centroid[ids]), float(radius[ids].max())))
    return groups
