"""The contact stage: friction, moving colliders, sharp features, continuous self-contact."""

from functools import partial

import numpy as np
import pytest
from test_self_collision import edge_triangle_crossings

from cloth_addon.core import (
    ClothPart,
    MeshCollider,
    PlaneCollider,
    Settings,
    Simulation,
    SphereCollider,
)
from cloth_addon.core.contact import stage
from cloth_addon.core.contact.ccd import cubic_roots, edge_edge_toi, vertex_triangle_toi
from cloth_addon.core.contact.distance import closest_points, segment_closest, segment_gap
from cloth_addon.core.contact.mesh.sharp_features import SharpFeatures
from cloth_addon.core.contact.self_contact import SelfContact
from cloth_addon.core.model import ContactFeatures
from cloth_addon.core.solvers import fast_mass_spring
from tools.quality import segment_triangle_hits
from tools.scenes import cloth_cube, uv_sphere
from tools.scenes import grid as make_grid

SOLVERS = ["fast_mass_spring", "verlet"]


def box(size, centre):
    """A closed box mesh: (vertices (8, 3), triangles (12, 3)), outward facing."""
    sx, sy, sz = np.asarray(size) / 2.0
    v = np.array([(x, y, z) for z in (-sz, sz) for y in (-sy, sy) for x in (-sx, sx)]) + centre
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def crossings(sim):
    features = sim.model.contact_features
    return edge_triangle_crossings(np.array(sim.positions), features.edges, features.triangles)


# -- continuous collision detection -----------------------------------------------------------
def _sampled_first_touch(start, end, gap, steps=4000):
    """Brute force, for all k pairs at once: the first of `steps` sampled times at which
    gap(points at t) (k,) is below 0.3 mm, NaN where it never is. start, end: lists of (k, 3)."""
    first = np.full(len(start[0]), np.nan)
    for t in np.linspace(0.0, 1.0, steps + 1):
        close = (gap([s + t * (e - s) for s, e in zip(start, end, strict=True)]) < 3e-4) & np.isnan(first)
        first[close] = t
    return first


def _toi_against_sampling(toi_function, gap, seed):
    rng = np.random.default_rng(seed)
    k = 200
    start = [rng.uniform(0, 1, (k, 3)) for _ in range(4)]
    end = [s + rng.normal(0, 0.4, (k, 3)) for s in start]
    toi = toi_function(start[0], end[0], start[1], end[1], start[2], end[2], start[3], end[3], 1e-9)
    sampled = _sampled_first_touch(start, end, gap)
    hit = np.isfinite(toi)
    assert hit.sum() > 5
    # where it reports a touch, the features touch then, and not long before (sampling stops
    # 0.3 mm early); where it reports none, sampling finds none either
    at = toi[hit][:, None]
    assert np.all(gap([(s + at * (e - s)) for s, e in zip((v[hit] for v in start), (v[hit] for v in end),
                                                           strict=True)]) < 1e-6)
    assert np.all(np.isnan(sampled[hit]) | (sampled[hit] >= toi[hit] - 1e-2))
    assert np.all(np.isnan(sampled[~hit]))


def _point_triangle_gap(points):
    q, _, _ = closest_points(*points)
    return np.linalg.norm(points[0] - q, axis=1)


def _edge_edge_gap(points):
    a, b, c, d = points
    s, t = segment_closest(a, b, c, d)
    return np.linalg.norm(a + s[:, None] * (b - a) - c - t[:, None] * (d - c), axis=1)


def test_vertex_triangle_time_of_impact_matches_sampling():
    _toi_against_sampling(vertex_triangle_toi, _point_triangle_gap, 7)


def test_edge_edge_time_of_impact_matches_sampling():
    _toi_against_sampling(edge_edge_toi, _edge_edge_gap, 8)


