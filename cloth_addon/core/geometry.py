"""Vectorised geometry kernels shared by the model, the forces, the quality measures and contact.

Every function works on k independent rows at once: arrays of shape (k, 3), float64, metres. No
Python loop over rows. Contact's own kernels (closest points, pair searches) are in contact/.
"""

import numpy as np


def dot(u, v):
    """(k,) row-wise dot products of u, v (k, 3)."""
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
    return np.sqrt(dot(vectors, vectors))


def gather(array, index):
    """array[index] for an integer index array of any shape, along the first axis: the rows of an
    (n, 3) array gathered by np.take, which does it several times faster than fancy indexing
    (numpy 1.26, and 2.x as Blender 5.1 ships it)."""
    return np.take(array, index, axis=0)


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
    d00, d01, d11 = dot(v0, v0), dot(v0, v1), dot(v1, v1)
    d20, d21 = dot(v2, v0), dot(v2, v1)
    denom = d00 * d11 - d01 * d01
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (d11 * d20 - d01 * d21) / denom
        w = (d00 * d21 - d01 * d20) / denom
    return np.stack([1.0 - v - w, v, w], axis=1)
