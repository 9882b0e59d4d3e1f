"""Operators bpy.ops.cloth_addon.*: gather the selection, call the core, write back, report.

They act on the selected objects (or the active one when nothing is selected), skip what they
cannot use with a warning, and cancel with an error instead of raising.
"""

import bpy
from bpy.props import EnumProperty

from . import bake, mesh_io, presets, session, tearing


def _targets(context):
    selected = list(context.selected_objects or ())
    if not selected and context.active_object is not None:
        selected = [context.active_object]
    return selected


def _cloth_targets(context):
    return [obj for obj in _targets(context) if obj.type == "MESH" and obj.cloth_addon.enabled]


def _refresh(context, obj) -> None:
    """Show the live simulation at the current frame (writes the ClothSim key)."""
    session.update_object(obj, context.scene, context.evaluated_depsgraph_get())


class CLOTH_ADDON_OT_make_cloth(bpy.types.Operator):
    """Simulate the selected meshes as cloth (adds a ClothSim shape key; the mesh stays untouched)"""

    bl_idname = "cloth_addon.make_cloth"
    bl_label = "Make Cloth"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        objects = _targets(context)
        if not objects:
            self.report({"ERROR"}, "Select a mesh object to make cloth")
            return {"CANCELLED"}
        made, skipped = [], []
        for obj in objects:
            why = self._unusable(obj)
            if why:
                skipped.append(f"{obj.name} {why}")
                continue
            props = obj.cloth_addon
            if (props.frame_start, props.frame_end) == (1, 250):
                props.frame_start, props.frame_end = context.scene.frame_start, context.scene.frame_end
            _, added_basis = mesh_io.ensure_sim_key(obj)
            props.added_basis = props.added_basis or added_basis
            props.enabled = True
            try:
                session.get(obj, context.scene, context.evaluated_depsgraph_get(), rebuild=True)
                _refresh(context, obj)
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

    @staticmethod
    def _unusable(obj) -> str:
        if obj.type != "MESH":
            return "is not a mesh"
        if len(obj.data.vertices) == 0:
            return "has no vertices"
        if obj.mode == "EDIT":
            return "is in Edit Mode"
        if obj.data.shape_keys is not None and not obj.data.shape_keys.use_relative:
            return "uses absolute shape keys"
        return ""


def _strip(obj) -> None:
    """Remove the cloth from an object: its bake, its ClothSim key, a Basis we added."""
    bake.free(obj)
    tearing.remove(obj)
    props = obj.cloth_addon
    block = mesh_io.sim_key(obj)
    if block is not None:
        obj.shape_key_remove(block)
    keys = obj.data.shape_keys
    if props.added_basis and keys is not None and len(keys.key_blocks) == 1:
        obj.shape_key_clear()
    props.added_basis = False
    props.enabled = False
    session.discard(obj.session_uid)
    obj.data.update_tag()


class CLOTH_ADDON_OT_remove_cloth(bpy.types.Operator):
    """Stop simulating the selected objects and remove everything the cloth added"""

    bl_idname = "cloth_addon.remove_cloth"
    bl_label = "Remove Cloth"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        objects = _cloth_targets(context)
        if not objects:
            self.report({"ERROR"}, "No selected object is cloth")
            return {"CANCELLED"}
        for obj in objects:
            _strip(obj)
        self.report({"INFO"}, f"Removed cloth from {', '.join(obj.name for obj in objects)}")
        return {"FINISHED"}


class CLOTH_ADDON_OT_reset(bpy.types.Operator):
    """Forget the computed frames and rebuild the simulation from the current settings and mesh"""

    bl_idname = "cloth_addon.reset"
    bl_label = "Reset Simulation"
    bl_options = {"REGISTER"}

    def execute(self, context):
        objects = _cloth_targets(context)
        if not objects:
            self.report({"ERROR"}, "No selected object is cloth")
            return {"CANCELLED"}
        for obj in objects:
            try:
                session.get(obj, context.scene, context.evaluated_depsgraph_get(), rebuild=True)
                _refresh(context, obj)
            except Exception as error:
                self.report({"ERROR"}, f"{obj.name}: {error}")
                return {"CANCELLED"}
        self.report({"INFO"}, f"Reset {len(objects)} cloth object(s)")
        return {"FINISHED"}


class CLOTH_ADDON_OT_bake(bpy.types.Operator):
    """Bake the selected cloth objects' frame range to shape keys or a PC2 cache (Esc cancels)"""

    bl_idname = "cloth_addon.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    _baker = None
    _timer = None

    def _start(self, context):
        objects = _cloth_targets(context)
        if not objects:
            self.report({"ERROR"}, "No selected object is cloth")
            return None
        try:
            return bake.Baker(context, objects)
        except bake.BakeError as error:
            self.report({"ERROR"}, str(error))
            return None

    def execute(self, context):
        baker = self._start(context)
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
        self._baker = self._start(context)
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


class CLOTH_ADDON_OT_free_bake(bpy.types.Operator):
    """Remove every shape key, keyframe, file and modifier the bake added"""

    bl_idname = "cloth_addon.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        freed = [obj for obj in _targets(context) if obj.type == "MESH" and bake.free(obj)]
        if not freed:
            self.report({"ERROR"}, "No selected object has a bake")
            return {"CANCELLED"}
        for obj in freed:
            if obj.cloth_addon.enabled:
                _refresh(context, obj)
        self.report({"INFO"}, f"Freed the bake of {', '.join(obj.name for obj in freed)}")
        return {"FINISHED"}


class CLOTH_ADDON_OT_apply_preset(bpy.types.Operator):
    """Set density, stiffness and damping to a typical fabric"""

    bl_idname = "cloth_addon.apply_preset"
    bl_label = "Apply Cloth Preset"
    bl_options = {"REGISTER", "UNDO"}

    preset: EnumProperty(name="Preset", items=presets.PRESET_ITEMS)

    def execute(self, context):
        objects = [obj for obj in _targets(context) if obj.type == "MESH"]
        if not objects:
            self.report({"ERROR"}, "Select a mesh object")
            return {"CANCELLED"}
        for obj in objects:
            presets.apply(obj.cloth_addon, self.preset)
        self.report({"INFO"}, f"Applied {self.preset.title()} to {len(objects)} object(s)")
        return {"FINISHED"}


CLASSES = (CLOTH_ADDON_OT_make_cloth, CLOTH_ADDON_OT_remove_cloth, CLOTH_ADDON_OT_reset,
           CLOTH_ADDON_OT_bake, CLOTH_ADDON_OT_free_bake, CLOTH_ADDON_OT_apply_preset)