def test_cubic_roots_of_an_all_but_quadratic_cubic():
    """Two edges turning in one plane, from a pile on a floor: the cubic term is 1e-17 of the
    others, where the textbook formula for the critical points cancels to nothing and both
    touches were missed."""
    c = np.array([[-3.82778059e-07, 2.31194153e-06, -1.96233715e-06, -3.53961074e-23]])
    expected = np.sort(np.roots(c[0, 2::-1]).real)  # the quadratic the cubic all but is
    roots = cubic_roots(c, np.array([1e-15]))
    np.testing.assert_allclose(np.sort(roots[np.isfinite(roots)]), expected, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_any_violent_substep_ends_without_crossings(seed):
    """The guarantee on its own: a flat sheet, every vertex thrown far in a random direction in one
    substep (the solver's result could be anything); the untangled end has no crossing."""
    rng = np.random.default_rng(seed)
    vertices, faces, _ = make_grid(12, 12, 1.0, "xy")
    contact = SelfContact(Simulation(vertices, faces).model, 0.02, 0.0)
    x1 = vertices + rng.normal(0.0, 0.15, vertices.shape)
    features = contact.model.contact_features
    assert edge_triangle_crossings(x1, features.edges, features.triangles) > 0  # thrown into itself
    contact.broad.build(vertices, x1)
    contact.untangle(vertices, x1)
    assert edge_triangle_crossings(x1, features.edges, features.triangles) == 0


# -- colliders: friction, moving bodies, sharp edges --------------------------------------------
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("slope", [0.4, 0.6])
def test_cloth_on_an_incline_slides_iff_tan_theta_exceeds_mu(solver, slope):
    mu = 0.5
    normal = np.array([-slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
    down_slope = np.array([-1.0, 0.0, -slope]) / np.hypot(slope, 1.0)
    vertices, faces, _ = make_grid(6, 6, 0.2, "xy")
    # lay the patch on the incline, resting at the contact distance
    tangent = np.array([1.0, 0.0, slope]) / np.hypot(slope, 1.0)
    start = (vertices[:, :1] - 0.1) * tangent + (vertices[:, 1:2] - 0.1) * (0, 1, 0) + 0.005 * normal
    plane = PlaneCollider((0, 0, 0), normal, friction=mu)
    sim = Simulation(start, faces, Settings(solver=solver, air_drag=0.0), colliders=[plane])
    sim.step(24)
    slid = float(np.mean((sim.positions - start) @ down_slope))
    if slope < mu:
        assert slid < 0.005, "static friction holds it"
    else:
        # kinetic: a = g (sin - mu cos) = 0.9 m/s^2 along the slope -> ~0.45 m in 1 s
        assert slid > 0.2


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_moving_box_carries_the_cloth_lying_on_it(solver):
    v, tris = box((1.0, 1.0, 0.2), (0.0, 0.0, 0.1))
    table = MeshCollider(v, tris, friction=0.8)
    vertices, faces, _ = make_grid(8, 8, 0.4, "xy")
    vertices = vertices - (0.2, 0.2, -0.205)
    sim = Simulation(vertices, faces, Settings(solver=solver), colliders=[table])
    sim.step(12)  # settle on the box
    before = np.array(sim.positions)
    speed = 0.3 / 24  # 0.3 m/s along x
    for frame in range(1, 25):
        table.update(v + (speed * frame, 0.0, 0.0))
        sim.step(1)
    carried = float(np.mean(sim.positions[:, 0] - before[:, 0]))
    assert carried == pytest.approx(0.3, rel=0.15), "the cloth rides along with the box"


def _worst_p95_strain_over_a_box(solver, iterations, frames):
    """A 1 m sheet (24 x 24) falls onto a 0.6 m box and drapes over its rim: the largest
    per-frame 95th percentile of edge stretch."""
    vertices, faces, _ = make_grid(24, 24, 1.0, "xy")
    vertices = vertices - vertices.mean(axis=0) + (0.0, 0.0, 0.7)
    table = MeshCollider(*box((0.6, 0.6, 0.5), (0.0, 0.0, 0.25)), thickness=0.02)  # Blender's default
    sim = Simulation(vertices, faces, Settings(solver=solver, iterations=iterations),
                     colliders=[table, PlaneCollider()])
    edges = sim.model.contact_features.edges
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    worst = 0.0
    for _ in range(frames):
        sim.step(1)
        x = sim.positions
        stretch = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1.0
        worst = max(worst, float(np.percentile(stretch, 95)))
    return worst


@pytest.mark.parametrize(("solver", "counts", "frames"), [("fast_mass_spring", (2, 4, 20), 36),
                                                         ("newton", (2, 8), 20)])
def test_contact_in_the_iterations_stretches_the_cloth_less_the_more_iterations_run(solver, counts, frames):
    """The implicit solvers' iterations see collider contact as forces on the touching particles
    alone. Projecting the iterates only had the next global step (Newton step) pull the
    contact's neighbours towards the collider, and Chebyshev's extrapolation along the changing
    contact forces set it vibrating: a cloth over a table's rim stretched more the more
    iterations ran (fast solver: 10.0% at 2 iterations, 11.5% at 4, 13.5% at 20)."""
    worst = [_worst_p95_strain_over_a_box(solver, count, frames) for count in counts]
    assert all(later <= earlier for earlier, later in zip(worst[:-1], worst[1:], strict=True)), worst
    assert worst[-1] < 0.02


def _worst_p95_strain_of_a_curtain_pushed_by_a_ball(frames=40):
    """A 2 m curtain (25 x 25, top row pinned), a 0.3 m ball moving through it at 1 m/s: the
    largest per-frame 95th percentile of edge stretch."""
    vertices, faces, _ = make_grid(25, 25, 2.0, "xz")
    vertices = vertices - vertices.mean(axis=0) + (0.0, 0.0, 1.2)
    pins = np.flatnonzero(np.isclose(vertices[:, 2], vertices[:, 2].max()))
    ball = SphereCollider((0.0, -0.8, 1.2), 0.3, thickness=0.02, friction=0.5)
    sim = Simulation(vertices, faces, Settings(), colliders=[ball], pinned=pins)
    edges = sim.model.contact_features.edges
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    worst = 0.0
    for frame in range(1, frames + 1):
        ball.center = np.array((0.0, -0.8 + frame / 24.0, 1.2))
        sim.step(1)
        x = sim.positions
        stretch = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1.0
        worst = max(worst, float(np.percentile(stretch, 95)))
    return worst


def test_contact_forces_carried_over_substeps_keep_a_pushed_curtain_from_stretching(monkeypatch):
    """A touching particle starts a substep's iterations with most of the contact force it ended
    the last one with: with the default two iterations the ball's push then spreads through the
    curtain instead of stretching the cloth around the ball: without the extra iteration a hard
    contact may add (which takes up part of what the memory does), and with the defaults."""
    default_warm = _worst_p95_strain_of_a_curtain_pushed_by_a_ball()
    monkeypatch.setattr(fast_mass_spring, "CONTACT_EXTRA", 0)
    warm = _worst_p95_strain_of_a_curtain_pushed_by_a_ball()
    monkeypatch.setattr(stage, "CONTACT_MEMORY", 0.0)
    cold = _worst_p95_strain_of_a_curtain_pushed_by_a_ball()
    monkeypatch.setattr(fast_mass_spring, "CONTACT_EXTRA", 1)
    default_cold = _worst_p95_strain_of_a_curtain_pushed_by_a_ball()
    assert warm < 0.035
    # (the vertex step, kept out of the colliders along their push, takes up part of it too)
    assert warm < 0.8 * cold
    # with the defaults it still pays, if less: the vertex Newton step after the iterations
    # (solvers/vertex_newton.py) takes up part of what the memory does (0.89 of cold)
    assert default_warm < 0.95 * default_cold


BOX = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (0.0, 0.75)])
BOX_TRIANGLES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7],
                          [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def _tablecloth_landing_on_a_box(monkeypatch, extra):
    """A 1.6 m tablecloth (44 x 44) dropped 0.3 m onto a 1 x 1 x 0.75 m box (a MeshCollider) on a
    floor, with up to `extra` contact iterations: (largest per-frame 95th percentile of quad-edge
    stretch, extra iterations in each of the 40 frames)."""
    monkeypatch.setattr(fast_mass_spring, "CONTACT_EXTRA", extra)
    vertices, faces, _ = make_grid(44, 44, 1.6, "xy")
    vertices = vertices - vertices.mean(axis=0) + (0.0, 0.0, 1.05)
    colliders = [MeshCollider(BOX, BOX_TRIANGLES), PlaneCollider()]
    sim = Simulation(vertices, faces, Settings(), colliders=colliders)
    edges = np.unique(np.sort(np.concatenate([faces[:, [k, (k + 1) % 4]] for k in range(4)]), axis=1), axis=0)
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    worst, extras = 0.0, []
    for _ in range(40):
        before = sim.solver.extra_iterations
        sim.step(1)
        extras.append(sim.solver.extra_iterations - before)
        x = sim.positions
        stretch = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1) / rest - 1.0
        worst = max(worst, float(np.percentile(stretch, 95)))
    return worst, extras


