"""Continuous collision detection: the exact first time two features touch during a substep.

Every point moves linearly from x0 to x1 over the substep, t in [0, 1]. For a vertex p and a
triangle (a, b, c), or for two edges (p1, q1) and (p2, q2), the four points are coplanar when

    f(t) = ((b - a) x (c - a)) . (p - a)      (vertex-triangle)
    f(t) = ((q1 - p1) x (q2 - p2)) . (p2 - p1) (edge-edge)

vanishes, a cubic in t (Provot 1997; Bridson, Fedkiw, Anderson 2002). Each root in [0, 1] is a
candidate; it is a contact if at that moment the vertex lies in the triangle, or the two edges
meet, within `tolerance`. The earliest such root is the time of impact.

The roots are found without a Python loop over pairs: [0, 1] is cut at the cubic's critical
points into at most three intervals on which f is monotone, and every interval whose ends have
opposite signs (or touch zero) is bisected for all pairs at once. A pair whose four points stay
coplanar within the tolerance through the whole substep (f all but zero: a flat sheet sliding in
its own plane, layers pressed onto a floor) can touch without a root of f: it is also checked
when a point crosses the line of an edge within the plane (a quadratic), and at the start,
middle and end.
"""

import numpy as np

from ..geometry import cross, row_all, row_max
from .distance import closest_points, segment_gap

# Bisection steps: the root's position is known to 2^-BISECTIONS of the substep.
BISECTIONS = 40


def _dot(u, v):
    return np.einsum("ij,ij->i", u, v)


def cubic_coefficients(u0, du, v0, dv, w0, dw):
    """(k, 4) coefficients c0..c3 of f(t) = ((u0 + t du) x (v0 + t dv)) . (w0 + t dw).

    All arguments (k, 3) float64."""
    uv = cross(u0, v0)
    mixed = cross(u0, dv) + cross(du, v0)
    duv = cross(du, dv)
    return np.stack([_dot(uv, w0), _dot(uv, dw) + _dot(mixed, w0),
                     _dot(mixed, dw) + _dot(duv, w0), _dot(duv, dw)], axis=1)


def _evaluate(c, t):
    return ((c[:, 3] * t + c[:, 2]) * t + c[:, 1]) * t + c[:, 0]


