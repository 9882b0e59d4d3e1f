"""Files saved with release 0.1.0 of the add-on, brought up to date when they are opened.

Release 0.1.0 showed the live simulation in a shape key, ClothSim, at value 1 relative to the
Basis; since 0.2.0 the cloth stage (stage.py, a Geometry Nodes modifier) shows it. A cloth object
of an old file has that key and no stage: the cloth would not move (playback serves objects with
a stage), and the key, left on, would feed the last frame simulated back then into the stage as
the cloth's rest and start. Each such object (a ClothSim key and no stage: nothing else has
that signature, and a stage the user removed later is left removed) loses the key and gets its
stage, and Max Bending, then in N/m, goes back to its default (it is in N·m since). The Basis
that 0.1.0 added stays: the user's own keys may be relative to it, and it holds the mesh's shape.
Make Cloth upgrades an object appended from such a file, which no file load saw.
"""

import bpy

from . import stage

OLD_SIM_KEY = "ClothSim"


def needs_upgrade(obj) -> bool:
    """Whether obj is a cloth object as release 0.1.0 left it (editable, not linked)."""
    if obj.type != "MESH" or not obj.cloth_addon.enabled:
        return False
    if obj.library is not None or obj.data.library is not None:
        return False
    keys = obj.data.shape_keys
    return keys is not None and keys.key_blocks.get(OLD_SIM_KEY) is not None and stage.modifier(obj) is None


def upgrade(objects=None) -> list:
    """Upgrade every cloth object of `objects` (default: all of bpy.data) that needs it; returns
    their names. An object that cannot be changed is reported and skipped; the others go on."""
    done = []
    for obj in list(bpy.data.objects if objects is None else objects):
        if not needs_upgrade(obj):
            continue
        try:
            obj.shape_key_remove(obj.data.shape_keys.key_blocks[OLD_SIM_KEY])
            obj.cloth_addon.property_unset("bend_stiffness_max")
            stage.ensure(obj)
        except (RuntimeError, ReferenceError, KeyError) as error:
            print(f"Cloth add-on: could not upgrade {obj.name}: {error}")
            continue
        done.append(obj.name)
    return done
