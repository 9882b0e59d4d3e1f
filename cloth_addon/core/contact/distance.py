"""Narrow-phase distance kernels: the closest points of a point and a triangle, and of two segments.

Every function works on k independent pairs at once: arrays of shape (k, 3), float64, metres.
"""

import numpy as np

from ..geometry import dot, row_all

# Feature of the triangle that holds the closest point (Ericson, Real-Time Collision Detection 5.1.5).
FACE, VERTEX_A, VERTEX_B, VERTEX_C, EDGE_AB, EDGE_BC, EDGE_CA = range(7)


def closest_points(p, a, b, c):
    """Closest point of each triangle (a, b, c) to p.

    p, a, b, c: (k, 3) float64. Returns (q (k, 3), bary (k, 3) weights of a, b, c with
    q = bary @ [a, b, c], region (k,) int8: FACE, VERTEX_*, EDGE_*). Degenerate triangles
    (zero area: coincident or collinear corners) take the closest point of their edges.
    """
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = p - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = p - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
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
        for column, weight in enumerate((wa, wb, wc)):
            np.copyto(bary[:, column], weight, where=mask)  # no index arrays, unlike bary[mask, k]
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
    aa, cc = dot(ab, ab), dot(ac, ac)
    gram = aa * cc - dot(ab, ac) ** 2
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
        dist = dot(gap, gap)
        closer = dist < best
        best[closer] = dist[closer]
        weights = np.zeros((int(closer.sum()), 3))
        weights[:, i], weights[:, j] = 1.0 - t[closer], t[closer]
        bary[rows[closer]] = weights
        region[rows[closer]] = kind


def segment_closest(p1, q1, p2, q2):
    """Parameters (s, t), each (k,) in [0, 1], of the closest points p1 + s (q1 - p1) and
    p2 + t (q2 - p2) of two segments (Ericson 5.1.9); parallel segments take s = 0."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
    c, b = dot(d1, r), dot(d1, d2)
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
