"""Scene -> wind: the scene's Wind force fields as one wind velocity."""

import numpy as np


def scene_wind(scene) -> np.ndarray:
    """(3,) m/s: the sum of visible Wind fields, each its strength along its object's Z axis."""
    wind = np.zeros(3)
    for obj in scene.objects:
        field = obj.field
        if field is None or field.type != "WIND" or not obj.visible_get():
            continue
        axis = np.array(obj.matrix_world.col[2][:3], dtype=np.float64)
        length = np.linalg.norm(axis)
        if length > 0.0:
            wind += field.strength * axis / length
    return wind
