"""Panel draw code, run against a recording layout that checks every property, operator and icon.

Background Blender has no UI to draw into, so this is how the panels' code paths get exercised.
"""

import bpy
import pytest
from conftest import make_cloth, make_grid, pin

from cloth_addon.blender import panels, stage, store

ICONS = set(bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys())


class RecordingLayout:
    """Stands in for bpy.types.UILayout: checks what is drawn and records it."""

    def __init__(self, log, parent=None):
        self.log, self.parent = log, parent
        self.enabled = self.active = True
        self.use_property_split = self.use_property_decorate = False

    def _check_icon(self, icon):
        assert icon in ICONS, icon

    def _greyed(self):
        """Drawn inactive, as Blender does, when this layout or one it is inside is inactive."""
        return not self.active or (self.parent is not None and self.parent._greyed())

    def row(self, **_):
        return RecordingLayout(self.log, self)

    column = row

    def prop(self, data, name, text=None, icon="NONE", **_):
        assert name in data.bl_rna.properties, name
        self._check_icon(icon)
        self.log.append(("prop", name))
        if self._greyed():
            self.log.append(("greyed", name))

    def prop_search(self, data, name, search_data, search_name, text=None, **_):
        assert name in data.bl_rna.properties and search_name in search_data.bl_rna.properties
        self.log.append(("prop_search", name, search_name))

    def operator(self, idname, text=None, icon="NONE", **_):
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        self._check_icon(icon)
        self.log.append(("operator", idname))
        return type("OperatorProperties", (), {})()

    def menu(self, idname, text=None, icon="NONE", **_):
        assert hasattr(bpy.types, idname), idname
        self._check_icon(icon)
        self.log.append(("menu", idname))

    def label(self, text="", icon="NONE", **_):
        self._check_icon(icon)
        self.log.append(("label", text))


class FakePanel:
    """`self` for a panel's methods: bpy panels cannot be instantiated outside a UI redraw."""

    def __init__(self, panel_class, layout):
        self.panel_class, self.layout = panel_class, layout

    def __getattr__(self, name):
        value = getattr(self.panel_class, name)
        return value.__get__(self) if callable(value) and not isinstance(value, type) else value


def draw(panel_class, method="draw"):
    log = []
    getattr(panel_class, method)(FakePanel(panel_class, RecordingLayout(log)), bpy.context)
    return log


@pytest.mark.parametrize("baked", [False, True])
def test_every_panel_draws_real_properties_and_operators(scene, baked):
    obj = make_grid()
    assert draw(panels.CLOTH_ADDON_PT_cloth) == [("operator", "cloth_addon.make_cloth")]
    make_cloth(obj)
    if baked:
        bpy.ops.cloth_addon.bake()
    store.errors[obj.session_uid] = "something went wrong"
    drawn = []
    for cls in panels.CLASSES:
        if issubclass(cls, bpy.types.Panel):
            assert cls.poll(bpy.context)
            drawn += draw(cls)
            if hasattr(cls, "draw_header"):
                drawn += draw(cls, "draw_header")
    drawn += draw(panels.CLOTH_ADDON_PT_cloth, "draw_header_preset")
    drawn += draw(panels.CLOTH_ADDON_MT_presets)
    props = {entry[1] for entry in drawn if entry[0] in ("prop", "prop_search")}
    assert props >= {"solver", "iterations", "substeps", "density", "stretch_stiffness", "pin_group",
                     "collision_distance", "use_self_collision", "use_tearing", "wind", "frame_start",
                     "bake_target"}
    assert ("operator", "cloth_addon.free_bake" if baked else "cloth_addon.bake") in drawn
    assert ("label", "something went wrong") in drawn
    assert ("label", panels.SUPPORTED_COLLIDERS) in drawn
    assert sum(entry == ("operator", "cloth_addon.apply_preset") for entry in drawn) == 5


def test_sub_panels_nest_like_blenders_cloth(scene):
    parents = {cls.bl_label: getattr(cls, "bl_parent_id", "") for cls in panels.CLASSES
               if issubclass(cls, bpy.types.Panel)}
    ids = {cls.bl_label: cls.bl_idname for cls in panels.CLASSES}
    assert parents["Stiffness (N/m)"] == parents["Damping"] == ids["Physical Properties"]
    assert parents["Self Collision"] == ids["Collisions"]
    for label in ("Physical Properties", "Shape", "Collisions", "Tearing", "Wind", "Cache / Bake"):
        assert parents[label] == ids["Cloth (numpy)"], label
    for label in parents:  # registered under those ids, so Blender draws them nested
        assert hasattr(bpy.types, ids[label]), label


def test_dependents_are_greyed_until_their_switch_or_group_is_set(scene):
    obj = make_cloth(make_grid())
    greyed = lambda cls: {entry[1] for entry in draw(cls) if entry[0] == "greyed"}  # noqa: E731
    # Dynamic Mesh has nothing to follow until a modifier above the stage deforms the mesh
    assert greyed(panels.CLOTH_ADDON_PT_shape) == {"pin_stiffness", "use_dynamic_mesh"}
    obj.cloth_addon.pin_group = "Pins"  # named, but no such group yet
    assert greyed(panels.CLOTH_ADDON_PT_shape) == {"pin_stiffness", "use_dynamic_mesh"}
    pin(obj, [0])
    assert greyed(panels.CLOTH_ADDON_PT_shape) == {"use_dynamic_mesh"}
    obj.modifiers.new("Wave", "WAVE")
    obj.modifiers.move(1, 0)
    assert greyed(panels.CLOTH_ADDON_PT_shape) == set()
    assert greyed(panels.CLOTH_ADDON_PT_self_collision) == {"self_distance"}
    assert greyed(panels.CLOTH_ADDON_PT_tearing) == {"tear_factor"}
    obj.cloth_addon.use_self_collision = obj.cloth_addon.use_tearing = True
    assert greyed(panels.CLOTH_ADDON_PT_self_collision) == greyed(panels.CLOTH_ADDON_PT_tearing) == set()


def test_shape_panel_names_what_drives_the_cloth(scene):
    obj = make_cloth(make_grid())
    labels = lambda: [entry[1] for entry in draw(panels.CLOTH_ADDON_PT_shape) if entry[0] == "label"]  # noqa: E731
    assert labels() == [f"Nothing above {stage.MODIFIER} in the stack"]
    obj.modifiers.new("Hook", "HOOK")
    obj.modifiers.move(1, 0)
    assert labels() == ["Driven by Hook"]
    obj.modifiers.remove(obj.modifiers[stage.MODIFIER])
    assert labels() == [f"No {stage.MODIFIER} modifier: use Make Cloth again"]


def test_collisions_panel_says_who_a_cloth_is_simulated_with(scene):
    alone = make_cloth(make_grid(name="Alone"))
    drawn = draw(panels.CLOTH_ADDON_PT_collisions)
    assert ("prop", "use_cloth_collision") in drawn
    assert not any(entry[0] == "label" and entry[1].startswith("Simulated with") for entry in drawn)
    make_cloth(make_grid(location=(3.0, 0.0, 1.0), name="Other"))
    labels = [entry[1] for entry in draw(panels.CLOTH_ADDON_PT_collisions) if entry[0] == "label"]
    assert "Simulated with: Alone" in labels and any("Alone's" in label for label in labels)
    assert len(store.find(alone.session_uid).members) == 2
