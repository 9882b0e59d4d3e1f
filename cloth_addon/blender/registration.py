"""Register the Blender layer in dependency order; unregister in reverse."""

import bpy

from . import cli, garment_panels, handlers, operators, panels, properties, stage, store


def register():
    properties.register()
    for cls in operators.CLASSES + panels.CLASSES + garment_panels.CLASSES:
        bpy.utils.register_class(cls)
    handlers.register()
    cli.register()


def unregister():
    cli.unregister()
    handlers.unregister()
    store.clear()
    # Without the add-on nothing updates the live results: take them away so that every cloth
    # object shows its own (deformed) mesh again; playing writes them again. Bakes stay.
    for obj in bpy.data.objects:
        if obj.type == "MESH" and stage.modifier(obj) is not None:
            stage.clear_result(obj)
    for cls in reversed(operators.CLASSES + panels.CLASSES + garment_panels.CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
