"""Scene -> core wind: the scene's visible Wind force fields become core.WindField objects.

Read every frame (a field may be animated): the object's world location and Z axis, and the
field's Strength (read as the air speed, m/s), Noise and Seed, Shape, and Falloff (Sphere,
Tube, Cone; Z Direction; Power; Min/Max Distance; the radial Power and Min/Max of Tube and
Cone). Not honoured (docs/GUIDE.md, Wind): Flow (our cloth always feels the air relative to its own
velocity, as Blender's default Flow 1 makes it), Wind Factor, Absorption, Affect Rotation, the
Surface and Every Point shapes (they blow as Point), and Blender's Field Weights.
"""

import numpy as np

from .. import core
from . import mesh_io

SHAPES = {"POINT": "point", "LINE": "line", "PLANE": "plane", "SURFACE": "point", "POINTS": "point"}
# FieldSettings properties that shape a core.WindField (with the object's transform).
SETTINGS = ("strength", "noise", "seed", "shape", "falloff_type", "z_direction", "falloff_power",
            "use_min_distance", "distance_min", "use_max_distance", "distance_max", "radial_falloff",
            "use_radial_min", "radial_min", "use_radial_max", "radial_max")

# wind_field's `known` holds at most this many fields
KNOWN_FIELDS = 16


def is_wind(obj) -> bool:
    """Whether an object carries a Wind force field."""
    return obj.field is not None and obj.field.type == "WIND"


def field_settings(obj) -> tuple:
    """The settings of a Wind field object that the simulation uses, to detect changes."""
    return tuple(getattr(obj.field, name) for name in SETTINGS)


def wind_field(obj, depsgraph=None, known=None):
    """A core.WindField from a Wind force-field object (world space), or None if its Z axis is zero.

    known: a dict the caller keeps between frames, or None. A field whose transform and settings
    are those of a field it holds is that field again: building one draws its gust waves and
    checks every setting, which costs more than reading them."""
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    matrix = mesh_io.matrix_to_numpy(source.matrix_world)
    if not np.linalg.norm(matrix[:3, 2]) > 0.0:
        return None  # scaled to nothing along Z: no direction to blow in
    field = source.field  # evaluated: an animated Strength or Noise reads as of this frame
    key = (matrix[:3, 2:].tobytes(), field_settings(source)) if known is not None else None
    if key is not None and key in known:
        return known[key]
    made = core.WindField(
        location=matrix[:3, 3], direction=matrix[:3, 2], strength=field.strength, noise=field.noise,
        seed=field.seed, shape=SHAPES[field.shape], falloff=field.falloff_type.lower(),
        power=field.falloff_power, use_min_distance=field.use_min_distance,
        min_distance=field.distance_min, use_max_distance=field.use_max_distance,
        max_distance=field.distance_max, z_direction=field.z_direction.lower(),
        radial_power=field.radial_falloff, use_radial_min=field.use_radial_min,
        radial_min=field.radial_min, use_radial_max=field.use_radial_max, radial_max=field.radial_max)
    if key is not None:
        if len(known) >= KNOWN_FIELDS:  # an animated field makes a new one every frame
            known.clear()
        known[key] = made
    return made


def scene_wind_fields(scene, depsgraph=None, known=None) -> list:
    """core.WindField objects for the scene's visible Wind force fields, world space. known: as
    for wind_field."""
    blowing = (obj for obj in scene.objects if is_wind(obj) and obj.visible_get())
    fields = (wind_field(obj, depsgraph, known) for obj in blowing)
    return [field for field in fields if field is not None]
