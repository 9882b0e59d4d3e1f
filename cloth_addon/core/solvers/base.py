"""What every solver shares: the substep length, per-substep damping and the inertial prediction.

The substep length h = Settings.dt / Settings.substeps is fixed when a solver is built: the
implicit solvers factor M + h^2 L with it, so `advance` takes no h of its own (a second,
different h would silently disagree with the factorisation). Changing dt or substeps builds a
new solver (Simulation.settings does that).
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def spring_damping_weights(model, beta: float, active: np.ndarray) -> np.ndarray:
    """(s,) float64, kg/s: beta * k_i of each active spring with stiffness, 0 elsewhere (beta
    in s). Force-limited (sewing) springs are left out: they close to zero length, where they
    have no direction to damp along."""
    damped = active & (model.spring_stiffness > 0.0)
    if model.spring_force_limit is not None:
        damped &= ~np.isfinite(model.spring_force_limit)
    return np.where(damped, beta * model.spring_stiffness, 0.0)


@dataclass
class IterationContact:
    """Contact inside an implicit solver's iterations over one substep (the contact stage makes it).

    project(x): moves an iterate x (n, 3) out of the colliders, in place, so that the next local
        step already sees the contact.
    push: (n, 3) float64 contact forces the iterations start from, in the right-hand side's units
        (mass times displacement, kg m), or None for none; `advance` replaces it with the forces
        its last iterate ended with (what the solver turned the projections into).
    mesh_touching: (n,) bool, the particles a mesh collider with a rim (a sharp convex edge, or an
        open edge near them: MeshCollider.rim_near) moved in its projections in this substep's
        iterations (filled in as they run) or in the last substep's; None without mesh colliders.
    """

    project: Callable[[np.ndarray], None]
    push: np.ndarray | None = None
    mesh_touching: np.ndarray | None = None


class InertialSolver:
    """Base of the solvers. Each provides

        advance(positions, previous, accel, pin_targets) -> (n, 3) positions one substep later
        set_active(active)  # (s,) bool, springs that still exist (tearing)

    h: substep length, s (fixed for the solver's life).
    contact_in_iterations: advance also takes contact=IterationContact(project, push): project
    edits every iterate (n, 3) in place (the contact stage moves the cloth out of colliders
    there), and the solver turns what it moves into contact forces on the moved particles,
    starting from contact.push and leaving its final ones there.
    """

    contact_in_iterations = True
    # colliders also keep the cloth's edges and faces out of their sharp features
    contact_features = True

    def __init__(self, model, settings):
        self.model = model
        self.h = settings.h
        self.iterations = settings.iterations
        # Settings.damping is per frame; compounded over the substeps it removes the same share.
        self.damping = 1.0 - (1.0 - settings.damping) ** (1.0 / settings.substeps)
        # Stiffness-proportional (Rayleigh) damping of each spring's rate of stretch, s: a force
        # -spring_damping * k_i * (dl_i/dt) along spring i. Implicit Euler, with
        # dl_i/dt = (l_i(x) - l_i(x_start)) / h, adds the energy
        #     (spring_damping / 2h) * sum_i k_i (l_i(x) - l_i(x_start))^2
        # to the objective: a second spring of stiffness spring_damping * k_i / h whose rest
        # length is the spring's length at the substep's start, which both implicit solvers
        # minimise exactly (so they still converge to the same x). A rigid motion changes no
        # length, so a spinning sheet keeps spinning and a cloth at rest feels nothing.
        self.spring_damping = settings.spring_damping

    def advance(self, positions, previous, accel, pin_targets) -> np.ndarray:
        raise NotImplementedError

    def set_active(self, active: np.ndarray) -> None:
        raise NotImplementedError

    def predict(self, positions, previous, accel, pin_targets) -> np.ndarray:
        """(n, 3) x + (1 - damping)(x - x_prev) + a h^2, the pinned particles at their targets.

        positions, previous, accel: (n, 3) float64 (m, m, m/s^2); pin_targets: (p, 3) m."""
        predicted = positions + (1.0 - self.damping) * (positions - previous) + accel * (self.h * self.h)
        predicted[self.model.pinned_indices] = pin_targets
        return predicted