def test_a_landing_on_a_box_stays_unstretched_and_only_the_landing_gets_extra_iterations(monkeypatch):
    """Where a contact's projection still moves the cloth by more than CONTACT_TOLERANCE edge
    lengths in the last iteration, the springs have not seen it, and one more iteration lets them
    take it up. Only the substeps where the cloth lands may pay for it: free fall and the cloth at
    rest on the box run the iterations asked for. The landing's jolt on the box's rim stays out of
    the stretch with or without it (the vertex Newton step, kept off what a mesh collider holds,
    no longer fights the rim's projection, which once needed an extra iteration in most of the
    landing's frames)."""
    plain, none = _tablecloth_landing_on_a_box(monkeypatch, 0)
    landing, extras = _tablecloth_landing_on_a_box(monkeypatch, 1)
    assert sum(none) == 0
    assert sum(extras[6:16]) > 0  # the landing
    assert sum(extras[:6]) == 0  # still falling (it reaches the box in frame 7)
    assert sum(extras[20:]) == 0  # lying on the box
    assert plain < 0.035 and landing < 0.035


def _fast_mesh_ball_through_a_curtain(speed, frames=12):
    """A 1.2 m curtain (30 x 30, top row pinned) hit by a 0.2 m ball mesh (a MeshCollider, as a
    character or any non-spherical body would be) moving at `speed` m/s: (largest edge stretch,
    deepest any cloth edge reaches into the ball, m), over every frame."""
    vertices, faces, _ = make_grid(30, 30, 1.2, "xz")
    vertices = vertices - vertices.mean(axis=0) + (0.0, 0.0, 1.0)
    pins = np.flatnonzero(np.isclose(vertices[:, 2], vertices[:, 2].max()))
    sphere, triangles = uv_sphere(0.2, 32, 16)
    start = np.array((0.0, -0.4, 1.0))
    ball = MeshCollider(sphere + start, triangles, thickness=0.02, friction=0.5)
    sim = Simulation(vertices, faces, Settings(), colliders=[ball], pinned=pins)
    edges = sim.model.contact_features.edges
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    stretch, depth = 0.0, -np.inf
    for frame in range(1, frames + 1):
        centre = start + (0.0, speed * frame / 24.0, 0.0)
        ball.update(sphere + centre)
        sim.step(1)
        x = sim.positions
        lengths = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
        stretch = max(stretch, float(np.max(lengths / rest - 1.0)))
        # an edge's point nearest the ball's centre, against the mesh's inscribed radius
        a, b = x[edges[:, 0]] - centre, x[edges[:, 1]] - centre
        t = np.clip(-np.einsum("ij,ij->i", a, b - a) / np.einsum("ij,ij->i", b - a, b - a), 0.0, 1.0)
        nearest = np.linalg.norm(a + t[:, None] * (b - a), axis=1)
        depth = max(depth, float(0.2 * np.cos(np.pi / 16) - nearest.min()))
    return stretch, depth


@pytest.mark.parametrize(("speed", "most_stretch"), [(1.0, 0.3), (8.0, 4.0), (12.0, 4.0)])
def test_a_fast_mesh_ball_pushes_the_cloth_aside_instead_of_dragging_it_to_tearing(speed, most_stretch):
    """A particle that a moving mesh swept into is pushed out through the nearest surface, so the
    cloth slides round a fast body. Held to the one triangle it entered, a particle could slide
    at most a triangle a substep: at 8 and 12 m/s the ball dragged the curtain until edges
    stretched 14- and 26-fold and cut 90-140 mm into it (an exact sphere collider, 1.2- and
    0.25-fold: a pinned curtain struck that fast does stretch)."""
    stretch, depth = _fast_mesh_ball_through_a_curtain(speed)
    assert depth < 0.0, "a cloth edge inside the ball"
    assert stretch < most_stretch


def _inside_box(points, lo, hi):
    return np.all((points > lo) & (points < hi), axis=1)


def _sharp(vertices, triangles):
    collider = MeshCollider(vertices, triangles)
    surface = collider.surface
    surface.refresh()
    features = SharpFeatures(collider.vertices, collider.triangles, surface.normal, surface.edge_ends,
                             surface.edge_tris, collider.closed)
    return len(features.edge_ends), len(features.corners)


def test_sharp_features_are_a_box_s_rims_and_corners_not_a_sphere_s_facets():
    assert _sharp(*box((1.0, 1.0, 0.75), (0.0, 0.0, 0.375))) == (12, 8)  # not the faces' diagonals
    cube, quads = cloth_cube(4, 1.0)  # each rim in three edges, two vertices of them mid-rim
    assert _sharp(cube, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])) == (36, 8)
    assert _sharp(*uv_sphere(0.45, 32, 16)) == (0, 0)
    assert _sharp(*uv_sphere(0.45, 16, 8)) == (0, 0)
    plane = np.array([(-1.0, -1.0, 0.0), (1.0, -1.0, 0.0), (1.0, 1.0, 0.0), (-1.0, 1.0, 0.0)])
    assert _sharp(plane, np.array([(0, 1, 2), (0, 2, 3)])) == (0, 0)  # open: no inside to keep out of


def test_sharp_edges_and_corners_near_points_the_same_through_the_tree_as_every_pair(monkeypatch):
    """A mesh's sharp edges and corners near the cloth's vertices are found from every pair
    (a few) or through a k-d tree of the features (many, sharp_features._DENSE_PAIRS): the same
    pairs at the same distances either way, on a cube whose rims are cut in three."""
    from cloth_addon.core.contact.mesh import sharp_features

    cube, quads = cloth_cube(4, 1.0)
    collider = MeshCollider(cube, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]))
    surface = collider.surface
    surface.refresh()
    rng = np.random.default_rng(4)
    points = rng.uniform(-0.8, 0.8, (300, 3))
    radius = rng.uniform(0.0, 0.3, len(points))

    def near(dense):
        monkeypatch.setattr(sharp_features, "_DENSE_PAIRS", 10**9 if dense else 0)
        features = SharpFeatures(collider.vertices, collider.triangles, surface.normal, surface.edge_ends,
                                 surface.edge_tris, collider.closed)
        features.shape(collider.vertices, surface.normal)
        found = []
        for rows, feature, _, dist in (features._near_edges(points, radius),
                                       features._near_corners(points, radius)):
            order = np.lexsort((feature, rows))
            found.append((rows[order].tolist(), feature[order].tolist(), dist[order]))
        return found

    every, tree = near(True), near(False)
    assert len(every[0][0]) > 100 and len(every[1][0]) > 5
    for (rows, feature, dist), (rows_t, feature_t, dist_t) in zip(every, tree, strict=True):
        assert rows == rows_t and feature == feature_t
        np.testing.assert_allclose(dist, dist_t, rtol=1e-12)


