"""Operators bpy.ops.cloth_addon.*: gather the selection, call the core, write back, report.

They act on the selected objects (or the active one when nothing is selected). `poll` greys a
button out while nothing selected fits, and says why in its tooltip; objects that fit but
cannot be used are skipped with a warning, and an operator with nothing left cancels with an
error instead of raising.
"""

import bpy
from bpy.props import EnumProperty

from . import bake, ids, legacy, playback, presets, selection, stage, store, tearing


def is_mesh(obj) -> bool:
    return obj.type == "MESH"


def is_cloth(obj) -> bool:
    return obj.type == "MESH" and obj.cloth_addon.enabled


def is_baked(obj) -> bool:
    return obj.type == "MESH" and obj.cloth_addon.is_baked


class SelectionOperator:
    """Acts on the selected objects that `fits`; `wanted` says which in the poll message."""

    bl_options = {"REGISTER", "UNDO"}
    fits = staticmethod(is_mesh)
    wanted = "a mesh object"

    @classmethod
    def targets(cls, context) -> list:
        return [obj for obj in selection.targets(context) if cls.fits(obj)]

    @classmethod
    def poll(cls, context):
        if cls.targets(context):
            return True
        cls.poll_message_set(f"Select {cls.wanted}")
        return False

    def gather(self, context) -> list:
        """The objects to act on; reports why when there are none (the context changed after poll)."""
        objects = self.targets(context)
        if not objects:
            self.report({"ERROR"}, f"Select {self.wanted}")
        return objects

    def execute(self, context):
        objects = self.gather(context)
        return self.run(context, objects) if objects else {"CANCELLED"}

    def run(self, context, objects) -> set:
        raise NotImplementedError


class ClothOperator(SelectionOperator):
    """Acts on the selected objects that are cloth already."""

    fits = staticmethod(is_cloth)
    wanted = "a cloth object"


def _names(objects) -> str:
    return ", ".join(obj.name for obj in objects)


def _rebuild(context, obj) -> None:
    """A new simulation from the current mesh and settings, shown at the current frame."""
    depsgraph = context.evaluated_depsgraph_get()
    store.get(obj, context.scene, depsgraph, rebuild=True)
    playback.update_object(obj, context.scene, depsgraph)


def _unusable(obj) -> str:
    """Why a mesh cannot become cloth, or "" when it can."""
    if len(obj.data.vertices) == 0:
        return "has no vertices"
    if obj.mode == "EDIT":
        return "is in Edit Mode"
    if obj.data.shape_keys is not None and not obj.data.shape_keys.use_relative:
        return "uses absolute shape keys"
    return ""


class CLOTH_ADDON_OT_make_cloth(SelectionOperator, bpy.types.Operator):
    """Simulate the selected meshes as cloth (adds the ClothSim modifier, the cloth's place in the stack)"""

    bl_idname = ids.MAKE_CLOTH
    bl_label = "Make Cloth"

    def run(self, context, objects):
        made, skipped = [], []
        for obj in objects:
            why = _unusable(obj)
            if why:
                skipped.append(f"{obj.name} {why}")
                continue
            props = obj.cloth_addon
            if (props.frame_start, props.frame_end) == (1, 250):
                props.frame_start, props.frame_end = context.scene.frame_start, context.scene.frame_end
            try:
                legacy.upgrade([obj])  # appended from a file of release 0.1.0
                stage.ensure(obj)
            except RuntimeError as error:  # e.g. a linked (library) object's stack cannot change
                skipped.append(f"{obj.name}: {error}")
                continue
            props.enabled = True
            try:
                _rebuild(context, obj)
            except Exception as error:  # the core's message is the user's best hint; never raise
                _strip(obj)
                skipped.append(f"{obj.name}: {error}")
                continue
            made.append(obj.name)
        if skipped:
            self.report({"WARNING"}, "Skipped " + "; ".join(skipped))
        if not made:
            self.report({"ERROR"}, "No cloth made: " + "; ".join(skipped))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Made cloth: {', '.join(made)}")
        return {"FINISHED"}


def _strip(obj) -> None:
    """Remove the cloth from an object: its bake, its cut, its cloth stage."""
    bake.free(obj)
    tearing.remove(obj)
    stage.remove(obj)
    obj.cloth_addon.enabled = False
    store.discard(obj.session_uid)
    obj.data.update_tag()


