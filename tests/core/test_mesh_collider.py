"""MeshCollider: exact closest points and inside tests against brute force, projection, no tunnelling."""

import numpy as np
import pytest

from cloth_addon.core import MeshCollider, Settings, Simulation
from cloth_addon.core.contact.distance import closest_points
from tools.scenes import grid as make_grid
from tools.scenes import uv_sphere


def _brute_closest(point, a, b, c):
    """Closest point on one triangle, the obvious way: the plane if the foot is inside, else an edge."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    foot = point - np.dot(point - a, n) * n
    inside = all(np.dot(np.cross(v - u, foot - u), n) >= 0 for u, v in ((a, b), (b, c), (c, a)))
    if inside:
        return foot
    best = None
    for u, v in ((a, b), (b, c), (c, a)):
        t = np.clip(np.dot(point - u, v - u) / np.dot(v - u, v - u), 0.0, 1.0)
        q = u + t * (v - u)
        if best is None or np.linalg.norm(point - q) < np.linalg.norm(point - best):
            best = q
    return best


def _winding_number(point, vertices, triangles):
    """Generalized winding number (Van Oosterom & Strackee solid angles), one triangle at a time."""
    total = 0.0
    for tri in triangles:
        a, b, c = (vertices[k] - point for k in tri)
        la, lb, lc = (np.linalg.norm(x) for x in (a, b, c))
        numerator = np.dot(a, np.cross(b, c))
        denominator = la * lb * lc + np.dot(a, b) * lc + np.dot(b, c) * la + np.dot(c, a) * lb
        total += 2.0 * np.arctan2(numerator, denominator)
    return total / (4.0 * np.pi)


def _box(size=(1.0, 0.6, 0.4)):
    """A closed box with an L-shaped notch: non-convex, 12 + triangles (built from two boxes' union
    is hard; a notched prism is enough): an L extruded along y."""
    lx, ly, lz = size
    outline = np.array([(0, 0), (lx, 0), (lx, lz / 2), (lx / 2, lz / 2), (lx / 2, lz), (0, lz)])
    m = len(outline)
    vertices = np.array([(x, y, z) for y in (0.0, ly) for x, z in outline], dtype=float)
    # Caps: fan-free triangulation of the L (convex pieces), front face at y=0 facing -y.
    cap = np.array([(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5)])
    front = cap[:, [0, 2, 1]]
    back = cap + m
    sides = []
    for k in range(m):
        a, b = k, (k + 1) % m
        sides += [(a, b, b + m), (a, b + m, a + m)]
    return vertices, np.concatenate([front, back, np.array(sides)])


def test_closest_points_match_brute_force():
    rng = np.random.default_rng(1)
    k = 400
    a, b, c = (rng.normal(size=(k, 3)) for _ in range(3))
    p = rng.normal(size=(k, 3)) * 2.0
    q, bary, _ = closest_points(p, a, b, c)
    expected = np.array([_brute_closest(p[i], a[i], b[i], c[i]) for i in range(k)])
    assert np.allclose(q, expected, atol=1e-9)
    assert np.allclose(bary.sum(axis=1), 1.0) and np.all(bary >= -1e-12)


def test_closest_points_outside_a_triangle_match_ericson():
    # the mesh collider's edge-and-vertex closest points, from plane coordinates, against
    # distance.closest_points (Ericson's regions) on random triangles, zero-area ones included
    rng = np.random.default_rng(3)
    vertices = rng.normal(size=(60, 3))
    triangles = rng.integers(0, 60, size=(300, 3))
    triangles = triangles[(triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2])
                          & (triangles[:, 0] != triangles[:, 2])]
    triangles[:5, 2] = triangles[:5, 0]  # coincident corners
    ends = vertices[triangles[5:8, 0]] + vertices[triangles[5:8, 1]]
    vertices[triangles[5:8, 2]] = 0.5 * ends  # collinear
    collider = MeshCollider(vertices, triangles)
    collider.surface.refresh()
    points = 1.5 * rng.normal(size=(3000, 3))
    rows, tri = np.arange(3000), rng.integers(0, len(triangles), 3000)
    tri[:40] = np.arange(40) % 8  # the degenerate ones
    plane = collider.narrow.plane_coordinates(points, rows, tri)
    out = np.flatnonzero(~(collider.narrow.outside(plane, tri) <= 0.0))
    q, bary, region, dist = collider.narrow.closest_outside(points, rows[out], tri[out], plane[out])
    corners = vertices[triangles[tri[out]]]
    q_ref, _, region_ref = closest_points(points[out], *(corners[:, k] for k in range(3)))
    assert len(out) > 2000
    assert np.allclose(dist, np.linalg.norm(points[out] - q_ref, axis=1), atol=1e-12)
    assert np.allclose(q, q_ref, atol=1e-12)
    assert np.allclose(np.einsum("ij,ijk->ik", bary, corners), q, atol=1e-12)
    regular = np.flatnonzero(tri[out] >= 8)
    assert np.array_equal(region[regular], region_ref[regular])


@pytest.mark.parametrize("shape", ["sphere", "notched_box"])
def test_closest_and_inside_match_brute_force_on_random_points(shape):
    vertices, triangles = uv_sphere(0.5, 12, 6) if shape == "sphere" else _box()
    if shape == "notched_box":
        triangles = triangles[:, ::-1]  # inward-facing on purpose: orientation is fixed by volume
    collider = MeshCollider(vertices, triangles)
    assert collider.closed.all()
    rng = np.random.default_rng(2)
    centre = vertices.mean(axis=0)
    points = centre + rng.uniform(-0.8, 0.8, size=(150, 3))
    closest, distance, inside, triangle = collider.closest(points)
    near, far, near_inside, _ = collider.closest(points, max_distance=0.1)
    for i, point in enumerate(points):
        candidates = [_brute_closest(point, *vertices[t]) for t in triangles]
        best = min(np.linalg.norm(point - q) for q in candidates)
        assert distance[i] == pytest.approx(best, abs=1e-9)
        assert inside[i] == (_winding_number(point, vertices, triangles) > 0.5)
        if best <= 0.1:
            assert far[i] == pytest.approx(best, abs=1e-9) and near_inside[i] == inside[i]
        else:
            assert far[i] == np.inf
    assert inside.any() and (~inside).any()


def _particles(points):
    points = np.array(points, dtype=float)
    return points, points.copy(), np.ones(len(points), dtype=bool)


def test_project_pushes_points_out_of_a_closed_mesh_to_the_reach():
    vertices, triangles = uv_sphere(0.5, 16, 8)
    collider = MeshCollider(vertices, triangles, thickness=0.01)
    rng = np.random.default_rng(3)
    points = rng.normal(size=(200, 3))
    points *= rng.uniform(0.05, 0.52, size=(200, 1)) / np.linalg.norm(points, axis=1, keepdims=True)
    positions, previous, movable = _particles(points)
    movable[:5] = False
    collider.project(positions, previous, movable, margin=0.005, friction=0.0)
    _, distance, inside, _ = collider.closest(positions)
    assert not inside[5:].any()
    assert np.all(distance[5:] >= 0.015 - 1e-9)
    assert np.array_equal(positions[:5], points[:5]), "pinned particles do not move"


def test_open_plane_collides_from_both_sides_and_is_not_tunnelled():
    plane = MeshCollider([(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)], [(0, 1, 2), (0, 2, 3)])
    previous = np.array([(0.1, 0.1, 0.3), (0.2, -0.1, -0.3), (0.0, 0.0, 0.5), (3.0, 0.0, 0.5)])
    positions = np.array([(0.1, 0.1, -0.7), (0.2, -0.1, 0.9), (0.0, 0.0, 0.004), (3.0, 0.0, -0.5)])
    plane.project(positions, previous, np.ones(4, dtype=bool), margin=0.01, friction=0.0)
    assert positions[0, 2] == pytest.approx(0.01)   # came from above, fast: back above
    assert positions[1, 2] == pytest.approx(-0.01)  # came from below: back below
    assert positions[2, 2] == pytest.approx(0.01)   # resting too close: out to the margin
    assert positions[3, 2] == pytest.approx(-0.5)   # beside the plane: untouched


def test_a_particle_crossing_the_floor_of_an_open_corner_stays_in_the_corner():
    """An open floor-and-wall corner (floor z = 0 for x <= 0, wall x = 0): a particle that
    crosses the floor near the wall and ends behind the wall goes back into the corner, not
    straight up along the floor's normal, which would leave it behind the wall for good."""
    vertices = np.array([(-1, -1, 0), (0, -1, 0), (0, 1, 0), (-1, 1, 0), (0, -1, 1), (0, 1, 1)], dtype=float)
    mesh = MeshCollider(vertices, [(0, 1, 2), (0, 2, 3), (1, 4, 5), (1, 5, 2)])
    previous = np.array([[-0.05, 0.0, 0.05]])
    positions = np.array([[0.02, 0.0, -0.1]])
    mesh.project(positions, previous, np.ones(1, dtype=bool), margin=0.005)
    assert positions[0, 0] < 0.0 and positions[0, 2] > 0.0


