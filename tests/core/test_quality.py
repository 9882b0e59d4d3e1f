"""The measures of the Blender comparison: each against a brute-force or hand-computed answer."""

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from tools import quality
from tools.scenes import grid


def test_segment_triangle_hits_known_cases():
    a, b, c = np.array([[0.0, 0, 0]]), np.array([[1.0, 0, 0]]), np.array([[0.0, 1, 0]])

    def hits(p, q):
        return bool(quality.segment_triangle_hits(np.array([p], float), np.array([q], float), a, b, c)[0])

    assert hits((0.2, 0.2, -1), (0.2, 0.2, 1)), "through the middle"
    assert not hits((0.8, 0.8, -1), (0.8, 0.8, 1)), "past the hypotenuse"
    assert not hits((0.2, 0.2, 0.1), (0.2, 0.2, 1)), "stops short of the plane"
    assert hits((0.2, 0.2, 0.0), (0.2, 0.2, 1)), "touching counts"
    assert not hits((0.1, 0.1, 0.0), (0.3, 0.3, 0.0)), "lying in the plane is no crossing"


def test_crossing_counter_matches_brute_force():
    rng = np.random.default_rng(4)
    x = rng.uniform(0.0, 1.0, size=(40, 3))
    triangles = rng.choice(40, size=(60, 3), replace=True)
    triangles = triangles[(triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2])
                          & (triangles[:, 0] != triangles[:, 2])]
    edges = rng.choice(40, size=(80, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    brute = 0
    for a, b in edges:
        for tri in triangles:
            if a in tri or b in tri:
                continue
            brute += bool(quality.segment_triangle_hits(x[[a]], x[[b]], *(x[[k]] for k in tri))[0])
    assert brute > 0 and quality.edge_triangle_crossings(x, edges, triangles) == brute


def test_crossing_counter_with_huge_elements_matches_brute_force():
    # A few vertices flung far away (an exploded cloth) make some edges and triangles huge: they
    # are paired by brute force, the rest through the k-d tree; the total must be the same.
    x, triangles, edges = _sheet(12)
    x = x + np.random.default_rng(3).normal(scale=0.02, size=x.shape)
    x[[5, 70, 100]] = [(0.5, 0.5, 40.0), (0.4, 0.6, -30.0), (-20.0, 0.5, 0.1)]
    brute = int(sum(quality.segment_triangle_hits(x[[a]], x[[b]], *(x[[k]] for k in tri))[0]
                    for a, b in edges for tri in triangles if a not in tri and b not in tri))
    assert brute > 20 and quality.edge_triangle_crossings(x, edges, triangles) == brute


def _sheet(n=6, z=0.0):
    vertices, quads, _ = grid(n, n, 1.0, "xy")
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    edges = np.unique(np.sort(np.concatenate([quads[:, [k, (k + 1) % 4]] for k in range(4)]), axis=1), axis=0)
    return vertices + (0.0, 0.0, z), triangles, edges


def test_two_sheets_crossing_and_apart():
    flat, triangles, edges = _sheet()
    n = len(flat)
    apart = np.concatenate([flat, flat + (0.013, 0.021, 0.1)])
    both_t, both_e = np.concatenate([triangles, triangles + n]), np.concatenate([edges, edges + n])
    assert quality.edge_triangle_crossings(apart, both_e, both_t) == 0
    # One vertex of the upper sheet pushed through the lower one: its edges cross the lower sheet.
    pierced = apart.copy()
    centre = n + 3 * 6 + 2  # an inner vertex of the upper sheet (4 edges)
    pierced[centre, 2] = -0.05
    # Its 4 edges cross the lower sheet, and lower edges cross its 4 triangles that dip below.
    assert quality.edge_triangle_crossings(pierced, both_e, both_t) >= 4


def test_edge_strain_is_stretch_only():
    x, _, edges = _sheet()
    rest = quality.edge_lengths(x, edges)
    stretched = x * (1.1, 0.9, 1.0)
    strain = quality.edge_strain(stretched, edges, rest)
    along_x = np.abs(x[edges[:, 0], 0] - x[edges[:, 1], 0]) > 0
    np.testing.assert_allclose(strain[along_x], 0.1, rtol=1e-12)
    assert np.all(strain[~along_x] == 0.0), "compressed edges count as no strain"
    assert quality.percentile(strain, 95) == pytest.approx(0.1)


UNIT_CUBE = np.array([[i, j, k] for i in (0.0, 1.0) for j in (0.0, 1.0) for k in (0.0, 1.0)])


def _cube_planes():
    return quality.convex_planes(UNIT_CUBE, ConvexHull(UNIT_CUBE).simplices)


def test_point_depth_in_a_box_and_under_a_floor():
    planes = _cube_planes()
    depth = quality.point_depth(np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 0.9], [0.5, 0.5, 1.2]]), planes)
    np.testing.assert_allclose(depth, [0.5, 0.1, -0.2], atol=1e-12)
    floor = quality.half_space((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    np.testing.assert_allclose(quality.point_depth(np.array([[3.0, 4.0, -0.002]]), floor), [0.002])


def test_box_edge_between_two_cloth_vertices_is_found():
    # Both vertices are outside the unit cube; the edge between them cuts across the cube's top
    # edge along y (x = 0, z = 1). Depth along it is min(x, 1 - z): largest where they are equal.
    x = np.array([[-0.1, 0.5, 0.9], [0.1, 0.5, 1.01], [2.0, 0.5, 0.5], [2.1, 0.5, 0.5],
                  [0.4, 0.5, 0.5], [2.0, 0.5, 0.5]])
    edges = np.array([[0, 1], [2, 3], [4, 5]])
    planes = _cube_planes()
    assert np.all(quality.point_depth(x[:2], planes) < 0.0), "a vertex-only test sees nothing"
    depth = quality.edge_depth(x, edges, planes)
    t = 0.2 / 0.31
    assert depth[0] == pytest.approx(0.2 * t - 0.1, abs=1e-6)
    assert depth[1] < 0.0
    assert depth[2] == pytest.approx(0.5, abs=1e-6), "an edge with a vertex inside: the vertex's depth"
    assert int((depth > 0).sum()) == 2


def test_edge_depth_matches_dense_sampling_on_a_random_convex_body():
    rng = np.random.default_rng(7)
    points = rng.normal(size=(40, 3))
    planes = quality.convex_planes(points, ConvexHull(points).simplices)
    x = rng.uniform(-2.0, 2.0, size=(400, 3))
    edges = rng.choice(400, size=(300, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    t = np.linspace(0.0, 1.0, 4001)
    samples = x[edges[:, 0], None] + t[None, :, None] * (x[edges[:, 1]] - x[edges[:, 0]])[:, None]
    brute = quality.point_depth(samples.reshape(-1, 3), planes).reshape(len(edges), -1).max(axis=1)
    depth = quality.edge_depth(x, edges, planes)
    assert (brute > 0).sum() > 20 and (brute < 0).sum() > 20
    # Sampling can only miss the top, by at most half a sample's spacing (depth is 1-Lipschitz).
    slack = 0.5 * quality.edge_lengths(x, edges) / (len(t) - 1)
    inside = brute > 0
    assert np.all(depth[inside] >= brute[inside] - 1e-6)
    assert np.all(depth <= brute + slack + 1e-9)
    assert np.array_equal(depth > 0, inside)


def test_convex_planes_ignores_winding():
    simplices = ConvexHull(UNIT_CUBE).simplices
    one = quality.convex_planes(UNIT_CUBE, simplices)
    other = quality.convex_planes(UNIT_CUBE, simplices[:, ::-1])
    np.testing.assert_allclose(one[0], other[0])
    np.testing.assert_allclose(one[1], other[1])


def test_frame_motion_and_out_of_plane_motion():
    x, _, _ = _sheet()
    frames = np.stack([x + (0.001 * k, 0.0, 0.0) for k in range(11)])
    frames[-1, 0] += (0.0, 0.0, 0.004)
    mean, largest = quality.frame_motion(frames)
    assert largest == pytest.approx(np.hypot(0.001, 0.004))
    assert mean == pytest.approx((10 * len(x) * 0.001 + np.hypot(0.001, 0.004) - 0.001) / (10 * len(x)))
    time = np.linspace(0.0, 2.0, 2001)
    waving = x[None] + 0.05 * np.sin(2 * np.pi * 3 * time)[:, None, None] * (0.0, 0.0, 1.0)
    assert quality.out_of_plane_std(waving, (0.0, 0.0, 2.0)) == pytest.approx(0.05 / np.sqrt(2), rel=1e-3)
    assert quality.out_of_plane_std(waving, (1.0, 0.0, 0.0)) == pytest.approx(0.0, abs=1e-12)
