"""Operator, menu and panel ids, and the names of what a bake adds, in one place: panels draw
operators by these, the modules that meet a bake's keys and modifier tell them by these, tests
call and find them by these."""

MAKE_CLOTH = "cloth_addon.make_cloth"
REMOVE_CLOTH = "cloth_addon.remove_cloth"
RESET = "cloth_addon.reset"
BAKE = "cloth_addon.bake"
FREE_BAKE = "cloth_addon.free_bake"
APPLY_PRESET = "cloth_addon.apply_preset"

PRESETS_MENU = "CLOTH_ADDON_MT_presets"

CLOTH_PANEL = "CLOTH_ADDON_PT_cloth"
PHYSICAL_PANEL = "CLOTH_ADDON_PT_physical"
STIFFNESS_PANEL = "CLOTH_ADDON_PT_stiffness"
DAMPING_PANEL = "CLOTH_ADDON_PT_damping"
SHAPE_PANEL = "CLOTH_ADDON_PT_shape"
COLLISIONS_PANEL = "CLOTH_ADDON_PT_collisions"
SELF_COLLISION_PANEL = "CLOTH_ADDON_PT_self_collision"
TEARING_PANEL = "CLOTH_ADDON_PT_tearing"
WIND_PANEL = "CLOTH_ADDON_PT_wind"
CACHE_PANEL = "CLOTH_ADDON_PT_cache"

# What a bake adds to an object: shape keys ClothBake.<frame>, or a Mesh Cache modifier.
BAKE_KEY_PREFIX = "ClothBake"
CACHE_MODIFIER = "ClothCache"
