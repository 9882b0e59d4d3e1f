"""Physics-tab panels, nested like Blender's own Cloth panels (properties_physics_cloth.py).

    Cloth (numpy)                 make / remove / reset, solver, iterations, substeps
      Physical Properties         density, air drag
        Stiffness                 stretch, shear, bending
        Damping
      Shape                       pin group, pin stiffness (greyed without a pin group)
      Collisions                  distance, friction, colliders it cannot use, cloth objects
        Self Collision   [x]      distance (greyed while off)
      Tearing            [x]      tear factor (greyed while off)
      Wind
      Cache / Bake                frame range, target, Bake / Free Bake
"""

import bpy

from . import ids, presets, stage, store

SUPPORTED_COLLIDERS = "Colliders: every Collision object's mesh (any shape, moving or deforming)"


class CLOTH_ADDON_MT_presets(bpy.types.Menu):
    bl_idname = ids.PRESETS_MENU
    bl_label = "Cloth Presets"

    def draw(self, context):
        layout = self.layout
        for identifier, name, _ in presets.PRESET_ITEMS:
            layout.operator(ids.APPLY_PRESET, text=name).preset = identifier


class PhysicsPanel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and obj.type == "MESH"


class ClothSubPanel(PhysicsPanel):
    """A sub-panel of a cloth object; its settings are read-only while the object is baked."""

    bl_parent_id = ids.CLOTH_PANEL
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return super().poll(context) and context.object.cloth_addon.enabled

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.enabled = not context.object.cloth_addon.is_baked
        self.draw_settings(layout, context.object.cloth_addon, context.object)


class CLOTH_ADDON_PT_cloth(PhysicsPanel, bpy.types.Panel):
    bl_idname = ids.CLOTH_PANEL
    bl_label = "Cloth (numpy)"

    def draw_header_preset(self, context):
        if context.object.cloth_addon.enabled:
            self.layout.menu(ids.PRESETS_MENU, text="Presets", icon="PRESET")

    def draw(self, context):
        layout = self.layout
        obj = context.object
        props = obj.cloth_addon
        if not props.enabled:
            layout.operator(ids.MAKE_CLOTH, icon="MOD_CLOTH")
            return
        row = layout.row(align=True)
        row.operator(ids.REMOVE_CLOTH, icon="X")
        row.operator(ids.RESET, icon="FILE_REFRESH")
        error = store.errors.get(obj.session_uid)
        if error:
            layout.label(text=error, icon="ERROR")
        layout.use_property_split = True
        layout.prop(props, "solver")
        col = layout.column(align=True)
        col.prop(props, "iterations")
        col.prop(props, "substeps")