def cubic_roots(c, scale):
    """(k, 3) roots of the cubics in [0, 1], one per monotone interval, NaN where none.

    c: (k, 4) coefficients; scale: (k,) magnitude of f below which it counts as zero
    (a touch at an interval's end is a root)."""
    k = len(c)
    # critical points: roots of c1 + 2 c2 t + 3 c3 t^2, clipped to [0, 1]
    a, b, cc = 3.0 * c[:, 3], 2.0 * c[:, 2], c[:, 1]
    crit = np.full((k, 2), 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = b * b - 4.0 * a * cc
        sq = np.sqrt(np.maximum(disc, 0.0))
        # q / a and cc / q (Numerical Recipes 5.6): no cancellation when a is tiny next to b,
        # where (-b +- sq) / 2a loses the root near -cc / b (a nearly linear motion)
        q = -0.5 * (b + np.where(b < 0.0, -sq, sq))
        r1, r2 = q / a, cc / q
        real = disc >= 0.0
        r1 = np.where(real & np.isfinite(r1), r1, 1.0)
        r2 = np.where(real & np.isfinite(r2), r2, 1.0)
    crit[:, 0], crit[:, 1] = np.clip(r1, 0.0, 1.0), np.clip(r2, 0.0, 1.0)
    crit.sort(axis=1)
    bounds = np.concatenate([np.zeros((k, 1)), crit, np.ones((k, 1))], axis=1)  # (k, 4)
    roots = np.full((k, 3), np.nan)
    for interval in range(3):  # three intervals, each for all pairs at once
        lo, hi = bounds[:, interval].copy(), bounds[:, interval + 1].copy()
        f_lo, f_hi = _evaluate(c, lo), _evaluate(c, hi)
        touch_lo = np.abs(f_lo) <= scale
        touch_hi = np.abs(f_hi) <= scale
        change = (f_lo < 0.0) != (f_hi < 0.0)
        has = (change | touch_lo | touch_hi) & (hi >= lo)
        if not np.any(has):
            continue
        rows = np.flatnonzero(has)
        lo, hi, f_lo = lo[rows], hi[rows], f_lo[rows]
        cr = c[rows]
        # a sign change is bisected; without one, a touch at an end is the root
        root = np.where(change[rows], np.nan, np.where(touch_lo[rows], lo, hi))
        todo = np.isnan(root)
        if np.any(todo):
            sub = np.flatnonzero(todo)
            l, h, fl, cs = lo[sub], hi[sub], f_lo[sub], cr[sub]
            negative = fl < 0.0
            for _ in range(BISECTIONS):
                mid = 0.5 * (l + h)
                below = (_evaluate(cs, mid) < 0.0) == negative
                l = np.where(below, mid, l)
                h = np.where(below, h, mid)
            root[sub] = 0.5 * (l + h)
        roots[rows, interval] = root
    return roots


def _at(x0, x1, t):
    return x0 + t[:, None] * (x1 - x0)


def _scale(*vectors):
    """A length scale per pair: the largest coordinate among the given (k, 3) arrays."""
    return np.max([row_max(np.abs(v)) for v in vectors], axis=0)


def _in_plane_times(point0, point1, a0, a1, b0, b1, normal, length, tolerance):
    """(k, 3) times in [0, 1] (NaN-padded) at which a point crosses the line through a, b within
    the plane whose unit normal is given: roots of the quadratic ((b - a) x (point - a)) . normal.
    All arrays (k, 3) except length (k,), m."""
    e0, de = b0 - a0, (b1 - a1) - (b0 - a0)
    r0, dr = point0 - a0, (point1 - a1) - (point0 - a0)
    coeff = np.stack([_dot(cross(e0, r0), normal),
                      _dot(cross(e0, dr) + cross(de, r0), normal),
                      _dot(cross(de, dr), normal), np.zeros(len(e0))], axis=1)
    return cubic_roots(coeff, tolerance * length)


def _plane_normal(*vectors):
    """(k, 3) unit normal of the plane the given (k, 3) directions nearly lie in: the largest of
    their pairwise cross products."""
    crosses = np.stack([cross(u, v) for i, u in enumerate(vectors) for v in vectors[i + 1:]], axis=1)
    norms = np.linalg.norm(crosses, axis=2)
    best = crosses[np.arange(len(crosses)), norms.argmax(axis=1)]
    return best / np.maximum(norms.max(axis=1), 1e-300)[:, None]


def _earliest_touch(u0, du, v0, dv, w0, dw, tolerance, gap_at, in_plane):
    """(k,) earliest root of the coplanarity cubic at which gap_at(rows, t) (the (r, 3) vector
    between the closest points then) is within tolerance; NaN where there is none.

    Pairs whose four points stay coplanar within the tolerance all along (a flat sheet sliding in
    its own plane, layers pressed flat onto a floor) touch where the cubic need not have a root:
    for those, in_plane(rows, normal, length) adds (r, m) candidate times, when a point crosses
    the line of an edge within that plane, and the start, middle and end are tried too."""
    coeff = cubic_coefficients(u0, du, v0, dv, w0, dw)
    length = _scale(u0, v0, w0, u0 + du, v0 + dv, w0 + dw) + 1e-30
    # f is a volume (length^3): zero within the tolerance of a touch
    scale = tolerance * length * length
    roots = cubic_roots(coeff, scale)
    flat = np.flatnonzero(row_all(np.abs(coeff) <= scale[:, None]))
    if len(flat):
        normal = _plane_normal(u0[flat], v0[flat], w0[flat], u0[flat] + du[flat], v0[flat] + dv[flat])
        # the cubic's own roots stay: points all but on one line have no plane of their own
        times = np.concatenate([roots[flat], np.tile([0.0, 0.5, 1.0], (len(flat), 1)),
                                in_plane(flat, normal, length[flat])], axis=1)
        times.sort(axis=1)  # NaN last
        roots = np.concatenate([roots, np.full((len(roots), times.shape[1] - 3), np.nan)], axis=1)
        roots[flat] = times
    best = np.full(len(u0), np.nan)
    for column in range(roots.shape[1]):
        t = roots[:, column]
        rows = np.flatnonzero(np.isfinite(t) & ~(best <= t))
        if not len(rows):
            continue
        gap = gap_at(rows, t[rows])
        hit = np.einsum("ij,ij->i", gap, gap) <= tolerance * tolerance
        best[rows[hit]] = t[rows][hit]
    return best


def vertex_triangle_toi(p0, p1, a0, a1, b0, b1, c0, c1, tolerance):
    """(k,) time of impact in [0, 1] of vertex p with triangle (a, b, c), NaN if they never touch.

    Arguments: (k, 3) float64 positions at the start (...0) and end (...1) of the substep, m.
    tolerance: m, how close counts as touching."""
    u0, v0, w0 = b0 - a0, c0 - a0, p0 - a0

    def gap_at(rows, t):
        p = _at(p0[rows], p1[rows], t)
        q, _, _ = closest_points(p, _at(a0[rows], a1[rows], t), _at(b0[rows], b1[rows], t),
                                 _at(c0[rows], c1[rows], t))
        return p - q

    def in_plane(rows, normal, length):
        p = (p0[rows], p1[rows])
        corners = [(a0[rows], a1[rows]), (b0[rows], b1[rows]), (c0[rows], c1[rows])]
        return np.concatenate([_in_plane_times(*p, *corners[k], *corners[(k + 1) % 3], normal, length,
                                               tolerance) for k in range(3)], axis=1)

    return _earliest_touch(u0, (b1 - a1) - u0, v0, (c1 - a1) - v0, w0, (p1 - a1) - w0, tolerance, gap_at,
                           in_plane)


def edge_edge_toi(p10, p11, q10, q11, p20, p21, q20, q21, tolerance):
    """(k,) time of impact in [0, 1] of edge (p1, q1) with edge (p2, q2), NaN if they never touch.

    Arguments: (k, 3) float64 endpoint positions at the start (...0) and end (...1), m."""
    u0, v0, w0 = q10 - p10, q20 - p20, p20 - p10

    def gap_at(rows, t):
        a, b = _at(p10[rows], p11[rows], t), _at(q10[rows], q11[rows], t)
        c, d = _at(p20[rows], p21[rows], t), _at(q20[rows], q21[rows], t)
        return segment_gap(a, b, c, d)[0]

    def in_plane(rows, normal, length):
        first = (p10[rows], p11[rows]), (q10[rows], q11[rows])
        second = (p20[rows], p21[rows]), (q20[rows], q21[rows])
        return np.concatenate([_in_plane_times(*point, *line[0], *line[1], normal, length, tolerance)
                               for point, line in [(first[0], second), (first[1], second),
                                                   (second[0], first), (second[1], first)]], axis=1)

    return _earliest_touch(u0, (q11 - p11) - u0, v0, (q21 - p21) - v0, w0, (p21 - p11) - w0,
                           tolerance, gap_at, in_plane)