@pytest.mark.parametrize("solver", ["fast_mass_spring", "newton"])  # Verlet keeps vertex-only contact
def test_strip_over_a_sharp_box_edge_never_cuts_into_it(solver):
    """A coarse strip (5 cm edges) falls across the rim of a box: the box's sharp edge and corner
    must keep the strip's edges out, not only its vertices, in every frame."""
    lo, hi = np.array([-0.5, -0.5, 0.0]), np.array([0.5, 0.5, 0.75])
    v, tris = box(hi - lo, (lo + hi) / 2)
    table = MeshCollider(v, tris)
    vertices, faces, _ = make_grid(25, 3, 1.2, "xy")
    vertices = vertices * (1.0, 0.1 / 1.2, 1.0) + (0.45 - 0.6 + 0.3, 0.1, 0.9)
    sim = Simulation(vertices, faces, Settings(solver=solver), colliders=[table])
    edges = sim.model.contact_features.edges
    corners = v[tris]
    for frame in range(36):
        sim.step(1)
        x = np.array(sim.positions)
        assert not _inside_box(x, lo, hi).any(), frame
        assert not _inside_box(0.5 * (x[edges[:, 0]] + x[edges[:, 1]]), lo, hi).any(), frame
        rows = np.repeat(np.arange(len(edges)), len(tris))
        face = [np.tile(corners[:, k], (len(edges), 1)) for k in range(3)]
        hits = segment_triangle_hits(x[edges[rows, 0]], x[edges[rows, 1]], *face)
        assert not hits.any(), frame
    assert x[:, 2].min() < 0.5, "the overhanging half drapes down the side"


def _box_edges(tris):
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    return np.unique(np.sort(edges, axis=1), axis=0)


@pytest.mark.parametrize("solver", ["fast_mass_spring", "newton"])
def test_cloth_falling_onto_a_box_corner_never_lets_it_through(solver):
    """A coarse square (15 cm edges) falls flat onto a box's top corner, which lands inside one
    of its triangles: the corner must push the face out, never come out on the other side of
    the cloth (no box edge through a cloth triangle, no cloth edge through a box face)."""
    lo, hi = np.array([-0.5, -0.5, 0.0]), np.array([0.5, 0.5, 0.75])
    v, tris = box(hi - lo, (lo + hi) / 2)
    vertices, faces, _ = make_grid(3, 3, 0.3, "xy")
    # the corner (0.5, 0.5, 0.75) under the middle of a triangle, not under a cloth edge
    vertices = vertices + (0.5 - 0.15 + 0.02, 0.5 - 0.15 + 0.05, 0.85)
    colliders = [MeshCollider(v, tris), PlaneCollider()]
    sim = Simulation(vertices, faces, Settings(solver=solver), colliders=colliders)
    features = sim.model.contact_features
    box_edges = _box_edges(tris)
    rows = np.repeat(np.arange(len(box_edges)), len(features.triangles))
    cloth_rows = np.repeat(np.arange(len(features.edges)), len(tris))
    corner = np.tile(hi, (len(features.triangles), 1))
    nearest = np.inf
    for frame in range(36):
        sim.step(1)
        x = np.array(sim.positions)
        cloth = [np.tile(x[features.triangles[:, k]], (len(box_edges), 1)) for k in range(3)]
        assert not segment_triangle_hits(v[box_edges[rows, 0]], v[box_edges[rows, 1]], *cloth).any(), frame
        face = [np.tile(v[tris[:, k]], (len(features.edges), 1)) for k in range(3)]
        ends = x[features.edges[cloth_rows, 0]], x[features.edges[cloth_rows, 1]]
        assert not segment_triangle_hits(*ends, *face).any(), frame
        assert not _inside_box(x, lo, hi).any(), frame
        q, _, _ = closest_points(corner, *(x[features.triangles[:, k]] for k in range(3)))
        nearest = min(nearest, float(np.linalg.norm(q - corner, axis=1).min()))
    assert nearest < 0.02, "the cloth came down onto the corner"


# -- self-contact in whole simulations ----------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVERS)
def test_two_cloth_objects_fall_onto_each_other_and_keep_their_layers(solver):
    vertices, faces, _ = make_grid(16, 16, 0.8, "xy")
    lower = ClothPart(vertices + (0.0, 0.0, 0.2), faces)
    upper = ClothPart(vertices + (0.05, 0.03, 0.5), faces, settings=Settings(density=0.3))
    settings = Settings(solver=solver, self_collision=True)
    sim = Simulation.from_parts([lower, upper], settings, colliders=[PlaneCollider()])
    assert sim.parts == [slice(0, 256), slice(256, 512)]
    assert sim.model.mass[256:].sum() == pytest.approx(2.0 * sim.model.mass[:256].sum())
    for frame in range(36):
        sim.step(1)
        assert crossings(sim) == 0, frame
    x = sim.positions
    assert np.all(x[256:, 2] > x[:256, 2].mean())
    assert x[256:, 2].mean() - x[:256, 2].mean() >= 0.9 * sim.self_collision_distance


@pytest.mark.parametrize("own", [False, True])
def test_an_object_without_its_own_self_collision_lists_no_pairs_of_its_own_but_keeps_off_others(own):
    """In several cloth objects simulated as one (self-collision on for the whole), an object's
    own layers collide only if its own settings say so: a strip without self-collision piling
    onto a sheet keeps off the sheet in every frame, yet none of its own vertex-triangle or
    edge-edge pairs is a candidate; with its own self-collision on, some are."""
    sheet, sheet_faces, _ = make_grid(10, 10, 0.6, "xy")
    strip, strip_faces, _ = make_grid(4, 24, 1.0, "xz")
    strip = strip * (0.1, 1.0, 0.6) + (0.25, 0.3, 0.75)
    parts = [ClothPart(sheet + (0.0, 0.0, 0.03), sheet_faces),
             ClothPart(strip, strip_faces, settings=Settings(self_collision=own))]
    sim = Simulation.from_parts(parts, Settings(self_collision=True), colliders=[PlaneCollider()])
    assert sim.part_self_collision == [True, own]
    edges, triangles, _ = sim.model.contact_features
    in_strip = np.arange(sim.model.n_particles) >= sim.parts[1].start
    strip_edges, strip_tris = in_strip[edges[:, 0]], in_strip[triangles[:, 0]]
    intra = 0
    for frame in range(25):
        sim.step(1)
        x = np.array(sim.positions)
        between = (edge_triangle_crossings(x, edges[strip_edges], triangles[~strip_tris])
                   + edge_triangle_crossings(x, edges[~strip_edges], triangles[strip_tris]))
        assert between == 0, frame
        contact = sim.contact.self_contact
        (p, t), (a, b) = contact.candidates.vf, contact.candidates.ee
        intra += int(np.sum(in_strip[p] & strip_tris[t]) + np.sum(strip_edges[a] & strip_edges[b]))
    assert x[in_strip, 2].min() > x[~in_strip, 2].mean(), "the strip lies on the sheet"
    assert (intra > 0) == own


