"""Object.cloth_addon properties and the scene -> core.Settings (the one place that maps them)."""

from .. import core
from . import garment

SOLVER_NAMES = {"FAST_MASS_SPRING": "fast_mass_spring", "VERLET": "verlet"}


def scene_inputs(scene) -> tuple:
    """(frame length s, gravity m/s^2): what the simulation takes from the scene's settings.

    Our own properties drop the simulation when edited (update callbacks); the scene's frame
    rate and gravity have no such hook, so sessions compare these every frame instead.
    """
    gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    return scene.render.fps_base / scene.render.fps, gravity


def settings_from(props, scene) -> "core.Settings":
    """Core Settings from an object's cloth_addon properties and the scene (fps, gravity); the
    scene's Wind fields go to the Simulation apart (wind.scene_wind_fields)."""
    dt, gravity = scene_inputs(scene)
    return core.Settings(
        solver=SOLVER_NAMES[props.solver], dt=dt, substeps=props.substeps,
        iterations=props.iterations, gravity=gravity, density=props.density,
        stretch_stiffness=props.stretch_stiffness, shear_stiffness=props.shear_stiffness,
        bend_stiffness=props.bend_stiffness, compression=props.compression, damping=props.damping,
        spring_damping=props.spring_damping, air_drag=props.air_drag,
        air_lift=props.air_lift, wind=tuple(props.wind),
        tear_factor=props.tear_factor if props.use_tearing else None,
        self_collision=props.use_self_collision, collision_distance=props.collision_distance,
        self_collision_distance=props.self_distance or None,
        friction=props.friction, **garment.settings_fields(props))
