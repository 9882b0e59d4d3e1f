"""Physics-tab sub-panels for sewing, pressure, shrinking / rest shape and property weights,
nested where Blender's Cloth has them:

    Cloth (numpy)
      Physical Properties
        Pressure           [x]   pressure, target volume (greyed while off)
      Shape
        Sewing             [x]   max sewing force (greyed while off)
        Shrinking / Rest Shape   factor, group (greyed at factor 0), rest shape key
      Property Weights           stretch / shear / bending group and max (max greyed without
                                 its group), mass group
"""

import bpy

from . import garment, ids, panels


class TogglePanel(panels.ToggledSubPanel):
    """A sub-panel with a header checkbox (`toggle`) greying its `settings` while off."""

    settings = ()

    def draw_settings(self, layout, props, obj):
        layout.active = getattr(props, self.toggle)
        for name in self.settings:
            layout.prop(props, name)


class CLOTH_ADDON_PT_sewing(TogglePanel, bpy.types.Panel):
    bl_parent_id = ids.SHAPE_PANEL
    bl_label = "Sewing"
    toggle, settings = "use_sewing", ("sewing_force_max",)


class CLOTH_ADDON_PT_pressure(TogglePanel, bpy.types.Panel):
    bl_parent_id = ids.PHYSICAL_PANEL
    bl_label = "Pressure"
    toggle, settings = "use_pressure", ("pressure", "target_volume")


class CLOTH_ADDON_PT_shrinking(panels.ClothSubPanel, bpy.types.Panel):
    bl_parent_id = ids.SHAPE_PANEL
    bl_label = "Shrinking / Rest Shape"

    def draw_settings(self, layout, props, obj):
        layout.prop(props, "shrink")
        group = layout.column()
        group.active = props.shrink != 0.0
        group.prop_search(props, "shrink_group", obj, "vertex_groups", text="Shrinking Group")
        keys = obj.data.shape_keys
        if keys is not None:
            layout.prop_search(props, "rest_shape_key", keys, "key_blocks", text="Rest Shape Key")


class CLOTH_ADDON_PT_property_weights(panels.ClothSubPanel, bpy.types.Panel):
    bl_label = "Property Weights"

    def draw_settings(self, layout, props, obj):
        for group, _, maximum in garment.WEIGHT_GROUPS:
            if group == "shrink_group":
                continue  # drawn with the shrinking factor
            column = layout.column(align=True)
            column.prop_search(props, group, obj, "vertex_groups")
            if maximum is not None:
                limit = column.column()
                limit.active = bool(getattr(props, group))
                limit.prop(props, maximum)


CLASSES = (CLOTH_ADDON_PT_sewing, CLOTH_ADDON_PT_pressure, CLOTH_ADDON_PT_shrinking,
           CLOTH_ADDON_PT_property_weights)
