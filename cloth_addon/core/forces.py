"""External forces as accelerations: gravity, and the aerodynamic drag and lift that carry the wind.

`external_acceleration` takes positions and velocities, (n, 3) float64, and returns an (n, 3)
acceleration in m/s^2 that the solvers add to the inertial prediction.
"""

import numpy as np

from .wind import air_velocity, uniform_air


def aerodynamic_forces(positions, velocities, faces, air, drag, lift):
    """(n, 3) N and (n,) kg/s: aerodynamic forces and how fast they can change a velocity.

    positions, velocities: (n, 3) m, m/s. air: (3,) or (m, 3) m/s, the air velocity at each
    face. drag, lift: kg/m^3 (half the air density times a coefficient). Per face of area A and
    unit normal n, with u = air - (face velocity) and u_n = u . n, a quasi-steady thin-plate
    model (docs/PHYSICS.md §7) split into drag along u and lift across it, as in Keckeisen et al.
    2004, "Modelling effects of wind fields in cloth animations" (WSCG), with a flat plate's
    dependence on the angle of attack a between u and the face (sin a = |u_n| / |u|):
        drag  drag * A * |u_n| * u                               along u, |u|^2 sin a
        lift  lift * A * u_n * (|u| n - (u_n / |u|) u)           perpendicular to u, in the
                                                                 plane of u and n, |u|^2 sin a cos a
    Edge-on (u_n = 0) both vanish; face-on the lift vanishes and the drag is a pressure. Lift
    is what turns a flag aligned with the wind into a wing that keeps being pushed off the
    wind's line, where a normal-only drag lets it settle edge-on. Each face's force is shared
    equally by its k corners, like the mass (density * A / k per corner), so a flat sheet has
    the same force per mass everywhere and drag alone does not bend it. The rate returned is
    (drag + lift) * A * |u| per face, shared the same way: a bound on d(force)/d(velocity).
    """
    # in coordinate rows ((3, m) and (3n,)): every product below runs on long contiguous rows,
    # and the sparse products take x, y and z in one call
    doubled = faces.doubled_area_rows(np.ascontiguousarray(positions.T).ravel())  # |doubled| = 2 A
    twice_area = np.sqrt(_row_dot(doubled, doubled))
    normal = np.divide(doubled, np.maximum(twice_area, 1e-300), out=doubled)
    relative = faces.corner_average_rows(np.ascontiguousarray(velocities.T).ravel()).reshape(3, -1)
    np.subtract(np.asarray(air).T.reshape(3, -1), relative, out=relative)
    speed = np.sqrt(_row_dot(relative, relative))
    normal_speed = _row_dot(relative, normal)
    area = 0.5 * twice_area
    along = drag * np.abs(normal_speed) - lift * normal_speed ** 2 / np.maximum(speed, 1e-300)
    # the force's three rows and the rate's, shared out to the corners in one sparse product
    shared = np.empty((4, len(area)))
    np.multiply(relative, along * area, out=shared[:3])
    shared[:3] += (lift * normal_speed * speed * area) * normal
    np.multiply((drag + lift) * area, speed, out=shared[3])
    corners = faces.corner_share_rows(shared.ravel()).reshape(4, -1)
    return corners[:3].T, corners[3]


def _row_dot(u, v):
    """(k,) u . v for coordinate rows u, v (3, k)."""
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def external_acceleration(model, positions, velocities, settings, h, wind_fields=(), time=0.0):
    """(n, 3) m/s^2 for a step of length h (s) at `time` (s): gravity plus drag and lift.

    The air velocity is settings.wind plus the wind fields (core.WindField), evaluated at the
    face centres. The aerodynamics are explicit, so where one step of them could change a
    particle's velocity by more than the relative air speed (rate * h > mass: very large steps,
    very light cloth, strong wind) they are scaled down to that bound instead of reversing the
    relative velocity; that keeps dt = 0.2 s stable.
    """
    accel = np.empty_like(positions)
    accel[:] = settings.gravity
    if settings.air_drag > 0.0 and len(model.triangles):
        faces = model.faces
        # the face centres only where a field varies over them (Blender's default Wind does not)
        air, varying = uniform_air(settings.wind, wind_fields)
        if varying:
            air = air_velocity(faces.corner_average @ positions, time, air, varying)
        force, rate = aerodynamic_forces(positions, velocities, faces, air,
                                         settings.air_drag, settings.air_drag * settings.air_lift)
        limit = np.maximum(rate * h / model.mass, 1.0)
        accel += force / (model.mass * limit)[:, None]
    return accel