def test_a_path_past_a_corner_is_caught_though_each_end_is_clear_of_the_box():
    # start above the box, end beside it: neither end is near the box, but the path cuts
    # through its upper left corner (any quick "nothing near" test must take the whole path)
    vertices, triangles = _box()
    collider = MeshCollider(vertices, triangles, thickness=0.002)
    previous = np.array([(0.45, 0.3, 0.9)])
    positions = np.array([(-0.45, 0.3, -0.3)])
    collider.project(positions, previous, np.ones(1, dtype=bool), margin=0.005, friction=None)
    assert positions[0, 2] >= 0.4, "back on the top it came through"
    far = np.array([(2.0, 0.3, 0.8)])
    collider.project(far, far + (0.0, 0.0, 0.1), np.ones(1, dtype=bool), margin=0.005, friction=None)
    assert np.array_equal(far, [(2.0, 0.3, 0.8)]), "one far away is left alone"


def test_thin_plane_moving_one_metre_per_frame_does_not_tunnel():
    # A floating sheet (no gravity) and a thin two-triangle plane sweeping up through it at 1 m/frame.
    vertices, faces, _ = make_grid(7, 7, 0.6, "xy")
    vertices = vertices - (0.3, 0.3, 0.0)
    plane_vertices = np.array([(-2, -2, 0), (2, -2, 0), (2, 2, 0), (-2, 2, 0)], dtype=float)
    plane = MeshCollider(plane_vertices + (0, 0, -0.55), [(0, 1, 2), (0, 2, 3)])
    for solver in ("verlet", "fast_mass_spring"):
        plane.update(plane_vertices + (0, 0, -0.55))
        plane.previous_vertices = plane.vertices
        settings = Settings(solver=solver, gravity=(0, 0, 0), collision_distance=0.01)
        sim = Simulation(vertices, faces, settings, colliders=[plane])
        for frame in range(1, 4):
            height = -0.55 + frame * 1.0
            plane.update(plane_vertices + (0, 0, height))
            sim.step(1)
            assert sim.positions[:, 2].min() >= height + 0.01 - 1e-6, (solver, frame)


