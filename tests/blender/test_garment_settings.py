"""Sewing, pressure, shrinking, property weights and rest shape keys in the real Blender."""

import bpy
import numpy as np
import pytest
from conftest import evaluated_world, make_cloth, make_grid, pin, play, raw_vertices
from test_panels import FakePanel, RecordingLayout

from cloth_addon.blender import garment_panels, store
from tools.scenes import capsule, cloth_cube, sewn_panels


def mesh_object(name, vertices, faces, edges=(), collision=False):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices).tolist(), [list(map(int, e)) for e in edges],
                     [list(map(int, f)) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    if collision:
        obj.modifiers.new("Collision", "COLLISION")
    return obj


def seam(obj):
    """(q, 2) vertex pairs of the object's loose edges (edges in no face)."""
    mesh = obj.data
    in_faces = {key for polygon in mesh.polygons for key in polygon.edge_keys}
    return np.array([e.vertices[:] for e in mesh.edges if e.key not in in_faces])


def lengths(obj, pairs):
    world = evaluated_world(obj)
    return np.linalg.norm(world[pairs[:, 0]] - world[pairs[:, 1]], axis=1)


def garment_scene(use_sewing, bar=True):
    vertices, faces, edges = sewn_panels(20, gap=0.6, height=1.0)
    if bar:
        body, triangles = capsule(radius=0.2, length=1.4, center=(0.0, 0.0, 1.0), axis="y")
        mesh_object("Bar", body, triangles, collision=True)
    cloth = mesh_object("Garment", vertices, faces, edges)
    original = raw_vertices(cloth.data).copy()
    make_cloth(cloth, use_sewing=use_sewing, frame_start=1, frame_end=61)
    return cloth, original


def test_sewn_panels_close_into_a_tube_and_the_mesh_is_untouched(scene):
    cloth, original = garment_scene(use_sewing=True, bar=False)
    pairs = seam(cloth)
    assert len(pairs) == 40 and lengths(cloth, pairs).min() == pytest.approx(0.6, abs=1e-5)
    play(scene, 61)
    assert lengths(cloth, pairs).max() <= 0.005
    np.testing.assert_array_equal(raw_vertices(cloth.data), original)
    assert cloth.data.shape_keys is None


def test_the_sewn_tube_hangs_on_the_bar(scene):
    cloth, _ = garment_scene(use_sewing=True)
    play(scene, 61)
    # within 1 cm: friction on the bar holds the last millimetres (5 mm is tested without the bar)
    assert lengths(cloth, seam(cloth)).max() <= 0.01
    world = evaluated_world(cloth)
    gap = bpy.data.objects["Bar"].collision.thickness_outer + cloth.cloth_addon.collision_distance
    assert world[:, 2].max() == pytest.approx(1.2 + gap, abs=0.006)  # resting on the bar's top
    assert world[:, 2].min() > 0.3


def test_without_sewing_the_loose_edges_stay_ropes_at_rest_length(scene):
    cloth, _ = garment_scene(use_sewing=False)
    play(scene, 31)
    # ropes stretch a little where the tube hangs on them, but never close
    np.testing.assert_allclose(lengths(cloth, seam(cloth)), 0.6, rtol=0.05)


def pillow_volume(scene, pressure):
    bpy.ops.mesh.primitive_plane_add(size=4.0)
    bpy.context.active_object.modifiers.new("Collision", "COLLISION")
    vertices, faces = cloth_cube(10, size=0.5, center=(0.0, 0.0, 0.26))
    pillow = mesh_object("Pillow", vertices, faces)
    make_cloth(pillow, use_pressure=True, pressure=pressure, frame_start=1, frame_end=61)
    play(scene, 61)
    world = evaluated_world(pillow)
    a, b, c, d = (world[faces[:, k]] for k in range(4))
    # the quads' volume as two triangles each: 1/6 sum a . (b x c)
    return (np.einsum("ij,ij->", a, np.cross(b, c)) + np.einsum("ij,ij->", a, np.cross(c, d))) / 6.0


def test_pressure_keeps_a_pillow_inflated_on_the_floor(scene):
    flat = pillow_volume(scene, 0.0)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    inflated = pillow_volume(bpy.context.scene, 1000.0)
    assert inflated >= 1.5 * flat and inflated > 0.125  # 0.125 m³ at rest


def test_pressure_on_an_open_mesh_is_reported_and_nothing_is_made(scene):
    obj = make_grid()
    obj.cloth_addon.use_pressure = True
    with pytest.raises(RuntimeError, match="use_pressure needs a closed mesh"):
        bpy.ops.cloth_addon.make_cloth()
    assert not obj.cloth_addon.enabled and obj.data.shape_keys is None


def test_rest_shape_key_at_half_size_contracts_the_sheet(scene):
    scene.use_gravity = False
    obj = make_grid(cuts=8, size=1.0)
    obj.shape_key_add(name="Basis", from_mix=False)
    half = obj.shape_key_add(name="Half", from_mix=False)
    co = np.empty(len(half.data) * 3, dtype=np.float32)
    half.data.foreach_get("co", co)
    half.data.foreach_set("co", co * 0.5)
    half.value = 0.0
    make_cloth(obj, rest_shape_key="Half", damping=0.1, frame_start=1, frame_end=121)
    play(scene, 121)
    world = evaluated_world(obj)
    # its edges take the key's lengths: half; drawn in that fast the cloth overshoots and, barely
    # resisting compression, crumples, so its width ends at most half, not exactly half
    edges = np.array([edge.vertices[:] for edge in obj.data.edges])
    mesh = raw_vertices(obj.data).reshape(-1, 3)
    ratio = (np.linalg.norm(world[edges[:, 0]] - world[edges[:, 1]], axis=1)
             / np.linalg.norm(mesh[edges[:, 0]] - mesh[edges[:, 1]], axis=1))
    assert np.median(ratio) == pytest.approx(0.5, abs=0.03)
    assert np.ptp(world[:, 0]) < 0.55
    obj.cloth_addon.rest_shape_key = "Missing"
    scene.frame_set(1)
    scene.frame_set(2)
    assert "no shape key 'Missing'" in store.errors[obj.session_uid]
    obj.shape_key_add(name="ClothBake.0001", from_mix=False)  # as a bake names its keys
    obj.cloth_addon.rest_shape_key = "ClothBake.0001"
    scene.frame_set(3)
    assert "written by the cloth itself" in store.errors[obj.session_uid]


def test_shrink_group_shrinks_the_painted_half(scene):
    scene.use_gravity = False
    obj = make_grid(cuts=8, size=1.0)
    group = obj.vertex_groups.new(name="Hem")
    group.add([v.index for v in obj.data.vertices if v.co.x < 0], 1.0, "REPLACE")
    make_cloth(obj, shrink=0.2, shrink_group="Hem", damping=0.1, frame_start=1, frame_end=121)
    play(scene, 121)
    world = evaluated_world(obj)
    local = np.array([v.co[:] for v in obj.data.vertices])

    def edge_length(column):  # along the sheet's side: it may curve in the plane
        side = world[column][np.argsort(local[column, 1])]
        return np.linalg.norm(np.diff(side, axis=0), axis=1).sum()

    left, right = np.isclose(local[:, 0], local[:, 0].min()), np.isclose(local[:, 0], local[:, 0].max())
    assert edge_length(left) == pytest.approx(0.8, abs=0.03)  # the painted side, 20% shorter
    assert edge_length(right) == pytest.approx(1.0, abs=0.03)


def test_pressure_bake_matches_live_playback(scene):
    vertices, faces = cloth_cube(5, size=0.4, center=(0.0, 0.0, 1.0))
    pillow = mesh_object("Pillow", vertices, faces)
    make_cloth(pillow, use_pressure=True, pressure=800.0, frame_start=1, frame_end=6)
    live = {}
    for frame in range(1, 7):
        scene.frame_set(frame)
        live[frame] = evaluated_world(pillow)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    for frame in range(1, 7):
        scene.frame_set(frame)
        np.testing.assert_allclose(evaluated_world(pillow), live[frame], atol=1e-6)
    assert np.ptp(live[6], axis=0).min() > 0.4  # inflated past its 0.4 m


def test_mass_group_scales_the_masses_and_refuses_massless_vertices(scene):
    obj = make_grid(cuts=6)
    light = obj.vertex_groups.new(name="Light")
    light.add([v.index for v in obj.data.vertices], 0.5, "REPLACE")
    make_cloth(obj)
    plain = store.get(obj, scene, bpy.context.evaluated_depsgraph_get()).sim.model.mass.copy()
    obj.cloth_addon.mass_group = "Light"
    weighted = store.get(obj, scene, bpy.context.evaluated_depsgraph_get()).sim.model.mass
    np.testing.assert_allclose(weighted, 0.5 * plain)
    light.remove([0])
    store.discard(obj.session_uid)
    with pytest.raises(ValueError, match="Mass Group 'Light' leaves vertices with weight 0"):
        store.get(obj, scene, bpy.context.evaluated_depsgraph_get())


def test_stretch_group_blends_the_spring_stiffness(scene):
    obj = make_grid(cuts=6)
    group = obj.vertex_groups.new(name="Stiff")
    group.add([v.index for v in obj.data.vertices if v.co.x < 0], 1.0, "REPLACE")
    make_cloth(obj, stretch_group="Stiff", stretch_stiffness_max=5000.0)
    model = store.get(obj, scene, bpy.context.evaluated_depsgraph_get()).sim.model
    structural = model.spring_stiffness[model.spring_kind == 0]
    assert structural.min() == 500.0 and structural.max() == 5000.0
    assert set(np.round(structural)) == {500.0, 2750.0, 5000.0}


def test_bending_group_stiffens_the_painted_folds(scene):
    """The Bending Group blends each fold's bending stiffness from Bending to Max Bending: a
    sheet clamped along one edge and painted all over stands out, without the group it hangs."""
    def droop(painted):
        obj = make_grid(cuts=8, size=0.1, location=(0, 0, 1.0))
        # two columns: a clamp (a single pinned line is a hinge the sheet swings about freely)
        pin(obj, [v.index for v in obj.data.vertices if v.co.x < -0.03])
        stiff = obj.vertex_groups.new(name="Stiff")
        stiff.add([v.index for v in obj.data.vertices], 1.0, "REPLACE")
        make_cloth(obj, pin_group="Pins", bend_group="Stiff" if painted else "", bend_stiffness_max=2e-3,
                   frame_start=1, frame_end=41)
        model = store.get(obj, scene, bpy.context.evaluated_depsgraph_get()).sim.model
        scene.frame_set(1)
        play(scene, 40)
        z = evaluated_world(obj)[:, 2]
        bpy.data.objects.remove(obj)
        return 1.0 - z.min(), abs(model.bending).max()

    (held, stiff), (hanging, plain) = droop(True), droop(False)
    assert stiff == pytest.approx(100.0 * plain, rel=1e-6)  # Max Bending 2e-3 N m, Bending 2e-5
    assert held < 0.5 * hanging


class GreyingLayout(RecordingLayout):
    """RecordingLayout that also records greyed-out vertex-group and shape-key searches."""

    def row(self, **_):
        return GreyingLayout(self.log, self)

    column = row

    def prop_search(self, data, name, search_data, search_name, text=None, **_):
        super().prop_search(data, name, search_data, search_name, text)
        if self._greyed():
            self.log.append(("greyed", name))


def drawn(panel_class):
    """({property names drawn}, {those drawn greyed out}) by the panel's body and header."""
    log = []
    panel_class.draw(FakePanel(panel_class, GreyingLayout(log)), bpy.context)
    if hasattr(panel_class, "draw_header"):
        panel_class.draw_header(FakePanel(panel_class, GreyingLayout(log)), bpy.context)
    shown = {entry[1] for entry in log if entry[0] in ("prop", "prop_search")}
    return shown, {entry[1] for entry in log if entry[0] == "greyed"}


def test_panels_grey_out_what_is_off(scene):
    obj = make_cloth(make_grid())
    obj.vertex_groups.new(name="Stiff")
    obj.shape_key_add(name="Basis", from_mix=False)  # Rest Shape Key is offered once there are keys
    props = obj.cloth_addon

    def draw_all():
        shown, greyed = set(), set()
        for cls in garment_panels.CLASSES:
            assert cls.poll(bpy.context)
            more_shown, more_greyed = drawn(cls)
            shown |= more_shown
            greyed |= more_greyed
        return shown, greyed

    shown, greyed = draw_all()
    assert shown >= {"use_sewing", "sewing_force_max", "use_pressure", "pressure", "target_volume", "shrink",
                     "shrink_group", "rest_shape_key", "stretch_group", "stretch_stiffness_max", "mass_group"}
    switched = {"sewing_force_max", "pressure", "target_volume", "shrink_group", "stretch_stiffness_max"}
    assert greyed >= switched
    assert not greyed & {"use_sewing", "use_pressure", "shrink", "rest_shape_key", "stretch_group"}
    props.use_sewing = props.use_pressure = True
    props.shrink, props.stretch_group = 0.1, "Stiff"
    _, greyed = draw_all()
    assert not greyed & switched
    assert "bend_stiffness_max" in greyed



@pytest.mark.parametrize("in_collection", [False, True])
def test_only_colliders_in_the_collision_collection_collide(scene, in_collection):
    props_collection = bpy.data.collections.new("Props")
    scene.collection.children.link(props_collection)
    bpy.ops.mesh.primitive_plane_add(size=3.0, location=(0, 0, 0.5))
    floor = bpy.context.active_object
    floor.modifiers.new("Collision", "COLLISION")
    if in_collection:
        props_collection.objects.link(floor)
    obj = make_cloth(make_grid(cuts=6, size=1.0, location=(0, 0, 1.0)), collision_collection=props_collection)
    play(scene, 20)
    lowest = evaluated_world(obj)[:, 2].min()
    if in_collection:
        assert lowest >= 0.5 + floor.collision.thickness_outer
    else:
        assert lowest < 0.3  # fell through the floor (at 0.5) that is not in the collection
