"""Material presets for the Presets menu: the core's fabrics (core/materials.py), in SI units."""

from ..core.materials import FABRICS as PRESETS

PRESET_ITEMS = [(key, key.title(), f"{key.title()}: density {values['density']} kg/m², "
                 f"stretch {values['stretch_stiffness']:g} N/m, bending {values['bend_stiffness']:g} N·m")
                for key, values in PRESETS.items()]


def apply(props, name: str) -> None:
    """Set an object's cloth_addon properties to a preset."""
    for field, value in PRESETS[name].items():
        setattr(props, field, value)
