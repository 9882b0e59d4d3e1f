"""Files saved with release 0.1.0 of the add-on, brought up to date when they are opened.

Release 0.1.0 showed the live simulation in a shape key, ClothSim, at value 1 relative to the
Basis; since 0.2.0 the cloth stage (stage.py, a Geometry Nodes modifier) shows it. A cloth object
of an old file has that key and no stage: the cloth would not move (playback serves objects with
a stage), and the key, left on, would feed the last frame simulated back then into the stage as
the cloth's rest and start. Each such object loses the key and gets its stage. The Basis that
0.1.0 added stays: the user's own keys may be relative to it, and it holds the mesh's shape.
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
    return (keys is not None and keys.key_blocks.get(OLD_SIM_KEY) is not None) or stage.modifier(obj) is None


def upgrade(objects=None) -> list:
    """Upgrade every cloth object of `objects` (default: all of bpy.data) that needs it; returns
    their names."""
    done = []
    for obj in list(bpy.data.objects if objects is None else objects):
        if not needs_upgrade(obj):
            continue
        keys = obj.data.shape_keys
        old = None if keys is None else keys.key_blocks.get(OLD_SIM_KEY)
        if old is not None:
            obj.shape_key_remove(old)
        stage.ensure(obj)
        done.append(obj.name)
    return done
