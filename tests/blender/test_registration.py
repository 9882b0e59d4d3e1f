"""Registration, properties, presets and operator input checks."""

import bpy
import pytest
from conftest import make_cloth, make_grid, select_only

from cloth_addon.blender import handlers, presets, stage, store
from cloth_addon.blender.settings import settings_from


def _handler_count():
    """How many of the add-on's handlers are installed; each must be there once."""
    counts = {sum(getattr(h, "__name__", "") == function.__name__ for h in handler_list)
              for handler_list, function in handlers.HANDLERS}
    assert len(counts) == 1, counts
    return counts.pop()


def test_register_unregister_twice_leaves_one_handler(addon):
    for _ in range(2):
        addon.unregister()
        assert _handler_count() == 0
        assert not hasattr(bpy.types.Object, "cloth_addon")
        addon.register()
        assert _handler_count() == 1
    handlers.register()  # a second registration of the handlers must not add a duplicate
    assert _handler_count() == 1
    assert all(hasattr(bpy.ops.cloth_addon, op) for op in ("make_cloth", "remove_cloth", "reset", "bake",
                                                           "free_bake"))


def test_every_physical_setting_reaches_the_core(scene):
    props = make_grid().cloth_addon
    changed = {"iterations": 7, "substeps": 3, "density": 0.4, "stretch_stiffness": 900.0,
               "shear_stiffness": 80.0, "bend_stiffness": 3e-4, "compression": 0.6, "damping": 0.02,
               "air_drag": 0.5, "air_lift": 0.5, "friction": 0.7, "collision_distance": 0.01}
    for field, value in changed.items():
        setattr(props, field, value)
    settings = settings_from(props, scene)
    for field, value in changed.items():
        assert getattr(settings, field) == pytest.approx(value, rel=1e-6), field
    # the enum values scripts set (Object.cloth_addon.solver = "VERLET", bake_target = "PC2")
    rna = props.bl_rna.properties
    assert set(rna["solver"].enum_items.keys()) == {"FAST_MASS_SPRING", "VERLET"}
    assert set(rna["bake_target"].enum_items.keys()) == {"SHAPE_KEYS", "PC2"}


@pytest.mark.parametrize("name", ["COTTON", "SILK", "DENIM", "LEATHER", "RUBBER"])
def test_presets_apply(scene, name):
    obj = make_grid()
    select_only(obj)
    assert bpy.ops.cloth_addon.apply_preset(preset=name) == {"FINISHED"}
    for field, value in presets.PRESETS[name].items():
        assert getattr(obj.cloth_addon, field) == pytest.approx(value, rel=1e-6)


def _cancelled_with(message, op):
    """An operator that reports an error raises RuntimeError with that report when called from Python."""
    with pytest.raises(RuntimeError, match=message) as caught:
        op()
    assert "Traceback" not in str(caught.value)


def test_make_cloth_greys_out_without_a_mesh_and_skips_an_empty_mesh(scene):
    bpy.ops.object.empty_add()
    empty = bpy.context.active_object
    select_only(empty)
    assert not bpy.ops.cloth_addon.make_cloth.poll()
    _cancelled_with("Select a mesh object", bpy.ops.cloth_addon.make_cloth)
    mesh_obj = bpy.data.objects.new("Empty mesh", bpy.data.meshes.new("Empty mesh"))
    scene.collection.objects.link(mesh_obj)
    select_only(mesh_obj)
    _cancelled_with("no vertices", bpy.ops.cloth_addon.make_cloth)
    grid = make_grid()
    grid.cloth_addon.solver = "VERLET"
    for obj in (empty, mesh_obj, grid):
        obj.select_set(True)
    assert bpy.ops.cloth_addon.make_cloth() == {"FINISHED"}
    assert grid.cloth_addon.enabled and not mesh_obj.cloth_addon.enabled
    assert mesh_obj.data.shape_keys is None


def test_operators_grey_out_until_the_selection_fits(scene):
    """Each button is available exactly when a selected object fits it (Blender greys out the rest)."""
    ops = bpy.ops.cloth_addon

    def available():
        return {name for name in ("make_cloth", "remove_cloth", "reset", "bake", "free_bake", "apply_preset")
                if getattr(ops, name).poll()}

    bpy.ops.object.empty_add()
    assert available() == set()
    grid = make_grid()
    select_only(grid)
    assert available() == {"make_cloth", "apply_preset"}
    for op in (ops.remove_cloth, ops.reset, ops.bake):
        _cancelled_with("Select a cloth object", op)
    _cancelled_with("Select a baked cloth object", ops.free_bake)
    make_cloth(grid)
    assert available() == {"make_cloth", "apply_preset", "remove_cloth", "reset", "bake"}
    assert ops.bake() == {"FINISHED"}
    assert available() == {"make_cloth", "apply_preset", "remove_cloth", "reset", "bake", "free_bake"}
    grid.select_set(False)  # nothing selected: the active object still counts
    assert "free_bake" in available()


def test_pc2_bake_of_unsaved_file_without_folder_is_refused(scene):
    grid = make_cloth(make_grid(), bake_target="PC2")
    _cancelled_with("save the .blend file", bpy.ops.cloth_addon.bake)
    assert not grid.cloth_addon.is_baked and [m.name for m in grid.modifiers] == [stage.MODIFIER]


def test_settings_reach_the_core(scene):
    bpy.ops.object.effector_add(type="WIND")  # field Z = world +Z
    bpy.context.active_object.field.strength = 2.0
    props = make_grid().cloth_addon
    props.solver, props.use_tearing, props.tear_factor = "VERLET", True, 1.7
    props.use_self_collision, props.self_distance, props.wind = True, 0.02, (1.0, 0.0, 0.0)
    scene.render.fps = 30
    settings = settings_from(props, scene)
    assert settings.solver == "verlet" and settings.tear_factor == pytest.approx(1.7)
    assert settings.dt == pytest.approx(1 / 30) and settings.gravity == pytest.approx((0, 0, -9.81))
    assert settings.self_collision and settings.self_collision_distance == pytest.approx(0.02)
    assert settings.collision_distance == pytest.approx(props.collision_distance)
    assert settings.wind == pytest.approx((1.0, 0.0, 0.0))  # the fields go to the Simulation apart
    assert settings.air_drag == pytest.approx(props.air_drag)
    assert settings.air_lift == pytest.approx(props.air_lift)
    props.spring_damping = 0.004
    assert settings_from(props, scene).spring_damping == pytest.approx(0.004)
    props.use_tearing = False
    assert settings_from(props, scene).tear_factor is None


def test_deleted_objects_are_forgotten(scene):
    obj = make_cloth(make_grid())
    scene.frame_set(3)
    uid = obj.session_uid
    assert uid in store.live_uids()
    bpy.data.objects.remove(obj)
    scene.frame_set(4)
    assert uid not in store.live_uids()
