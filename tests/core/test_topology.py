"""Spring topology, masses and triangles on small hand-made meshes (docs/PHYSICS.md §1, §2)."""

import warnings

import numpy as np
import pytest
from demo_port import demo_constraints

from cloth_addon.core import Settings, build_model
from cloth_addon.core.colouring import colour_springs
from cloth_addon.core.topology import BEND, SHEAR, STRUCTURAL


def springs_by_kind(model):
    out = {}
    for kind in (STRUCTURAL, SHEAR, BEND):
        pairs = model.spring_indices[model.spring_kind == kind]
        out[kind] = {tuple(p) for p in pairs.tolist()}
    return out


def test_single_quad():
    v = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    model = build_model(v, [(0, 1, 2, 3)], Settings())
    kinds = springs_by_kind(model)
    assert kinds[STRUCTURAL] == {(0, 1), (1, 2), (2, 3), (0, 3)}
    assert kinds[SHEAR] == {(0, 2), (1, 3)}
    assert kinds[BEND] == set()
    rest = dict(zip(map(tuple, model.spring_indices.tolist()), model.spring_rest_length, strict=True))
    assert rest[(0, 2)] == pytest.approx(np.sqrt(2))
    assert rest[(0, 1)] == pytest.approx(1.0)
    np.testing.assert_allclose(model.mass, Settings().density * 1.0 / 4)
    assert model.triangles.shape == (2, 3)


def test_two_triangles_give_one_bend_spring():
    v = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)]
    model = build_model(v, [(0, 1, 2), (0, 2, 3)], Settings())
    kinds = springs_by_kind(model)
    assert kinds[STRUCTURAL] == {(0, 1), (1, 2), (0, 2), (2, 3), (0, 3)}
    assert kinds[SHEAR] == set()
    assert kinds[BEND] == {(1, 3)}
    # each triangle has area 1/2 and gives a third of it to each corner
    np.testing.assert_allclose(model.mass * 6 / Settings().density, [2, 1, 2, 1])


def test_pentagon_shear_is_every_chord():
    angles = np.linspace(0, 2 * np.pi, 6)[:-1]
    v = np.stack([np.cos(angles), np.sin(angles), np.zeros(5)], axis=1)
    model = build_model(v, [(0, 1, 2, 3, 4)], Settings())
    kinds = springs_by_kind(model)
    assert kinds[STRUCTURAL] == {(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)}
    assert kinds[SHEAR] == {(0, 2), (0, 3), (1, 3), (1, 4), (2, 4)}
    area = 0.5 * 5 * np.sin(2 * np.pi / 5)
    assert model.mass.sum() == pytest.approx(Settings().density * area)
    assert len(model.triangles) == 3


def demo_springs(cols, rows):
    """The JavaScript demo's constraints as a set of sorted pairs."""
    return {tuple(sorted(pair)) for pair in demo_constraints(cols, rows)}


def test_grid_springs_equal_the_demos(grid):
    v, f, _ = grid(7, 5)
    model = build_model(v, f, Settings())
    assert {tuple(p) for p in model.spring_indices.tolist()} == demo_springs(7, 5)
    kinds = springs_by_kind(model)
    assert len(kinds[STRUCTURAL]) == 6 * 5 + 7 * 4
    assert len(kinds[SHEAR]) == 2 * 6 * 4
    assert len(kinds[BEND]) == 5 * 5 + 7 * 3


def test_mixed_mesh_and_mass_total(grid):
    # a quad strip with a triangle fan and a pentagon attached: mass sums to density * area
    v = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 1, 0), (1, 1, 0), (2, 1, 0), (1.5, 1.8, 0), (0.5, 1.8, 0)]
    faces = [(0, 1, 4, 3), (1, 2, 5), (1, 5, 4), (3, 4, 6, 7), (4, 5, 6)]
    model = build_model(v, faces, Settings(density=2.0))
    tri = model.triangles
    p = np.asarray(v, float)
    cross = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    area = 0.5 * np.linalg.norm(cross, axis=1).sum()
    assert model.mass.sum() == pytest.approx(2.0 * area)
    i, j = model.spring_indices.T
    np.testing.assert_allclose(model.spring_rest_length, np.linalg.norm(p[i] - p[j], axis=1))
    assert len({tuple(x) for x in model.spring_indices.tolist()}) == model.n_springs


