"""Material presets: typical densities (kg/m²) and spring stiffnesses (N/m) of common fabrics."""

from ..core.settings import AIR_DRAG

# Stiffness follows the core's default cotton (500 / 50 / 1 N/m: about 0.6% strain at the top of
# a 2 m hanging sheet); stiffer fabrics scale it up, and the fast solver stays converged at 10
# iterations across this range. Air drag depends on the air and the cloth's shape, hardly on the
# fabric: one value for all, so a flat sheet falls at sqrt(density * g / drag) (SILK 1.4 m/s,
# COTTON 2.2, LEATHER 4.4) and the heavier fabrics fall faster, as they should.
PRESETS = {
    "COTTON": dict(density=0.15, stretch_stiffness=500.0, shear_stiffness=50.0, bend_stiffness=1.0,
                   damping=0.01, air_drag=AIR_DRAG),
    "SILK": dict(density=0.06, stretch_stiffness=200.0, shear_stiffness=10.0, bend_stiffness=0.1,
                 damping=0.005, air_drag=AIR_DRAG),
    "DENIM": dict(density=0.4, stretch_stiffness=2000.0, shear_stiffness=200.0, bend_stiffness=10.0,
                  damping=0.02, air_drag=AIR_DRAG),
    "LEATHER": dict(density=0.6, stretch_stiffness=4000.0, shear_stiffness=800.0, bend_stiffness=40.0,
                    damping=0.03, air_drag=AIR_DRAG),
    "RUBBER": dict(density=0.5, stretch_stiffness=100.0, shear_stiffness=50.0, bend_stiffness=2.0,
                   damping=0.005, air_drag=AIR_DRAG),
}

PRESET_ITEMS = [(key, key.title(), f"{key.title()}: density {values['density']} kg/m², "
                 f"stretch {values['stretch_stiffness']:g} N/m, bending {values['bend_stiffness']:g} N/m")
                for key, values in PRESETS.items()]


def apply(props, name: str) -> None:
    """Set an object's cloth_addon properties to a preset."""
    for field, value in PRESETS[name].items():
        setattr(props, field, value)
