"""External forces as accelerations: gravity, and aerodynamic drag that carries the wind.

Each function takes positions and velocities, (n, 3) float64, and returns an (n, 3)
acceleration in m/s^2 that the solvers add to the inertial prediction.
"""

import numpy as np


def aerodynamic_forces(positions, velocities, faces, triangles, wind, air_drag):
    """(n, 3) N and (n,) 1/s: aerodynamic forces and how fast they can change a velocity.

    Per face c * A * ((wind - v_face) . n) n, shared equally by its k corners. Only the
    velocity normal to the cloth counts (docs/PHYSICS.md §7), so a sheet falls flat slowly
    but slides edge-on freely, and the wind pushes a sail, not a cloth lying along it.
    Sharing per face like the mass (density * A / k per corner) gives every particle of a
    flat sheet the same force per mass, so drag alone does not bend it. A face's normal and
    area come from its vector area (the sum of its fan triangles'). The rate returned is
    c * (area share) per particle, to be divided by the mass.
    """
    p0, p1, p2 = positions[triangles[:, 0]], positions[triangles[:, 1]], positions[triangles[:, 2]]
    cross = faces.triangle_to_face @ np.cross(p1 - p0, p2 - p0)  # (m, 3), |cross| = 2 A
    twice_area = np.sqrt(np.einsum("ij,ij->i", cross, cross))
    relative = np.asarray(wind, dtype=np.float64) - faces.corner_average @ velocities
    # c * A * (rel . n) n  with n = cross / |cross|, A = |cross| / 2
    scale = 0.5 * air_drag * np.einsum("ij,ij->i", relative, cross) / np.maximum(twice_area, 1e-300)
    forces = faces.corner_share @ (cross * scale[:, None])
    rate = faces.corner_share @ (0.5 * air_drag * twice_area)
    return forces, rate


def external_acceleration(model, positions, velocities, settings, h):
    """(n, 3) m/s^2 for a step of length h: gravity plus drag/wind.

    Drag is explicit, so where one step of it would more than cancel the relative velocity
    (rate * h > 1, at very large steps or very light cloth) it is scaled down to exactly
    cancel it instead of reversing it; that keeps dt = 0.2 s stable.
    """
    accel = np.empty_like(positions)
    accel[:] = settings.gravity
    if settings.air_drag > 0.0 and len(model.triangles):
        force, rate = aerodynamic_forces(positions, velocities, model.faces, model.triangles,
                                         settings.wind, settings.air_drag)
        limit = np.maximum(rate * h / model.mass, 1.0)
        accel += force / (model.mass * limit)[:, None]
    return accel