def test_without_self_collision_cloth_objects_pass_through_each_other():
    vertices, faces, _ = make_grid(10, 10, 0.8, "xy")
    parts = [ClothPart(vertices + (0, 0, 0.2), faces), ClothPart(vertices + (0, 0, 0.5), faces)]
    sim = Simulation.from_parts(parts, Settings(self_collision=False), colliders=[PlaneCollider()])
    sim.step(36)
    x = sim.positions
    assert abs(x[100:, 2].mean() - x[:100, 2].mean()) < 0.002, "both lie in the floor's plane"


@pytest.mark.parametrize("solver", SOLVERS)
def test_strip_folds_onto_itself_with_the_default_distance_and_one_substep(solver):
    vertices, faces, _ = make_grid(49, 5, 1.0, "xy")
    vertices = vertices * (1.2, 0.1, 1.0)
    settings = Settings(solver=solver, self_collision=True, substeps=1, iterations=10)
    sim = Simulation(vertices, faces, settings, colliders=[PlaneCollider()])
    standing = np.maximum(vertices[:, 0] - 0.6, 0.0)
    start = vertices.copy()
    start[:, 0] = np.minimum(vertices[:, 0], 0.6) - standing * np.sin(0.3)
    start[:, 2] = 0.005 + standing * np.cos(0.3)
    state = sim.state
    state.positions, state.previous = start, start.copy()
    sim.state = state
    for frame in range(30):
        sim.step(1)
        assert crossings(sim) == 0, frame
    assert sim.positions[:, 0].max() < 0.8, "it folded back over the lying half"


@pytest.mark.parametrize("solver", SOLVERS)
def test_twisted_sheet_never_passes_through_itself(solver):
    """A square held by its left and right columns, the right column turned two full turns about
    the sheet's axis over 2 s, then held."""
    vertices, faces, index = make_grid(11, 11, 1.0, "xz")
    vertices = vertices - (0.5, 0.0, -1.0)
    left, right = index[:, 0], index[:, -1]
    sim = Simulation(vertices, faces, Settings(solver=solver, self_collision=True),
                     pinned=np.concatenate([left, right]))
    frames = 48
    for frame in range(1, frames + 12 + 1):
        angle = 4.0 * np.pi * min(frame, frames) / frames
        turned = vertices.copy()
        z = vertices[right, 2] - 0.5
        turned[right, 1] = -np.sin(angle) * z
        turned[right, 2] = 0.5 + np.cos(angle) * z
        sim.move_pins(turned)
        sim.step(1)
        assert crossings(sim) == 0, frame


@pytest.mark.parametrize("solver", SOLVERS)
def test_strip_piles_up_on_the_floor_in_layers(solver):
    """An 8 x 30 strip hanging 0.1 m above the floor falls and piles up (the pile scene, shorter)."""
    vertices, faces, _ = make_grid(8, 30, 1.0, "xz")
    vertices = vertices * (0.4, 1.0, 1.5) + (0.0, 0.0, 1.6)  # the grid hangs down from z = 0
    # a perfectly straight strip would stand on the floor like a column (nothing makes it buckle
    # first): a slight wave, as any real strip has
    vertices[:, 1] = 0.01 * np.sin(vertices[:, 2] * 9.0)
    sim = Simulation(vertices, faces, Settings(solver=solver, self_collision=True, dt=1 / 30),
                     colliders=[PlaneCollider()])
    for frame in range(45):
        sim.step(1)
        assert crossings(sim) == 0, frame
    assert sim.positions[:, 2].max() > 0.05, "the pile keeps its layers' height"
    assert sim.positions[:, 2].max() < 0.6, "it fell"


def test_edges_crossing_in_a_plane_are_found():
    """Two edges lying flat (a floor) that sweep through each other within their plane: the
    coplanarity cubic vanishes all along, the touch is where an end crosses the other edge."""
    p10, q10 = np.array([[0.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0]])
    p20, q20 = np.array([[0.5, 0.2, 0.0]]), np.array([[0.5, 0.6, 0.0]])
    down = np.array([[0.0, -0.5, 0.0]])  # the second edge slides across the first by 0.5 m
    toi = edge_edge_toi(p10, p10, q10, q10, p20, p20 + down, q20, q20 + down, 1e-6)
    np.testing.assert_allclose(toi, 0.4, atol=1e-6)  # when its lower end reaches the first edge
    flat = vertex_triangle_toi(np.array([[0.2, -0.3, 0.0]]), np.array([[0.2, 0.5, 0.0]]),
                               np.zeros((1, 3)), np.zeros((1, 3)), q10, q10, q20, q20, 1e-6)
    assert np.isfinite(flat[0]) and 0.3 < flat[0] < 0.5  # the vertex enters the triangle in-plane


def test_a_substep_whose_pairs_do_not_fit_in_memory_holds_the_cloth(monkeypatch):
    """The broad phase's last resort: when even the substep's own motion would list more pairs
    than allowed, the cloth stays where the substep started (no crossing, no memory blow-up)."""
    from cloth_addon.core.contact.self_contact import feature_search

    rng = np.random.default_rng(3)
    vertices, faces, _ = make_grid(12, 12, 1.0, "xy")
    contact = SelfContact(Simulation(vertices, faces).model, 0.02, 0.0)
    x1 = vertices + rng.normal(0.0, 0.15, vertices.shape)
    monkeypatch.setattr(feature_search, "PAIR_LIMIT", 1)
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 1000)
    contact.prepare(vertices, x1)
    assert np.array_equal(x1, vertices) and contact.stats["held"] == 1
    # the rest of the substep has no candidates at all (this was the first search): it must not fail
    contact.separate(x1, vertices)
    assert contact.untangle(vertices, x1) == 0 and np.array_equal(x1, vertices)


