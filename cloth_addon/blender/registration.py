"""Register the Blender layer in dependency order; unregister in reverse."""

import bpy

from . import handlers, operators, panels, properties, session


def register():
    properties.register()
    for cls in operators.CLASSES + panels.CLASSES:
        bpy.utils.register_class(cls)
    handlers.register()


def unregister():
    handlers.unregister()
    session.clear()
    for cls in reversed(operators.CLASSES + panels.CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
