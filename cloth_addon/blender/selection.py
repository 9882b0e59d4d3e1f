"""What the operators act on: the selected objects, or the active one when nothing is selected."""

import bpy


def targets(context) -> list:
    selected = list(context.selected_objects or ())
    if not selected and context.active_object is not None:
        selected = [context.active_object]
    return selected


def select_only(obj) -> None:
    """Make `obj` the only selected object and the active one (what scripts do before an operator)."""
    view_layer = bpy.context.view_layer
    for other in view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    view_layer.objects.active = obj