def test_a_move_too_far_beyond_free_flight_is_cut_before_the_cloth_is_held(monkeypatch):
    """Given where free flight takes the cloth, a substep whose end would list more than
    PAIR_LIMIT sphere pairs a vertex first has each free vertex's move beyond free flight cut
    (SelfContact.LIMITS median edges in turn); the two shortest cuts are kept within memory's
    limit, and only if neither fits is the cloth held. A twisted sheet held while its pins went on
    turning (cut to no move at all) was stretched between them into huge triangles."""
    from cloth_addon.core.contact.self_contact import contact as self_contact
    from cloth_addon.core.contact.self_contact import feature_search

    rng = np.random.default_rng(3)
    vertices, faces, index = make_grid(12, 12, 1.0, "xy")
    pins = index[:, 0]
    model = Simulation(vertices, faces, pinned=pins).model
    edge, features = model.median_edge_length, model.contact_features
    free = vertices + (0.0, 0.0, -0.01)  # free flight: a little fall, the pins where they are
    free[pins] = vertices[pins]
    calm = free + rng.normal(0.0, 0.05, vertices.shape)
    flung = free + rng.normal(0.0, 0.15, vertices.shape)
    # pins moved to their targets, within even the shortest cut (which cuts pins too: the next test)
    calm[pins] = flung[pins] = vertices[pins] + (0.0, 0.005, 0.0)

    def prepared(x1, contact=None):
        contact = SelfContact(model, 0.02, 0.0) if contact is None else contact
        x1 = x1.copy()
        contact.prepare(vertices, x1, free=free)
        assert contact.search.work_limit is None
        return x1, contact

    def cut_to(x1, moved, cut):
        """the pins where they were sent; every other vertex keeps its direction beyond free
        flight, and its whole move where that was within the cut"""
        assert np.array_equal(x1[pins], moved[pins])
        rows = np.setdiff1d(np.arange(len(x1)), pins)
        beyond = np.linalg.norm(moved[rows] - free[rows], axis=1)
        kept = np.minimum(1.0, cut * edge / beyond)
        np.testing.assert_allclose(x1[rows] - free[rows], (moved[rows] - free[rows]) * kept[:, None])
        np.testing.assert_allclose(np.linalg.norm(x1[rows] - free[rows], axis=1).max(), cut * edge)

    x1, contact = prepared(calm)  # within the limit: as it was
    assert np.array_equal(x1, calm) and "limited" not in contact.stats
    x1, contact = prepared(flung)
    cut_to(x1, flung, self_contact.LIMITS[0])
    assert contact.stats["limited"] == 1 and "held" not in contact.stats

    # made within the usual limits (their rest-shape searches), then run under lower ones: the
    # work limit refuses every cut but the two shortest, which memory's limit takes or refuses
    fits, refused = SelfContact(model, 0.02, 0.0), SelfContact(model, 0.02, 0.0)
    monkeypatch.setattr(feature_search, "PAIR_LIMIT", 1)
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 3_000)
    x1, _ = prepared(flung, refused)
    # the free vertices where the substep started; the pins' move alone does not fit either: they
    # wait too (test_pins_driven_through_the_cloth_are_cut_held_or_sent_through_the_impact_zones)
    assert np.array_equal(x1, vertices) and refused.stats["held"] == 1 and refused.stats["pins_waited"] == 1
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 20_000)
    x1, _ = prepared(flung, fits)
    cut_to(x1, flung, self_contact.LIMITS[-2])  # the longer of the two
    assert fits.stats["limited"] == 1 and "held" not in fits.stats
    fits.separate(x1, vertices)
    fits.untangle(vertices, x1)
    assert edge_triangle_crossings(x1, features.edges, features.triangles) == 0
    # the next substep starts one level above the last cut, not from the uncut move
    tried = []
    cover = fits.broad.cover
    monkeypatch.setattr(fits.broad, "cover", lambda x0, x1: (tried.append(x1.copy()), cover(x0, x1)))
    x1, _ = prepared(flung, fits)
    assert fits.stats["limited"] == 2 and "held" not in fits.stats
    first = np.delete(tried[0] - free, pins, axis=0)
    assert np.linalg.norm(first, axis=1).max() == pytest.approx(self_contact.LIMITS[-3] * edge)
    # that climb fitted; from there the climbs are refused, and each waits 1, then 2 substeps longer
    # (CLIMB_WAIT, doubled), the substeps in between starting at the cut that fitted
    assert self_contact.CLIMB_WAIT == 1
    firsts = []
    for _ in range(6):
        tried.clear()
        x1, _ = prepared(flung, fits)
        cut_to(x1, flung, self_contact.LIMITS[-3])
        firsts.append(np.linalg.norm(np.delete(tried[0] - free, pins, axis=0), axis=1).max() / edge)
    up, at = self_contact.LIMITS[-4], self_contact.LIMITS[-3]  # a climb, and the cut that fitted
    assert firsts == pytest.approx([up, at, up, at, at, up])


