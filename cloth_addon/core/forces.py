"""External forces as accelerations: gravity, and aerodynamic drag that carries the wind.

Each function takes positions and velocities, (n, 3) float64, and returns an (n, 3)
acceleration in m/s^2 that the solvers add to the inertial prediction.
"""

import numpy as np


def aerodynamic_forces(positions, velocities, faces, triangles, wind, air_drag):
    """(n, 3) N: per face c * A * ((wind - v_face) . n) n, shared equally by its k corners.

    Only the velocity normal to the cloth counts (seed 000 section 8), so a sheet falls flat
    slowly but slides edge-on freely, and the wind pushes a sail, not a cloth lying along it.
    Sharing the force per face like the mass (density * A / k per corner) gives every
    particle of a flat sheet the same force per mass, so drag alone does not bend it.
    A face's normal and area come from its vector area (the sum of its fan triangles').
    """
    n = len(positions)
    forces = np.zeros((n, 3))
    if not len(triangles) or air_drag == 0.0:
        return forces
    m = len(faces)
    p0, p1, p2 = positions[triangles[:, 0]], positions[triangles[:, 1]], positions[triangles[:, 2]]
    tri_cross = np.cross(p1 - p0, p2 - p0)  # |cross| = 2 * area, along the normal
    corner_face = faces.face_of_loop
    cross = np.empty((m, 3))
    v_face = np.empty((m, 3))
    for axis in range(3):
        cross[:, axis] = np.bincount(faces.face_of_triangle, tri_cross[:, axis], m)
        v_face[:, axis] = np.bincount(corner_face, velocities[faces.corners, axis], m)
    v_face /= faces.face_size[:, None]
    twice_area = np.linalg.norm(cross, axis=1)
    relative = np.asarray(wind, dtype=np.float64) - v_face
    # c * A * (rel . n) n  with n = cross / |cross|, A = |cross| / 2
    scale = 0.5 * air_drag * np.einsum("ij,ij->i", relative, cross) / np.maximum(twice_area, 1e-300)
    per_corner = (cross * (scale / faces.face_size)[:, None])[corner_face]
    for axis in range(3):
        forces[:, axis] = np.bincount(faces.corners, per_corner[:, axis], n)
    return forces


def drag_rate(positions, faces, triangles, mass, air_drag):
    """(n,) 1/s: how fast drag can change a particle's velocity (c * area share / m)."""
    n = len(positions)
    if not len(triangles) or air_drag == 0.0:
        return np.zeros(n)
    p0, p1, p2 = positions[triangles[:, 0]], positions[triangles[:, 1]], positions[triangles[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    face_area = np.bincount(faces.face_of_triangle, area, len(faces))
    share = np.bincount(faces.corners, (face_area / faces.face_size)[faces.face_of_loop], n)
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
        force = aerodynamic_forces(positions, velocities, model.faces, model.triangles, settings.wind,
                                   settings.air_drag)
        rate = drag_rate(positions, model.faces, model.triangles, model.mass, settings.air_drag)
        limit = np.maximum(rate * h, 1.0)
        accel += force / (model.mass * limit)[:, None]
    return accel