@pytest.mark.parametrize("mesh", ["quads", "triangles", "mixed"])
def test_face_vector_areas_are_their_fan_triangles_sums(mesh):
    # bent out of its plane, so that a quad's diagonals and its two triangles are different sums
    v = [(0, 0, 0), (1, 0, 0.3), (2, 0, 0), (0, 1, 0.2), (1, 1, -0.4), (2, 1, 0.1), (1.5, 1.8, 0.5),
         (0.5, 1.8, 0)]
    faces = {"quads": [(0, 1, 4, 3), (1, 2, 5, 4), (3, 4, 6, 7)],
             "triangles": [(0, 1, 4), (1, 2, 5), (1, 5, 4), (4, 5, 6)],
             "mixed": [(0, 1, 4, 3), (1, 2, 5), (1, 5, 4), (3, 4, 6, 7), (4, 5, 6)]}[mesh]
    model = build_model(v, faces, Settings())
    p = np.asarray(v, float)
    tri = model.triangles
    doubled = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    expected = np.zeros((len(faces), 3))
    np.add.at(expected, model.faces.face_of_triangle, doubled)
    rows = model.faces.doubled_area_rows(np.ascontiguousarray(p.T).ravel())
    np.testing.assert_allclose(rows.T, expected, atol=1e-14)


def test_rope_from_loose_edges():
    v = np.stack([np.zeros(5), np.zeros(5), -0.25 * np.arange(5)], axis=1)
    edges = np.stack([np.arange(4), np.arange(1, 5)], axis=1)
    model = build_model(v, [], Settings(linear_density=0.4), edges=edges)
    assert model.n_springs == 4
    assert np.all(model.spring_kind == STRUCTURAL)
    assert model.mass.sum() == pytest.approx(0.4 * 1.0)
    assert len(model.triangles) == 0


def test_coincident_vertices_drop_zero_length_springs_with_a_warning():
    v = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (1, 1, 0)]
    with pytest.warns(UserWarning, match="zero-length"):
        model = build_model(v, [(0, 1, 2, 3), (1, 4, 2)], Settings())
    assert model.dropped_springs == 1
    assert np.all(model.spring_rest_length > 0)


def test_colouring_is_a_proper_edge_colouring(grid):
    v, f, _ = grid(20, 20)
    model = build_model(v, f, Settings())
    colour = colour_springs(model.spring_indices, model.n_particles)
    for c in np.unique(colour):
        ends = model.spring_indices[colour == c].ravel()
        assert len(ends) == len(np.unique(ends))
    degree = np.bincount(model.spring_indices.ravel()).max()
    assert colour.max() + 1 <= 2 * degree - 1


@pytest.mark.parametrize(
    ("vertices", "faces", "match"),
    [
        ([(0, 0, 0), (1, 0, 0), (np.nan, 1, 0)], [(0, 1, 2)], "NaN or infinite"),
        ([(0, 0, 0), (1, 0, 0), (np.inf, 1, 0)], [(0, 1, 2)], "NaN or infinite"),
        ([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 3)], "out of range"),
        ([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, -1)], "out of range"),
        ([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1)], "fewer than 3"),
        ([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 1)], "fewer than 3 distinct"),
        (np.zeros((0, 3)), [], "empty"),
        ([(0, 0), (1, 0), (0, 1)], [(0, 1, 2)], "shape"),
    ],
)
def test_bad_meshes_raise_value_error(vertices, faces, match):
    with pytest.raises(ValueError, match=match):
        build_model(vertices, faces, Settings())


def test_too_many_vertices_refused_before_building():
    v = np.zeros((11, 3))
    with pytest.raises(ValueError, match="max_vertices"):
        build_model(v, [(0, 1, 2)], Settings(max_vertices=10))


def test_no_warning_on_clean_mesh(grid):
    v, f, _ = grid(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_model(v, f, Settings())