def test_pins_driven_through_the_cloth_are_cut_held_or_sent_through_the_impact_zones(monkeypatch):
    """A sheet folded over (layers 6 cm apart), the upper layer's end pinned and driven 10 cm down
    through the lower one while the rest is flung about. Where the candidates for the substep do
    not fit, the shortest cut cuts a pin's move as it cuts the free vertices' (a pin catching up
    after it waited moves far); where no cut fits, the substep is held: its pins go on only if
    the candidates hold for their move alone, and then through the impact zones like any move,
    else they wait too. Pins sent on unchecked drew their triangles through the lower layer (66
    crossings)."""
    from cloth_addon.core.contact.self_contact import contact as self_contact
    from cloth_addon.core.contact.self_contact import feature_search

    vertices, faces, _ = make_grid(12, 12, 1.0, "xy")
    upper = vertices[:, 1] > 0.5
    folded = vertices.copy()
    folded[upper, 1] = 1.045 - vertices[upper, 1]  # half a row off the lower layer's rows
    folded[upper, 2] = 0.06
    pins = np.flatnonzero(np.isclose(vertices[:, 1], 1.0))
    model = Simulation(folded, faces, pinned=pins).model
    features = model.contact_features
    free = folded.copy()
    free[pins, 2] = -0.04  # the pins' targets, below the lower layer
    flung = free + np.random.default_rng(3).normal(0.0, 0.15, free.shape)
    flung[pins] = free[pins]

    def substep(contact, given_free=True):
        x1 = flung.copy()
        if given_free:
            contact.prepare(folded, x1, free=free)
            contact.separate(x1, folded)
        contact.prepare(folded, x1)
        contact.untangle(folded, x1)
        assert edge_triangle_crossings(x1, features.edges, features.triangles) == 0
        return x1

    # Limits on a search's sphere pairs, all below the flung move's: the first takes the shortest
    # cut, the second no cut and not the pins' move alone, the third the pins' move alone
    cut, waits, goes_on = (SelfContact(model, 0.02, 0.0) for _ in range(3))  # within the usual limits
    monkeypatch.setattr(feature_search, "PAIR_LIMIT", 1)
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 12_000)
    x1 = substep(cut)
    assert cut.stats["limited"] == 1 and "held" not in cut.stats
    moved = np.linalg.norm(x1[pins] - folded[pins], axis=1)
    np.testing.assert_allclose(moved, self_contact.LIMITS[-1] * model.median_edge_length)
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 5_000)
    assert np.array_equal(substep(waits), folded)
    assert waits.stats["held"] >= 1 and waits.stats["pins_waited"] >= 1
    # held before the impact zones (the move as the passes left it), the pins' move alone fits
    monkeypatch.setattr(feature_search, "PAIR_FLOOR", 16_000)
    x1 = substep(goes_on, given_free=False)
    assert goes_on.stats["held"] == 1 and "pins_waited" not in goes_on.stats
    # each pin reached its target or waited at its start (the zones' own fall-back)
    assert np.all(np.all(x1[pins] == free[pins], axis=1) | np.all(x1[pins] == folded[pins], axis=1))


def test_the_pair_limit_holds_on_an_estimated_count():
    """Before a large search the pairs are counted on a sample (sphere_search.COUNT_SAMPLE spheres of
    a group): of 40,000 equal spheres, a limit 10% above their true number of overlapping pairs
    lets the search list them all, one 10% below it is refused; both ways of searching."""
    from cloth_addon.core.contact import sphere_search

    rng = np.random.default_rng(3)
    points = rng.uniform(0.0, 1.0, (40_000, 3))
    radius = np.full(len(points), 0.01)
    a, b = np.split(np.arange(len(points)), 2)
    searches = (lambda limit: sphere_search.sphere_pairs_within(points, radius, limit),
                lambda limit: sphere_search.sphere_pairs(points[a], radius[a], points[b], radius[b], limit))
    assert len(points) > 4 * sphere_search.COUNT_SAMPLE
    for search in searches:
        count = len(search(None)[0])
        assert count > 5_000
        assert len(search(int(1.1 * count))[0]) == count
        with pytest.raises(sphere_search.TooManyPairs):
            search(int(0.9 * count))


def test_small_searches_list_first_and_refuse_exactly_as_a_count_would(monkeypatch):
    """A search of at most COUNT_SAMPLE spheres a side lists its pairs and counts the list
    (sphere_search.LIST_FIRST) rather than counting first: on spheres with ties and duplicates,
    under limits on both sides of their counts, the same pairs are found and the same searches
    refused as when every search is counted first."""
    from cloth_addon.core.contact import sphere_search

    rng = np.random.default_rng(8)

    def outcome(search, limit):
        try:
            return [a.tobytes() for a in search(limit)]
        except sphere_search.TooManyPairs:
            return "refused"

    refused = listed = 0
    for _ in range(40):
        a, b = (np.round(rng.random((rng.integers(2, 600), 3)), 2) for _ in range(2))
        ra, rb = np.round(0.1 * rng.random(len(a)), 2), np.round(0.1 * rng.random(len(b)), 2)
        searches = (partial(sphere_search.sphere_pairs, a, ra, b, rb),
                    partial(sphere_search.sphere_pairs_within, a, ra))
        for search in searches:
            for limit in (10, 300, 3000, 30000):
                first = outcome(partial(search, distance=True), limit)
                monkeypatch.setattr(sphere_search, "LIST_FIRST", 0)  # every search counted first
                counted = outcome(partial(search, distance=True), limit)
                monkeypatch.undo()
                assert first == counted
                refused += first == "refused"
                listed += first != "refused"
    assert refused > 20 and listed > 20


def test_small_searches_measure_every_distance_and_find_what_the_trees_find(monkeypatch):
    """A search of at most MEASURE_ALL distances measures them all instead of building k-d trees:
    on spheres with ties and duplicates it finds the same pairs at the same distances as the trees'
    search (forced with MEASURE_ALL = 0), and it is refused only when more spheres than the limit
    overlap (the trees' count, of the pairs their radius groups list, may refuse sooner)."""
    from cloth_addon.core.contact import sphere_search

    rng = np.random.default_rng(11)

    def outcome(search, limit):
        try:
            i, j, length = search(limit)
        except sphere_search.TooManyPairs:
            return "refused"
        order = np.lexsort((j, i))
        return i[order].tolist(), j[order].tolist(), length[order]

    measured = 0
    for _ in range(40):
        a, b = (np.round(rng.random((rng.integers(2, 250), 3)), 2) for _ in range(2))
        ra, rb = np.round(0.15 * rng.random(len(a)), 2), np.round(0.15 * rng.random(len(b)), 2)
        searches = (partial(sphere_search.sphere_pairs, a, ra, b, rb, distance=True),
                    partial(sphere_search.sphere_pairs_within, a, ra, distance=True))
        measured += len(a) * len(b) <= sphere_search.MEASURE_ALL
        for search in searches:
            for limit in (None, 10, 300, 3000):
                found = outcome(search, limit)
                monkeypatch.setattr(sphere_search, "MEASURE_ALL", 0)
                trees = outcome(search, limit)
                monkeypatch.undo()
                # the trees count the pairs their radius groups list, a superset of the
                # overlapping pairs that the measured search counts: it refuses no more often
                if found == "refused":
                    assert trees == "refused"
                if found == "refused" or trees == "refused":
                    assert found == "refused" or len(found[0]) <= limit
                    continue
                assert found[:2] == trees[:2]
                np.testing.assert_allclose(found[2], trees[2], rtol=1e-12)
    assert measured > 20


