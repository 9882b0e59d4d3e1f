"""cloth_addon: fast cloth for Blender with a pure-numpy solver core.

Blender imports this package as `bl_ext.<repo>.cloth_addon` and calls register(). The
Blender layer is imported lazily so that `cloth_addon.core` works without bpy.
"""


def register():
    from .blender import registration
    registration.register()


def unregister():
    from .blender import registration
    registration.unregister()