class CLOTH_ADDON_PT_physical(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.PHYSICAL_PANEL
    bl_label = "Physical Properties"
    bl_options = set()

    def draw_settings(self, layout, props, obj):
        layout.prop(props, "density", text="Density (kg/m²)")
        layout.prop(props, "air_drag", text="Air Drag (kg/m³)")
        layout.prop(props, "air_lift", text="Air Lift (× drag)")


class CLOTH_ADDON_PT_stiffness(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.STIFFNESS_PANEL
    bl_parent_id = ids.PHYSICAL_PANEL
    bl_label = "Stiffness (N/m)"

    def draw_settings(self, layout, props, obj):
        col = layout.column(align=True)
        col.prop(props, "stretch_stiffness")
        col.prop(props, "shear_stiffness")
        col.prop(props, "bend_stiffness")
        col.prop(props, "compression")


class CLOTH_ADDON_PT_damping(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.DAMPING_PANEL
    bl_parent_id = ids.PHYSICAL_PANEL
    bl_label = "Damping"

    def draw_settings(self, layout, props, obj):
        col = layout.column(align=True)
        col.prop(props, "damping")
        col.prop(props, "spring_damping")


class CLOTH_ADDON_PT_shape(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.SHAPE_PANEL
    bl_label = "Shape"

    def draw_settings(self, layout, props, obj):
        layout.prop_search(props, "pin_group", obj, "vertex_groups", text="Pin Group")
        sub = layout.column()
        sub.active = props.pin_group in obj.vertex_groups  # nothing is pinned without the group
        sub.prop(props, "pin_stiffness")
        # The cloth's place in the stack, as Blender's Cloth shows its own modifier.
        if stage.modifier(obj) is None:
            layout.label(text=f"No {stage.MODIFIER} modifier: use Make Cloth again", icon="ERROR")
        else:
            drivers = [modifier.name for modifier in stage.above(obj)]
            layout.label(text=f"Driven by {', '.join(drivers)}" if drivers
                         else f"Nothing above {stage.MODIFIER} in the stack", icon="MODIFIER")
        row = layout.row()
        row.active = stage.is_deformed(obj)  # without deformers the rest shape never changes
        row.prop(props, "use_dynamic_mesh")


class CLOTH_ADDON_PT_collisions(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.COLLISIONS_PANEL
    bl_label = "Collisions"

    def draw_settings(self, layout, props, obj):
        layout.prop(props, "collision_distance")
        layout.prop(props, "friction")
        layout.prop(props, "collision_collection")
        layout.label(text=SUPPORTED_COLLIDERS, icon="INFO")
        live = store.find(obj.session_uid)
        if live is not None and live.unsupported:
            layout.label(text="Ignored (no faces): " + ", ".join(live.unsupported), icon="ERROR")
        layout.prop(props, "use_cloth_collision")
        if live is not None and len(live.members) > 1:
            draw_group(layout, live, obj)


def draw_group(layout, live, obj) -> None:
    """Who is simulated with the object, and what comes from the group's leader."""
    col = layout.column(align=True)
    others = [member.name for member in live.members if member.uid != obj.session_uid]
    col.label(text="Simulated with: " + ", ".join(others), icon="LINKED")
    leader = live.members[0].name
    col.label(text=f"Solver, substeps, contact, wind, tearing: {leader}'s", icon="INFO")
    col.label(text="Self collision is on for every one of them", icon="INFO")


class ToggledSubPanel(ClothSubPanel):
    """A sub-panel whose header checkbox (`toggle`) switches its one `setting` on and off."""

    toggle = setting = ""

    def draw_header(self, context):
        props = context.object.cloth_addon
        self.layout.enabled = not props.is_baked
        self.layout.prop(props, self.toggle, text="")

    def draw_settings(self, layout, props, obj):
        layout.active = getattr(props, self.toggle)
        layout.prop(props, self.setting)


class CLOTH_ADDON_PT_self_collision(ToggledSubPanel, bpy.types.Panel):
    bl_idname = ids.SELF_COLLISION_PANEL
    bl_parent_id = ids.COLLISIONS_PANEL
    bl_label = "Self Collision"
    toggle, setting = "use_self_collision", "self_distance"


class CLOTH_ADDON_PT_tearing(ToggledSubPanel, bpy.types.Panel):
    bl_idname = ids.TEARING_PANEL
    bl_label = "Tearing"
    toggle, setting = "use_tearing", "tear_factor"


class CLOTH_ADDON_PT_wind(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.WIND_PANEL
    bl_label = "Wind"

    def draw_settings(self, layout, props, obj):
        layout.prop(props, "wind")
        column = layout.column(align=True)
        column.label(text="Plus the scene's Wind fields: Strength (m/s) along their Z axis,", icon="INFO")
        column.label(text="Noise and Seed (gusts), Shape, Falloff and Min/Max Distance.")
        column.label(text="Not used: Flow, Wind Factor, Absorption, Field Weights.")


class CLOTH_ADDON_PT_cache(ClothSubPanel, bpy.types.Panel):
    bl_idname = ids.CACHE_PANEL
    bl_label = "Cache / Bake"
    bl_options = set()

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        props = context.object.cloth_addon
        settings = layout.column()
        settings.enabled = not props.is_baked
        col = settings.column(align=True)
        col.prop(props, "frame_start")
        col.prop(props, "frame_end")
        settings.prop(props, "bake_target")
        if props.bake_target == "PC2":
            settings.prop(props, "cache_directory")
        row = layout.row(align=True)
        if props.is_baked:
            row.operator(ids.FREE_BAKE, icon="TRASH")
        else:
            row.operator(ids.BAKE, icon="REC")


# Parents before their sub-panels: Blender needs a parent registered first.
CLASSES = (CLOTH_ADDON_MT_presets, CLOTH_ADDON_PT_cloth, CLOTH_ADDON_PT_physical, CLOTH_ADDON_PT_stiffness,
           CLOTH_ADDON_PT_damping, CLOTH_ADDON_PT_shape, CLOTH_ADDON_PT_collisions,
           CLOTH_ADDON_PT_self_collision, CLOTH_ADDON_PT_tearing, CLOTH_ADDON_PT_wind, CLOTH_ADDON_PT_cache)