@pytest.mark.parametrize("few_first", [True, False])
def test_a_few_spheres_against_many_find_the_pairs_brute_force_finds(few_first):
    """sphere_pairs first drops the many spheres that miss the few's bounding box: the pairs are
    still exactly those that overlap (brute force), whichever side is the few."""
    from cloth_addon.core.contact import sphere_search

    rng = np.random.default_rng(5)
    many = rng.uniform(0.0, 1.0, (6000, 3))
    many_radius = rng.uniform(0.0, 0.03, len(many))
    few = rng.uniform(0.3, 0.5, (40, 3))
    few_radius = rng.uniform(0.0, 0.08, len(few))
    gap = np.linalg.norm(few[:, None] - many[None], axis=2) - few_radius[:, None] - many_radius[None]
    expected = set(zip(*(v.tolist() for v in np.nonzero(gap <= 0.0)), strict=True))
    if few_first:
        i, j, length = sphere_search.sphere_pairs(few, few_radius, many, many_radius, distance=True)
        found = set(zip(i.tolist(), j.tolist(), strict=True))
    else:
        j, i, length = sphere_search.sphere_pairs(many, many_radius, few, few_radius, distance=True)
        found = set(zip(i.tolist(), j.tolist(), strict=True))
    assert len(expected) > 50 and found == expected
    np.testing.assert_allclose(length, np.linalg.norm(few[i] - many[j], axis=1))


def test_the_box_distance_is_a_lower_bound_of_the_features_gaps():
    """feature_search.box_distance, the searches' cut before exact gaps: never more than the exact
    distance between two segments or a point and a triangle, 0 where their boxes meet, and close
    to the gap for features far apart relative to their size."""
    from cloth_addon.core.contact.self_contact.feature_search import box_distance, boxes

    rng = np.random.default_rng(12)
    x = rng.uniform(-1.0, 1.0, (600, 3))
    edges, tris = rng.integers(0, 600, (300, 2)), rng.integers(0, 600, (300, 3))
    a, b = rng.integers(0, 300, 5000), rng.integers(0, 300, 5000)
    low, high = boxes(x, x, edges)
    lower = box_distance(low, high, low, high, a, b)
    gap = np.linalg.norm(segment_gap(*(x[e[:, k]] for e in (edges[a], edges[b]) for k in (0, 1)))[0], axis=1)
    assert np.all(lower <= gap + 1e-12) and np.any(lower == 0.0) and np.any(lower > 0.1)
    p = rng.integers(0, 600, 5000)
    low, high = boxes(x, x, tris)
    lower = box_distance(x, x, low, high, p, b)
    q, _, _ = closest_points(x[p], *(x[tris[b, k]] for k in range(3)))
    assert np.all(lower <= np.linalg.norm(x[p] - q, axis=1) + 1e-12) and np.any(lower > 0.1)
    # short edges far apart: the bound is nearly the gap
    x[1::2] = x[::2] + 1e-3
    edges = np.arange(600).reshape(300, 2)
    low, high = boxes(x, x, edges)
    far = np.linalg.norm(x[edges[a, 0]] - x[edges[b, 0]], axis=1)
    np.testing.assert_allclose(box_distance(low, high, low, high, a, b), far, atol=3e-3)


def test_degenerate_triangles_take_the_closest_point_of_their_edges():
    """closest_points on zero-area triangles (two corners coincident, or all three on a line)
    gives the distance to the nearest of their edges, never NaN or a point off the triangle; and
    a vertex passing through a triangle that opens from two coincident corners is found touching
    by the continuous self-contact test."""
    from cloth_addon.core.contact.self_contact import narrow_phase

    rng = np.random.default_rng(11)
    p, a, b = (rng.normal(size=(5000, 3)) for _ in range(3))

    def edge_distance(s, e):
        t = np.clip(np.einsum("ij,ij->i", p - s, e - s) / np.einsum("ij,ij->i", e - s, e - s), 0.0, 1.0)
        return np.linalg.norm(p - (s + t[:, None] * (e - s)), axis=1)

    on_line = a + rng.uniform(-1.0, 2.0, (len(p), 1)) * (b - a)
    line = np.minimum(np.minimum(edge_distance(a, b), edge_distance(b, on_line)), edge_distance(on_line, a))
    for c, expected in ((on_line, line), (a.copy(), edge_distance(a, b))):
        q, bary, _ = closest_points(p, a, b, c)
        np.testing.assert_allclose(np.linalg.norm(p - q, axis=1), expected, atol=1e-12)
        np.testing.assert_allclose(bary.sum(axis=1), 1.0)
    # corners 1 and 2 coincide at the start; vertex 0 falls through the triangle as it opens
    x0 = np.array([(0.3, 0.2, 0.1), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)])
    x1 = np.array([(0.3, 0.2, -0.1), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)])
    touching = narrow_phase.vf_touching(x0, x1, x1 - x0, np.array([0]), np.array([(1, 2, 3)]), 1e-6)
    assert touching.tolist() == [[0, 1, 2, 3]]


def test_a_ball_leaves_cloth_edges_resting_on_it_where_vertex_contact_holds_them():
    """A cloth edge whose ends rest on the ball's reach dips in by its chord's sag: the ball's edge
    contact leaves it there (it once pushed every such edge out to the reach, lifting the cloth
    off in every substep, and a drape crept round the ball's lower half: docs/PHYSICS.md §9); an
    edge whose middle cuts deeper, between ends farther out, is still pushed out of the ball."""
    ball = SphereCollider((0.0, 0.0, 0.0), 0.45, thickness=0.02)
    margin = 0.005
    reach = 0.45 + 0.02 + margin
    features = ContactFeatures(np.array([[0, 1]]), np.zeros((0, 3), dtype=np.int64), 0.2)
    movable = np.ones(2, dtype=bool)
    half = 0.05  # rad: a 4.75 cm edge, its middle 0.6 mm inside the reach
    resting = reach * np.array([[np.sin(-half), 0.0, np.cos(half)], [np.sin(half), 0.0, np.cos(half)]])
    x = resting.copy()
    ball.project(x, x.copy(), movable, margin, features=features)
    np.testing.assert_array_equal(x, resting)
    # a 0.5 m edge across the top with its ends just outside: its middle is 3 cm deep
    across = np.array([[-0.25, 0.0, 0.45], [0.25, 0.0, 0.45]])
    x = across.copy()
    ball.project(x, x.copy(), movable, margin, features=features)
    assert np.linalg.norm(0.5 * (x[0] + x[1])) >= 0.45 + margin - 1e-9  # out of the ball by the margin
