"""Register the Blender layer in dependency order; unregister in reverse."""

import bpy

from . import cli, garment_panels, handlers, mesh_io, operators, panels, properties, store


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
    # Without the add-on nothing updates the ClothSim keys: mute them so that every cloth object
    # shows its own mesh again (the handler unmutes a key when it next writes it).
    for obj in bpy.data.objects:
        block = mesh_io.sim_key(obj) if obj.type == "MESH" else None
        if block is not None:
            block.mute = True
    for cls in reversed(operators.CLASSES + panels.CLASSES + garment_panels.CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
