"""Bake the live simulation to shape keys with keyframes, or to a PC2 file + Mesh Cache modifier.

A bake plays the frames through the live handler (so a baked frame is exactly the live frame),
copies the result shown at the cloth stage each frame (of every object simulated together with a
baked one too), and records in `cloth_addon.bake_record` everything it added or switched, which
is what free_bake undoes. A baked object plays back in Blender without the add-on:

- PC2: a Mesh Cache modifier placed right below the cloth stage overwrites the positions there;
  what is above the stage still runs (its result is replaced), what is below applies after.
- Shape keys: keys are mixed before every modifier, so the bake makes the key mix reach the
  stage unchanged: it turns off (viewport and render) the modifiers above the stage and mutes the
  object's own shape keys, whose deformation the baked shapes already hold; a Basis is added
  when the mesh had none. The stage then passes the baked shape on to the modifiers below.
In both, the stage stops showing the live result (its result attribute is removed).
"""

import json
import os

import bpy
import numpy as np

from ..core.pc2 import write_pc2
from . import groups, mesh_io, stage, store, tearing
from .ids import BAKE_KEY_PREFIX, CACHE_MODIFIER

LINEAR = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value
# Since Blender 4.4 f-curves live in an action's channelbag; Action.fcurves is gone in 5.0.
LAYERED_ACTIONS = bpy.app.version >= (4, 4, 0)


class BakeError(Exception):
    """A bake cannot start; the message is for the user."""


def cache_path(obj) -> str:
    props = obj.cloth_addon
    if props.cache_directory:
        folder = bpy.path.abspath(props.cache_directory)
    elif bpy.data.filepath:
        folder = os.path.join(os.path.dirname(bpy.data.filepath), "cloth_cache")
    else:
        raise BakeError(f"{obj.name}: save the .blend file or choose a Cache Folder for the PC2 bake")
    return os.path.join(folder, bpy.path.clean_name(obj.name) + ".pc2")


def _fcurves(key, record: dict):
    """The f-curve collection to add the bake's keyframes to, creating action/slot as needed."""
    anim = key.animation_data
    if anim is None:
        anim = key.animation_data_create()
        record["created_anim_data"] = True
    action = anim.action
    if action is None:
        action = bpy.data.actions.new(f"{key.user.name}_{BAKE_KEY_PREFIX}")
        anim.action = action
        record["created_action"] = action.name
    if not LAYERED_ACTIONS:
        return action.fcurves
    slot = anim.action_slot
    if slot is None:
        slot = action.slots.new(id_type="KEY", name=key.name)
        anim.action_slot = slot
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True).fcurves


def _existing_fcurves(key):
    anim = key.animation_data
    if anim is None or anim.action is None:
        return None
    if not LAYERED_ACTIONS:
        return anim.action.fcurves
    if anim.action_slot is None:
        return None
    for layer in anim.action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(anim.action_slot)
            if bag is not None:
                return bag.fcurves
    return None


def _key_pulse(fcurves, block, frame: int):
    """Keyframe the key's value 0 -> 1 -> 0 at frame-1, frame, frame+1, linear."""
    curve = fcurves.new(f'key_blocks["{bpy.utils.escape_identifier(block.name)}"].value', index=0)
    curve.keyframe_points.add(3)
    curve.keyframe_points.foreach_set("co", [frame - 1, 0.0, frame, 1.0, frame + 1, 0.0])
    curve.keyframe_points.foreach_set("interpolation", [LINEAR] * 3)
    curve.update()
    return curve


