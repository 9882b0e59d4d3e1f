"""Sewing, pressure, shrinking, property weights and the rest shape key: properties -> core inputs.

`settings_fields` gives the core.Settings fields, `simulation_inputs` the per-vertex weights and
the rest shape (core.Simulation's `weights` and `rest_shape`), read once when a simulation is built.
Nothing here writes to the mesh: vertex groups and shape keys are only read.
"""

import numpy as np

from . import mesh_io
from .ids import BAKE_KEY_PREFIX

# Property-weight vertex groups: (group property, core weight name, Settings max field or None).
WEIGHT_GROUPS = (("shrink_group", "shrink", None),
                 ("stretch_group", "stretch", "stretch_stiffness_max"),
                 ("shear_group", "shear", "shear_stiffness_max"),
                 ("bend_group", "bend", "bend_stiffness_max"),
                 ("mass_group", "mass", None))


class GarmentInputError(ValueError):
    """A garment setting names something the object does not have; the message is for the user."""


def settings_fields(props) -> dict:
    """core.Settings fields from an object's cloth_addon properties (a stiffness max only with its group)."""
    fields = {"use_sewing": props.use_sewing, "sewing_force_max": props.sewing_force_max,
              "use_pressure": props.use_pressure, "pressure": props.pressure,
              "target_volume": props.target_volume, "shrink": props.shrink}
    for group, _, maximum in WEIGHT_GROUPS:
        if maximum is not None and getattr(props, group):
            fields[maximum] = getattr(props, maximum)
    return fields


def simulation_inputs(obj, matrix: np.ndarray) -> dict:
    """core.Simulation keyword arguments: weights {name: (n,) float64} and rest_shape ((n, 3) m,
    world space through `matrix`, or None)."""
    props = obj.cloth_addon
    weights = {}
    for group, name, _ in WEIGHT_GROUPS:
        group_name = getattr(props, group)
        if not group_name:
            continue
        if obj.vertex_groups.get(group_name) is None:
            raise GarmentInputError(f"{obj.name} has no vertex group {group_name!r} ({_label(group)})")
        weights[name] = mesh_io.read_group_weights(obj, group_name)
        if name == "mass" and not np.all(weights[name] > 0.0):
            raise GarmentInputError(f"Mass Group {group_name!r} leaves vertices with weight 0 (no mass): "
                                    "paint every vertex with a weight above 0")
    rest_shape = None
    if props.rest_shape_key:
        keys = obj.data.shape_keys
        block = keys.key_blocks.get(props.rest_shape_key) if keys is not None else None
        if block is None:
            raise GarmentInputError(f"{obj.name} has no shape key {props.rest_shape_key!r} (Rest Shape Key)")
        if block.name.startswith(BAKE_KEY_PREFIX):
            raise GarmentInputError(f"Rest Shape Key {block.name!r} is written by the cloth itself; "
                                    "choose one of your own shape keys")
        rest_shape = mesh_io.to_world(matrix, mesh_io.read_key(block))
    return {"weights": weights, "rest_shape": rest_shape}


def _label(group: str) -> str:
    return group.replace("_", " ").title()
