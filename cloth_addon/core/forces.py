"""External forces as accelerations: gravity, and aerodynamic drag that carries the wind.

Each function takes positions and velocities, (n, 3) float64, and returns an (n, 3)
acceleration in m/s^2 that the solvers add to the inertial prediction.
"""

import numpy as np


def aerodynamic_forces(positions, velocities, triangles, wind, air_drag):
    """(n, 3) N: per triangle c * A * ((wind - v_tri) . n) n, a third to each corner (seed 000 §8).

    Only the velocity normal to the cloth counts, so a sheet falls flat slowly but slides
    edge-on freely, and the wind pushes a sail but not a cloth lying along it.
    """
    n = len(positions)
    forces = np.zeros((n, 3))
    if not len(triangles) or air_drag == 0.0:
        return forces
    p0, p1, p2 = positions[triangles[:, 0]], positions[triangles[:, 1]], positions[triangles[:, 2]]
    cross = np.cross(p1 - p0, p2 - p0)  # |cross| = 2A, direction = normal
    twice_area = np.linalg.norm(cross, axis=1)
    v_tri = (velocities[triangles[:, 0]] + velocities[triangles[:, 1]] + velocities[triangles[:, 2]]) / 3.0
    relative = np.asarray(wind, dtype=np.float64) - v_tri
    # c * A * (rel . n) n  with n = cross/|cross|, A = |cross|/2  ->  c/2 * (rel . cross) cross / |cross|
    scale = 0.5 * air_drag * np.einsum("ij,ij->i", relative, cross) / np.maximum(twice_area, 1e-300)
    per_corner = cross * (scale / 3.0)[:, None]
    for axis in range(3):
        forces[:, axis] = sum(np.bincount(triangles[:, c], per_corner[:, axis], n) for c in range(3))
    return forces


def drag_rate(positions, triangles, mass, air_drag):
    """(n,) 1/s: how fast drag can change a particle's velocity (c * adjacent area / 3 / m)."""
    n = len(positions)
    if not len(triangles) or air_drag == 0.0:
        return np.zeros(n)
    p0, p1, p2 = positions[triangles[:, 0]], positions[triangles[:, 1]], positions[triangles[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    share = np.bincount(triangles.ravel(), np.repeat(area / 3.0, 3), n)
    return air_drag * share / mass


def external_acceleration(model, positions, velocities, settings, h):
    """(n, 3) m/s^2 for a step of length h: gravity plus drag/wind.

    Drag is explicit, so where one step of it would more than cancel the relative velocity
    (rate * h > 1, at very large steps or very light cloth) it is scaled down to exactly
    cancel it instead of reversing it; that keeps dt = 0.2 s stable.
    """
    accel = np.empty_like(positions)
    accel[:] = settings.gravity
    if settings.air_drag > 0.0 and len(model.triangles):
        force = aerodynamic_forces(positions, velocities, model.triangles, settings.wind, settings.air_drag)
        limit = np.maximum(drag_rate(positions, model.triangles, model.mass, settings.air_drag) * h, 1.0)
        accel += force / (model.mass * limit)[:, None]
    return accel