class Baker:
    """Bake some cloth objects frame by frame; begin(), step() until False, then finish() or cancel()."""

    def __init__(self, context, objects):
        self.scene = context.scene
        # Objects simulated together are baked together: baking one alone would leave the others
        # live, colliding with a cloth that no longer moves.
        objects = groups.with_partners(objects, self.scene)
        self.names = [obj.name for obj in objects]
        self.original_frame = self.scene.frame_current
        starts = [obj.cloth_addon.frame_start for obj in objects]
        ends = [max(obj.cloth_addon.frame_end, obj.cloth_addon.frame_start) for obj in objects]
        self.frames = list(range(min(starts), max(ends) + 1))
        self.index = 0
        self.records = {}
        self.samples = {}
        self.buffers = {}
        for obj in objects:
            store.errors.pop(obj.session_uid, None)  # only errors of this bake's frames count
            if obj.cloth_addon.is_baked:
                raise BakeError(f"{obj.name} is already baked; free the bake first")
            if stage.modifier(obj) is None:
                raise BakeError(f"{obj.name} has no {stage.MODIFIER} modifier (the cloth stage); "
                                "use Make Cloth again")
            if obj.cloth_addon.bake_target == "PC2":
                self.records[obj.name] = {"target": "PC2", "file": cache_path(obj)}
            else:
                self.records[obj.name] = {"target": "SHAPE_KEYS", "keys": [], "curves": []}

    def _objects(self):
        return [(self.scene.objects[name], self.records[name]) for name in self.names
                if name in self.scene.objects]

    @property
    def progress(self) -> float:
        return self.index / max(1, len(self.frames))

    def step(self) -> bool:
        """Bake the next frame; False when all frames are done."""
        if self.index >= len(self.frames):
            return False
        frame = self.frames[self.index]
        self.scene.frame_set(frame)
        for obj, record in self._objects():
            props = obj.cloth_addon
            if not props.frame_start <= frame <= props.frame_end:
                continue
            if obj.session_uid in store.errors:
                raise BakeError(f"{obj.name}: {store.errors[obj.session_uid]}")
            # The shown result's float32 coordinates go straight into the PC2 array or the new
            # key: no float64 round trip, no per-frame array for PC2.
            buffer = (self._pc2_samples(obj)[frame - props.frame_start] if record["target"] == "PC2"
                      else self._buffer(obj))
            if stage.read_result_into(obj, buffer) is None:
                raise BakeError(f"{obj.name}: frame {frame} was not simulated")
            if record["target"] != "PC2":
                self._add_key(obj, record, frame, buffer)
        self.index += 1
        return self.index < len(self.frames)

    def _pc2_samples(self, obj) -> np.ndarray:
        """(frames, n, 3) float32 for the object's whole frame range, allocated once."""
        samples = self.samples.get(obj.name)
        if samples is None:
            props = obj.cloth_addon
            frames = max(props.frame_end, props.frame_start) - props.frame_start + 1
            samples = self.samples[obj.name] = np.empty((frames, len(obj.data.vertices), 3), np.float32)
        return samples

    def _buffer(self, obj) -> np.ndarray:
        """(n, 3) float32 staging buffer for one object's shape-key copies, allocated once."""
        buffer = self.buffers.get(obj.name)
        if buffer is None:
            buffer = self.buffers[obj.name] = np.empty((len(obj.data.vertices), 3), np.float32)
        return buffer

    def _add_key(self, obj, record, frame, local) -> None:
        if obj.data.shape_keys is None:
            # Without a Basis the first key added would become the Basis itself.
            obj.shape_key_add(name="Basis", from_mix=False)
            record["added_basis"] = True
        block = obj.shape_key_add(name=f"{BAKE_KEY_PREFIX}.{frame:04d}", from_mix=False)
        block.relative_key = obj.data.shape_keys.reference_key
        block.value = 0.0
        record["keys"].append(block.name)
        mesh_io.write_key(block, local)
        fcurves = _fcurves(obj.data.shape_keys, record)
        record["curves"].append(_key_pulse(fcurves, block, frame).data_path)

    def finish(self) -> None:
        """Write PC2 files and modifiers, switch the objects to their bake, restore the frame."""
        for obj, record in self._objects():
            if record["target"] == "PC2":
                path = record["file"]
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write_pc2(path, self.samples[obj.name], obj.cloth_addon.frame_start)
                modifier = obj.modifiers.new(CACHE_MODIFIER, "MESH_CACHE")
                modifier.cache_format = "PC2"
                modifier.filepath = bpy.path.relpath(path) if bpy.data.filepath else path
                modifier.frame_start = obj.cloth_addon.frame_start
                # At the cloth stage: it replaces what the deformers above made, and the
                # modifiers below apply to it.
                stage.place_below(obj, modifier)
                record["modifier"] = modifier.name
            else:
                _replace_deformers(obj, record)
            stage.clear_result(obj)
            obj.cloth_addon.bake_record = json.dumps(record)
            obj.data.update_tag()
            # A baked object is never simulated live (Free Bake rebuilds), so its frame cache,
            # 24 bytes a vertex a frame (60 MB for 250 frames of 10,000 vertices), can go now.
            store.discard(obj.session_uid)
        self.samples.clear()
        self.scene.frame_set(self.original_frame)

    def cancel(self) -> None:
        """Remove what the bake added so far: the objects are exactly as before."""
        for obj, record in self._objects():
            remove(obj, record)
        self.scene.frame_set(self.original_frame)


def _replace_deformers(obj, record: dict) -> None:
    """Let the baked keys reach the cloth stage as they are: turn off the modifiers above the
    stage and mute the object's own shape keys (their deformation is in the baked shapes),
    recording how they were so that free_bake restores them."""
    record["modifiers_off"] = [[m.name, m.show_viewport, m.show_render] for m in stage.above(obj)]
    for modifier in stage.above(obj):
        modifier.show_viewport = modifier.show_render = False
    record["muted_keys"] = [[block.name, block.mute] for block in stage.user_shape_keys(obj)]
    for block in stage.user_shape_keys(obj):
        block.mute = True


def remove(obj, record: dict) -> None:
    """Undo a (partial) bake described by record."""
    key = obj.data.shape_keys
    if key is not None:
        fcurves = _existing_fcurves(key)
        if fcurves is not None:
            for path in record.get("curves", ()):
                curve = fcurves.find(path, index=0)
                if curve is not None:
                    fcurves.remove(curve)
        for name in record.get("keys", ()):
            block = key.key_blocks.get(name)
            if block is not None:
                obj.shape_key_remove(block)
        action = bpy.data.actions.get(record.get("created_action") or "")
        if action is not None:
            if key.animation_data is not None and key.animation_data.action == action:
                key.animation_data.action = None
            bpy.data.actions.remove(action)
        if record.get("created_anim_data") and key.animation_data is not None:
            key.animation_data_clear()
        for name, mute in record.get("muted_keys", ()):
            block = key.key_blocks.get(name)
            if block is not None:
                block.mute = mute
        if record.get("added_basis") and len(key.key_blocks) == 1:
            obj.shape_key_clear()
    for name, viewport, render in record.get("modifiers_off", ()):
        modifier = obj.modifiers.get(name)
        if modifier is not None:
            modifier.show_viewport, modifier.show_render = viewport, render
    modifier = obj.modifiers.get(record.get("modifier") or "")
    if modifier is not None:
        obj.modifiers.remove(modifier)
    path = record.get("file")
    if path and os.path.exists(path) and "modifier" in record:
        os.remove(path)
    obj.data.update_tag()


def free(obj) -> bool:
    """Remove the object's bake; False when it had none."""
    if not obj.cloth_addon.bake_record:
        return False
    remove(obj, json.loads(obj.cloth_addon.bake_record))
    obj.cloth_addon.bake_record = ""
    tearing.remove(obj)  # the live playback shows the cut again if it tears again
    store.discard(obj.session_uid)
    return True