class CLOTH_ADDON_OT_remove_cloth(ClothOperator, bpy.types.Operator):
    """Stop simulating the selected objects and remove everything the cloth added"""

    bl_idname = ids.REMOVE_CLOTH
    bl_label = "Remove Cloth"

    def run(self, context, objects):
        for obj in objects:
            _strip(obj)
        self.report({"INFO"}, f"Removed cloth from {_names(objects)}")
        return {"FINISHED"}


class CLOTH_ADDON_OT_reset(ClothOperator, bpy.types.Operator):
    """Forget the computed frames and rebuild the simulation from the current settings and mesh"""

    bl_idname = ids.RESET
    bl_label = "Reset Simulation"
    bl_options = {"REGISTER"}

    def run(self, context, objects):
        for obj in objects:
            try:
                _rebuild(context, obj)
            except Exception as error:
                self.report({"ERROR"}, f"{obj.name}: {error}")
                return {"CANCELLED"}
        self.report({"INFO"}, f"Reset {len(objects)} cloth object(s)")
        return {"FINISHED"}


class CLOTH_ADDON_OT_bake(ClothOperator, bpy.types.Operator):
    """Bake the selected cloth objects' frame range to shape keys or a PC2 cache (Esc cancels)"""

    bl_idname = ids.BAKE
    bl_label = "Bake"
    _baker = None
    _timer = None

    def _start(self, context, objects):
        try:
            return bake.Baker(context, objects)
        except bake.BakeError as error:
            self.report({"ERROR"}, str(error))
            return None

    def run(self, context, objects):
        baker = self._start(context, objects)
        if baker is None:
            return {"CANCELLED"}
        try:
            while baker.step():
                pass
        except Exception as error:
            baker.cancel()
            self.report({"ERROR"}, f"Bake failed: {error}")
            return {"CANCELLED"}
        baker.finish()
        self.report({"INFO"}, f"Baked {len(baker.frames)} frames of {', '.join(baker.names)}")
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        objects = self.gather(context)
        self._baker = self._start(context, objects) if objects else None
        if self._baker is None:
            return {"CANCELLED"}
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC":
            self._baker.cancel()
            self._end(context)
            self.report({"WARNING"}, "Bake cancelled; nothing was kept")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            more = self._baker.step()
        except Exception as error:
            self._baker.cancel()
            self._end(context)
            self.report({"ERROR"}, f"Bake failed: {error}")
            return {"CANCELLED"}
        context.window_manager.progress_update(int(100 * self._baker.progress))
        if more:
            return {"RUNNING_MODAL"}
        self._baker.finish()
        self._end(context)
        self.report({"INFO"}, f"Baked {len(self._baker.frames)} frames")
        return {"FINISHED"}

    def _end(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()


class CLOTH_ADDON_OT_free_bake(SelectionOperator, bpy.types.Operator):
    """Remove every shape key, keyframe, file and modifier the bake added"""

    bl_idname = ids.FREE_BAKE
    bl_label = "Free Bake"
    fits = staticmethod(is_baked)
    wanted = "a baked cloth object"

    def run(self, context, objects):
        for obj in objects:
            bake.free(obj)
            if obj.cloth_addon.enabled:
                playback.update_object(obj, context.scene, context.evaluated_depsgraph_get())
        self.report({"INFO"}, f"Freed the bake of {_names(objects)}")
        return {"FINISHED"}


class CLOTH_ADDON_OT_apply_preset(SelectionOperator, bpy.types.Operator):
    """Set density, stiffness and damping to a typical fabric"""

    bl_idname = ids.APPLY_PRESET
    bl_label = "Apply Cloth Preset"

    preset: EnumProperty(name="Preset", items=presets.PRESET_ITEMS)

    def run(self, context, objects):
        for obj in objects:
            presets.apply(obj.cloth_addon, self.preset)
        self.report({"INFO"}, f"Applied {self.preset.title()} to {len(objects)} object(s)")
        return {"FINISHED"}


CLASSES = (CLOTH_ADDON_OT_make_cloth, CLOTH_ADDON_OT_remove_cloth, CLOTH_ADDON_OT_reset,
           CLOTH_ADDON_OT_bake, CLOTH_ADDON_OT_free_bake, CLOTH_ADDON_OT_apply_preset)