def test_friction_acts_on_the_motion_relative_to_a_moving_surface():
    plane_vertices = np.array([(-2, -2, 0), (2, -2, 0), (2, 2, 0), (-2, 2, 0)], dtype=float)
    moved = []
    for mu in (0.0, 10.0, 100.0):
        plane = MeshCollider(plane_vertices, [(0, 1, 2), (0, 2, 3)], friction=mu)
        positions, previous, movable = _particles([(0.0, 0.0, 0.01)])  # resting on it, at the margin
        plane.update(plane_vertices + (0.05, 0.0, 0.0))  # the surface slides 5 cm along x
        positions[0, 2] -= 0.001  # pressed 1 mm into it (gravity)
        plane.project(positions, previous, movable, margin=0.01, friction=0.0)
        assert positions[0, 2] == pytest.approx(0.01)
        moved.append(positions[0, 0])
    # Coulomb in positions: the relative slide (5 cm) is cut by mu x depth (1 mm), at most all of it.
    assert moved == pytest.approx([0.0, 0.01, 0.05])


def test_deterministic_and_finite():
    vertices, triangles = uv_sphere(0.3, 16, 8, center=(0.5, 0.5, 0.0))
    grid, faces, _ = make_grid(12, 12, 1.0, "xy")
    grid = grid + (0.0, 0.0, 0.5)
    runs = []
    for _ in range(2):
        sim = Simulation(grid, faces, Settings(), colliders=[MeshCollider(vertices, triangles)])
        sim.step(20)
        runs.append(np.array(sim.positions))
    assert np.all(np.isfinite(runs[0])) and np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("args, message", [
    (([(0, 0, 0), (1, 0, 0)], [(0, 1, 2)]), "out of range"),
    (([(0, 0, 0), (1, 0, 0), (0, 1, 0)], np.zeros((0, 3), int)), "non-empty"),
    (([(0, 0, 0), (1, 0, 0), (0, 1, np.nan)], [(0, 1, 2)]), "finite"),
    (([(0, 0), (1, 0), (0, 1)], [(0, 1, 2)]), "shape"),
    (([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0.0, 1.0, 2.0)]), "integer"),
])
def test_invalid_input_raises_value_error(args, message):
    with pytest.raises(ValueError, match=message):
        MeshCollider(*args)


