"""Newton's method on the implicit Euler objective (docs/PHYSICS.md §6), for validation.

Minimises the same g(x) = 1/2 (x - y)^T M (x - y) + h^2 E(x) as the fast solver. One
iteration builds the sparse 3f x 3f Hessian M + h^2 sum_i H_i with the spring blocks
    H_i = k (n n^T + max(0, 1 - r/l) (I - n n^T))
(the clamp drops the negative curvature of compressed springs, keeping it positive
definite), factors it, solves for the step and backtracks until g decreases (Armijo).
E includes the quadratic bending energy 1/2 x^T B x (B = k_b Q, constant): it adds B x to the
gradient and B (one copy per coordinate) to the Hessian. Spring damping (base.py) is a second
spring on every spring, of stiffness w_i / h (w_i = spring_damping * k_i) and rest length the
spring's length at the substep's start: (h/2) sum_i w_i (l_i(x) - l_i(x_start))^2 in g, its
gradient and clamped Hessian added to the springs'.
"""

import numpy as np
import scipy.sparse as sp

from ..bending import quadratic_energy
from ..model import pulls_to_forces
from .base import InertialSolver, spring_damping_weights
from .factor import factorize


class NewtonSolver(InertialSolver):
    """Same prediction, pins and tearing as the fast solver; a different minimiser."""

    def __init__(self, model, settings):
        super().__init__(model, settings)
        self.free = np.flatnonzero(~model.pinned)
        self.rest = model.spring_rest_length
        # each free particle's row block in the Hessian; -1 for pinned ones
        self.free_index = np.full(model.n_particles, -1, dtype=np.int64)
        self.free_index[self.free] = np.arange(len(self.free))
        # the springs' lengths at the start of the substep being solved (predict sets them), for
        # spring damping; None: no damping term
        self.damping_length = None
        self.set_active(np.ones(model.n_springs, dtype=bool))

    def set_active(self, active: np.ndarray) -> None:
        """active: (s,) bool, springs that still exist (the Hessian is rebuilt every iteration;
        the bending matrix, without the hinges torn springs cut, here)."""
        self.active = np.asarray(active, dtype=bool).copy()
        self.damping_weights = spring_damping_weights(self.model, self.spring_damping, self.active)
        self.bending = bending = self.model.bending_matrix(self.active)
        # B over the free particles in the Hessian's interleaved (x, y, z) order
        self.bending_hessian = (None if bending is None else
                                sp.kron(bending[self.free][:, self.free], sp.identity(3)).tocsc())

    def predict(self, positions, previous, accel, pin_targets) -> np.ndarray:
        """The inertial prediction (base class); also starts the substep's objective, whose
        spring damping term needs the springs' lengths at positions."""
        if self.spring_damping > 0.0:
            self.damping_length = self._lengths(positions)
        return super().predict(positions, previous, accel, pin_targets)

    def objective(self, x, y) -> float:
        """g(x), J: inertia plus h^2 times the energy of the springs that exist and of bending."""
        inertia = 0.5 * float(np.sum(self.model.mass[:, None] * (x - y) ** 2))
        elastic = self.model.energy(x, self.active) + quadratic_energy(self.bending, x)
        total = inertia + self.h * self.h * elastic
        if self.damping_length is not None:
            change = self._lengths(x) - self.damping_length
            total += 0.5 * self.h * float(np.sum(self.damping_weights * change**2))
        return total

    def _lengths(self, x) -> np.ndarray:
        i, j = self.model.spring_indices.T
        return np.linalg.norm(x[i] - x[j], axis=1)

    def gradient(self, x, y) -> np.ndarray:
        """(f, 3) dg/dx over the free particles."""
        forces = self.model.spring_forces(x, self.active)
        if self.bending is not None:
            forces -= self.bending @ x
        if self.damping_length is not None:
            i, j = self.model.spring_indices.T
            delta = x[i] - x[j]
            length = np.linalg.norm(delta, axis=1)
            pull = (self.damping_weights / self.h * (length - self.damping_length)
                    / np.where(length > 0.0, length, 1.0))[:, None] * delta
            forces += pulls_to_forces(self.model.spring_indices, pull, len(x))
        return (self.model.mass[:, None] * (x - y) - self.h * self.h * forces)[self.free]

    def hessian(self, x) -> sp.csc_matrix:
        """(3f, 3f) M + h^2 * (clamped spring Hessian + bending) over the free particles."""
        i, j = self.model.spring_indices.T
        delta = x[i] - x[j]
        length = np.maximum(np.linalg.norm(delta, axis=1), 1e-12)
        n = delta / length[:, None]
        k = np.where(self.active, self.model.spring_stiffness, 0.0)
        outer = n[:, :, None] * n[:, None, :]
        along, across = self.model.spring_curvatures(length, k)
        if self.damping_length is not None:
            damping = self.damping_weights / self.h
            along = along + damping
            across = across + damping * np.maximum(0.0, 1.0 - self.damping_length / length)
        block = along[:, None, None] * outer + across[:, None, None] * (np.eye(3) - outer)
        fi, fj = self.free_index[i], self.free_index[j]
        rows, cols, vals = [], [], []
        for a, b, sign in ((fi, fi, 1.0), (fj, fj, 1.0), (fi, fj, -1.0), (fj, fi, -1.0)):
            keep = (a >= 0) & (b >= 0)
            r = 3 * a[keep, None, None] + np.arange(3)[None, :, None]
            c = 3 * b[keep, None, None] + np.arange(3)[None, None, :]
            rows.append(np.broadcast_to(r, (int(keep.sum()), 3, 3)).ravel())
            cols.append(np.broadcast_to(c, (int(keep.sum()), 3, 3)).ravel())
            vals.append((sign * block[keep]).ravel())
        size = 3 * len(self.free)
        h2 = self.h * self.h
        springs = sp.csc_matrix((h2 * np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                shape=(size, size))
        if self.bending_hessian is not None:
            springs = springs + h2 * self.bending_hessian
        return sp.diags(np.repeat(self.model.mass[self.free], 3)).tocsc() + springs

    def advance(self, positions, previous, accel, pin_targets, contact=None, iterations=None,
                observer=None, tolerance=0.0):
        """Newton iterations from x = y; stops early when |grad| <= tolerance * |grad_0|.
        contact: an IterationContact (base.py) or None; observer(k, x) gets every iterate."""
        iterations = self.iterations if iterations is None else iterations
        y = self.predict(positions, previous, accel, pin_targets)
        x = y.copy()
        if observer is not None:
            observer(0, x)
        free = self.free
        g0 = None
        # contact forces so far (f, 3), in the gradient's units: as in the fast solver, what
        # the projection moves becomes a force on the touching particles alone (an Uzawa step)
        start = None if contact is None else contact.push
        push = np.zeros((len(free), 3)) if start is None else start[free]

        def objective(z):
            return self.objective(z, y) - float(np.sum(push * z[free]))

        for k in range(1, iterations + 1):
            grad = self.gradient(x, y) - push
            norm = np.linalg.norm(grad)
            g0 = norm if g0 is None else g0
            if norm == 0.0 or norm <= tolerance * g0:
                break
            step = factorize(self.hessian(x))(-grad.reshape(-1, 1)).reshape(-1, 3)
            current = objective(x)
            slope = float(np.sum(grad * step))
            alpha = 1.0
            trial = x.copy()
            for _ in range(30):
                trial[free] = x[free] + alpha * step
                if objective(trial) <= current + 1e-4 * alpha * slope:
                    break
                alpha *= 0.5
            x = trial
            if contact is not None:
                before = x[free]
                contact.project(x)
                push += self.model.mass[free][:, None] * (x[free] - before)
            if observer is not None:
                observer(k, x)
        if contact is not None:
            contact.push = np.zeros_like(x)
            contact.push[free] = push
        return x