def test_update_with_other_topology_raises():
    collider = MeshCollider([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)])
    with pytest.raises(ValueError, match="same topology"):
        collider.update(np.zeros((4, 3)))


@pytest.mark.parametrize("shape", ["sphere", "notched_box"])  # tree and dense candidate searches
@pytest.mark.parametrize("moving", [False, True])
def test_prepared_candidates_give_the_same_contacts_as_a_fresh_lookup(shape, moving):
    vertices, triangles = uv_sphere(0.5, 16, 8) if shape == "sphere" else _box()
    start = vertices - (0.03, 0.0, 0.02) if moving else vertices
    rng = np.random.default_rng(4)
    centre = vertices.mean(axis=0)
    direction = rng.normal(size=(300, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    previous = centre + direction * rng.uniform(0.3, 0.7, size=(300, 1))
    positions = previous + rng.normal(scale=0.01, size=(300, 3))
    # fast particles, far from the surface when the candidates were looked up: through it
    positions[:30] = centre + 0.2 * direction[:30]
    movable = np.ones(300, dtype=bool)
    movable[-5:] = False
    results = []
    for prepared in (False, True):
        collider = MeshCollider(start, triangles, thickness=0.002)
        collider.update(vertices)
        if prepared:
            collider.remember_near(previous, 0.03, movable, sweep_from=start)
        moved = positions.copy()
        collider.project(moved, previous, movable, margin=0.005, friction=None, sweep_from=start)
        results.append((moved, *collider.contact_normals(moved, 0.01, movable, start)))
        _, _, inside, _ = collider.closest(moved)
        assert not inside[:30].any(), "a particle crossing the surface is caught, whatever the cache"
    (x, rows, normal, surface), (x_prepared, rows_prepared, normal_prepared, surface_prepared) = results
    assert np.allclose(x, x_prepared, atol=1e-12)
    assert np.array_equal(rows, rows_prepared) and len(rows) > 50
    assert np.allclose(normal, normal_prepared, atol=1e-9)
    assert np.allclose(surface, surface_prepared, atol=1e-12)


@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_contact_normals_after_a_projection_equal_a_fresh_lookup(shape):
    # contact_normals reuses the closest points of the last projection for the particles that
    # have not moved since; those moved afterwards (another collider's pass, an edge contact)
    # must be looked up again, a little or far
    vertices, triangles = uv_sphere(0.5, 16, 8) if shape == "sphere" else _box()
    rng = np.random.default_rng(7)
    centre = vertices.mean(axis=0)
    direction = rng.normal(size=(400, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    surface = MeshCollider(vertices, triangles).closest(centre + direction)[0]
    previous = surface + direction * rng.uniform(0.0, 0.02, size=(400, 1))
    positions = previous + rng.normal(scale=0.004, size=(400, 3))
    positions[150:160] = previous[150:160] = surface[150:160] + 0.05 * direction[150:160]
    movable = np.ones(400, dtype=bool)
    movable[:10] = False
    used = MeshCollider(vertices, triangles, thickness=0.002)
    used.project(positions, previous, movable, margin=0.005, friction=None)
    positions[100:140] += rng.normal(scale=0.003, size=(40, 3))  # a little: within reach or not
    positions[140:150] -= 0.03 * direction[140:150]  # far, towards the body
    positions[150:160] = surface[150:160] + 0.004 * direction[150:160]  # from beyond the pairs
    fresh = MeshCollider(vertices, triangles, thickness=0.002)
    rows, normal, moved = used.contact_normals(positions, 0.006, movable, used.vertices)
    rows_fresh, normal_fresh, moved_fresh = fresh.contact_normals(positions, 0.006, movable, fresh.vertices)
    assert np.array_equal(rows, rows_fresh) and len(rows) > 100
    assert np.any((rows >= 100) & (rows < 150)), "some moved particles still touch"
    assert np.all(np.isin(np.arange(150, 160), rows)), "and those that came from afar touch"
    assert np.allclose(normal, normal_fresh, atol=1e-9)
    assert np.array_equal(moved, moved_fresh)
    # particles the projection was not asked to move (pinned then) are looked up when they are now
    everyone = np.ones(400, dtype=bool)
    rows, normal, _ = used.contact_normals(positions, 0.006, everyone, used.vertices)
    rows_fresh, normal_fresh, _ = fresh.contact_normals(positions, 0.006, everyone, fresh.vertices)
    assert np.array_equal(rows, rows_fresh) and np.any(rows < 10)
    assert np.allclose(normal, normal_fresh, atol=1e-9)


def test_update_with_the_same_vertices_keeps_the_collider_still():
    collider = MeshCollider([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)])
    vertices = collider.vertices
    collider.update(vertices.copy())
    assert collider.vertices is vertices
    collider.update(vertices + (0.0, 0.0, 0.1))
    assert collider.vertices is not vertices and collider.vertices[0, 2] == pytest.approx(0.1)


def test_prepared_for_another_cloth_is_not_used():
    vertices, triangles = uv_sphere(0.5, 16, 8)
    collider = MeshCollider(vertices, triangles)
    collider.remember_near(np.zeros((50, 3)), 0.1, np.ones(50, dtype=bool))  # a cloth of 50 particles
    positions, previous, movable = _particles([(0.0, 0.0, 0.45), (0.0, 0.0, 0.8)])  # and one of 2
    collider.project(positions, previous, movable, margin=0.01, friction=0.0)
    _, distance, inside, _ = collider.closest(positions)
    assert not inside.any() and distance[0] == pytest.approx(0.01)
    assert positions[1] == pytest.approx((0.0, 0.0, 0.8))


def _distances(points, vertices, triangles):
    """(n, t) exact distances of points (n, 3) to every triangle, brute force."""
    n, t = len(points), len(triangles)
    corners = vertices[triangles]
    every = np.repeat(points, t, axis=0)
    q, _, _ = closest_points(every, *(np.tile(corners[:, k], (n, 1)) for k in range(3)))
    return np.linalg.norm(every - q, axis=1).reshape(n, t)


def test_closest_near_a_finely_meshed_curved_body_matches_brute_force():
    # Points just above and below a sphere of 8,000 triangles, many straight over a vertex or an
    # edge, where no triangle's plane holds the foot of the closest point: the narrow phase then
    # tests each point's pair of least bound first and prunes the rest with it (narrow_phase.py).
    vertices, triangles = uv_sphere(0.5, 96, 44)
    collider = MeshCollider(vertices, triangles)
    assert len(triangles) > 64  # the fine path, not the box's
    rng = np.random.default_rng(7)
    rim = vertices[triangles[:, [0, 1]]].mean(axis=1)  # edge midpoints
    feet = np.concatenate([vertices[rng.choice(len(vertices), 150)], rim[rng.choice(len(rim), 150)],
                           rng.normal(size=(150, 3))])
    direction = feet / np.linalg.norm(feet, axis=1)[:, None]
    points = direction * (0.5 + rng.uniform(-0.03, 0.03, size=(len(feet), 1)))
    closest, distance, inside, triangle = collider.closest(points, max_distance=0.05)
    every = _distances(points, vertices, triangles)
    best = every.min(axis=1)
    assert np.all(best < 0.05)
    assert distance == pytest.approx(best, abs=1e-12)
    assert np.linalg.norm(points - closest, axis=1) == pytest.approx(best, abs=1e-12)
    assert every[np.arange(len(points)), triangle] == pytest.approx(distance, abs=1e-12)
    assert np.array_equal(inside, np.linalg.norm(points, axis=1) < np.linalg.norm(closest, axis=1))
    # the bound that prunes is never above a pair's exact distance
    rows, tri = np.nonzero(every < 0.1)
    narrow = collider.narrow
    bound = narrow.lower_bound(narrow.plane_coordinates(points, rows, tri), tri)
    assert np.all(bound <= every[rows, tri] ** 2 * (1.0 + 1e-9) + 1e-18)


def _shell(seed, count, low, high, pinned):
    """(generator, (count, 3) points at random distances in [low, high) m from the origin in random
    directions, (count,) movable mask with the first `pinned` held)."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=(count, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    movable = np.ones(count, dtype=bool)
    movable[:pinned] = False
    return rng, direction * rng.uniform(low, high, size=(count, 1)), movable


def _pairs_of(ids, rows, tri, n):
    """The (particle, triangle) pairs of a select answer as a set of tuples."""
    assert len(ids) == len(np.unique(ids)) and np.all(ids < n)
    return set(zip(ids[rows].tolist(), tri.tolist(), strict=True))


@pytest.mark.parametrize("moving", [False, True])
def test_remembered_pairs_hold_what_each_query_asks_brute_force(moving):
    # a ball on a large floor: their centroids are searched in two size groups
    ball, ball_triangles = uv_sphere(0.5, 24, 12)
    floor = np.array([(-1.5, -1.5, -0.55), (1.5, -1.5, -0.55), (1.5, 1.5, -0.55), (-1.5, 1.5, -0.55)])
    vertices = np.concatenate([ball, floor])
    triangles = np.concatenate([ball_triangles, len(ball) + np.array([(0, 1, 2), (0, 2, 3)])])
    start = vertices - (0.02, 0.0, 0.01) if moving else vertices
    collider = MeshCollider(start, triangles)
    collider.update(vertices)
    rng, centre, movable = _shell(7, 240, 0.35, 0.7, pinned=8)
    collider.remember_near(centre, 0.12, movable, sweep_from=start)
    assert len(collider.surface.groups) > 1
    # a later substep that reuses them: its own, smaller reach around where the cloth is now
    positions = centre + rng.normal(scale=0.01, size=centre.shape)
    collider.remember_near(positions, 0.06, movable, sweep_from=start)
    now, then = _distances(positions, vertices, triangles), _distances(positions, start, triangles)
    distance = np.minimum(now, then)  # the swept triangle comes at least this near
    need = rng.uniform(0.02, 0.08, size=240)
    least = rng.uniform(0.0, 0.03, size=240)
    nearest = now.argmin(axis=1)
    inside = np.linalg.norm(positions, axis=1) < 0.45  # well inside the (closed) sphere
    assert inside[movable].sum() > 10
    for query in (dict(), dict(least=least)):
        found = _pairs_of(*collider.broad.select(positions, movable, need, start, **query), 240)
        reach = need if not query else np.minimum(need, least)
        for i in np.flatnonzero(movable):
            wanted = set(np.flatnonzero(distance[i] <= reach[i]).tolist())
            listed = {t for p, t in found if p == i}
            # deep inside with no triangle within reach: the ones that can hold its closest point
            # (with others, proximity looks those up once it finds the particle inside)
            if now[i, nearest[i]] <= need[i] or (inside[i] and not listed):
                wanted.add(int(nearest[i]))
            missing = wanted - listed
            assert not missing, f"particle {i} ({query and 'least'}) lacks triangles {sorted(missing)}"
        assert not any(p in np.flatnonzero(~movable) for p, _ in found)
    # the size-grouped centroid search against brute force
    rows, tri = collider.surface.pairs(positions, 0.05)
    listed = set(zip(rows.tolist(), tri.tolist(), strict=True))
    assert {(int(i), int(t)) for i, t in zip(*np.nonzero(now <= 0.05), strict=True)} <= listed


def test_a_rim_is_a_sharp_edge_anywhere_or_an_open_edge_near_the_points():
    """What keeps the solver's vertex step off the particles a mesh holds (contact/stage.py): a
    box's rims count wherever the cloth is; a plane's open edge only near it; a smooth closed
    body (a UV sphere) has none."""
    square = np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]])
    plane = MeshCollider(square, np.array([[0, 1, 2], [0, 2, 3]]))
    middle, edge = np.array([[0.0, 0.0, 0.02]]), np.array([[0.98, 0.3, 0.02]])
    assert not plane.rim_near(middle, 0.05)
    assert plane.rim_near(edge, 0.05)
    assert not plane.rim_near(edge, 0.01)
    assert not plane.rim_near(np.zeros((0, 3)), 0.05)
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (0.0, 1.0)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    box = MeshCollider(corners, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]))
    assert box.rim_near(np.array([[0.0, 0.0, 1.02]]), 0.05)
    vertices, triangles = uv_sphere(0.5, 32, 16)
    assert not MeshCollider(vertices, triangles).rim_near(np.array([[0.0, 0.0, 0.52]]), 0.05)


@pytest.mark.parametrize("moving", [False, True])
def test_projections_that_remember_surface_points_match_a_fresh_lookup(moving):
    # On a finely meshed body a projection bounds each particle's distance by the closest point the
    # last one found; that bound must hold on the surface as it is now (a moving body's old points
    # do not) and must not change what a projection does.
    vertices, triangles = uv_sphere(0.5, 64, 32)
    rng, positions, movable = _shell(11, 300, 0.47, 0.56, pinned=5)
    used = MeshCollider(vertices, triangles, thickness=0.002)
    pose = vertices
    for substep in range(3):
        before = pose
        if moving:
            pose = vertices + (0.004 * (substep + 1), 0.0, -0.002 * (substep + 1))
            used.update(pose)
        previous = positions.copy()
        used.remember_near(previous, 0.04, movable, sweep_from=before)
        for _ in range(3):  # the solver's iterations, then the contact stage's passes
            positions = positions + rng.normal(scale=0.003, size=positions.shape)
            expected = positions.copy()
            fresh = MeshCollider(before, triangles, thickness=0.002)
            fresh.update(pose)
            fresh.project(expected, previous, movable, margin=0.005, friction=None, sweep_from=before)
            used.project(positions, previous, movable, margin=0.005, friction=None, sweep_from=before)
            assert np.array_equal(positions, expected)
            bound = used.broad.above(positions)
            exact = used.closest(positions)[1]
            known = np.isfinite(bound)
            assert known[movable].mean() > 0.5  # most are near enough to have one
            assert np.all(bound[known] >= exact[known] - 1e-12)
