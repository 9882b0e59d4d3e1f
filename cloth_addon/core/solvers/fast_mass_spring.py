"""Fast implicit mass-spring solver (Liu, Bargteil, O'Brien, Kavan 2013; docs/PHYSICS.md §4).

Implicit Euler as a minimisation over the free particles x:
    g(x) = 1/2 (x - y)^T M (x - y) + h^2 E(x),   y = inertial prediction (gravity, wind, damping in it)
    E(x) = min over |d_i| = r_i of sum 1/2 k_i |(p_i1 - p_i2) - d_i|^2
Block coordinate descent alternates
    local:  d_i = r_i (p_i1 - p_i2) / |p_i1 - p_i2|                  (one normalisation per spring)
    global: (M + h^2 L) x = M y + h^2 J d - h^2 L_fp x_pinned         (a prefactored solve, 3 RHS)
The quadratic bending energy 1/2 x^T B x (B = k_b Q, bending.py) has a constant Hessian: it
joins L (L = A^T K A + B), so bending costs nothing per iteration. Springs of zero stiffness
(the bend springs, which only the verlet solver uses) are left out of the local step.
Spring damping (base.py) is a second spring on every spring, of stiffness spring_damping * k / h
and rest length the spring's length at the substep's start: its Laplacian joins the
factorisation (h^2 L + h D, D = A^T diag(spring_damping * k) A) and its local step is the same
normalisation to that length, so it adds one scale per spring to each iteration.
Pinned particles are eliminated from the system (their rows and columns removed, their known
positions moved to the right-hand side), so moving pins never refactors. Tearing changes L:
the solver refactors once, lazily, on the next step. Chebyshev semi-iterative acceleration
(Wang 2015, docs/PHYSICS.md §5) is applied on top of the plain iterates when Settings.chebyshev is on.
A compressed spring (Settings.compression) keeps its full k in the matrix; its local target is
its length l plus compression (r - l), which pulls with the spring's own force. After the
iterations one Newton step per vertex (vertex_newton.py) lets the cloth buckle and fold, which
two iterations alone do not (docs/PHYSICS.md §9).
"""

import numpy as np
import scipy.sparse as sp

from ..garment import limited_spring_targets
from ..geometry import gather
from ..sparse_ops import MatVec
from .base import InertialSolver, spring_damping_weights
from .factor import factorize
from .vertex_newton import VertexNewton

# Spectral-radius estimate for Chebyshev when the settings give none. `python build.py paper`
# sweeps it on the paper's two scenes (docs/BENCHMARKS.md has the numbers): after 10 iterations the
# error falls as rho rises to 0.95 and rises again by 0.99; too high a rho amplifies the slow
# modes instead of damping them.
DEFAULT_RHO = 0.95
# Chebyshev starts after this many plain iterations. Where the first iterate is already the
# answer (free fall, a cloth at rest) the plain iteration stays there and so does the
# accelerated one; started at once it would overshoot by P_k(0) (2% after 10 iterations).
CHEBYSHEV_DELAY = 2
# A contact that the last iteration's projection moved by more than this fraction of the median
# edge length has not been seen by the springs yet (the next local step would see it): the
# substep then runs one more iteration, at most CONTACT_EXTRA more. Only substeps with a hard
# contact correction pay for it (a sheet wrapping round the ball it landed on, a ball hitting a
# curtain); a cloth at rest on a collider, or in free flight, runs exactly `iterations`.
CONTACT_TOLERANCE = 0.03
CONTACT_EXTRA = 1


def spring_matrices(incidence, stiffness, free, pinned, bending=None):
    """L = A^T K A (+ bending) and J = A^T K, split by free/pinned particles, from the (s, n)
    incidence A (+1 at a spring's first particle, -1 at its second) and K = diag(stiffness).

    bending: optional (n, n) constant Hessian of the bending energy (N/m), added to L.
    Returns (L_ff, L_fp, J_f): L_ff (f, f) CSC for the system, L_fp (f, p) CSR coupling to
    the pinned particles, J_f (f, s) CSR. free, pinned: particle indices.
    """
    weighted = (incidence.T @ sp.diags(stiffness)).tocsr()  # J, (n, s)
    laplacian = (weighted @ incidence).tocsr()
    if bending is not None:
        laplacian = (laplacian + bending).tocsr()
    return laplacian[free][:, free].tocsc(), laplacian[free][:, pinned].tocsr(), weighted[free]


class FastMassSpringSolver(InertialSolver):
    """Local/global solver for one ClothModel.

    factorizations: how many times M + h^2 L was factored (tests count it).
    extra_iterations: how many iterations contacts added beyond Settings.iterations.
    Each iteration is spring_targets (the local step), right_hand_side and solve (the global
    step): the benchmark times them by wrapping those methods (tools/bench.py).
    """

    def __init__(self, model, settings):
        super().__init__(model, settings)
        self.chebyshev = settings.chebyshev
        self.rho = settings.chebyshev_rho if settings.chebyshev_rho is not None else DEFAULT_RHO
        self.free = np.flatnonzero(~model.pinned)
        # the springs with stiffness; every per-spring array below is over these only
        self.springs = np.flatnonzero(model.spring_stiffness > 0.0)
        # (s,) the fraction of its stiffness a compressed spring resists with, or None for all 1
        ratios = model.spring_compression
        self.softened = None if ratios is None else 1.0 - ratios[self.springs]
        self.rest = model.spring_rest_length[self.springs]
        self.active = np.ones(len(self.springs), dtype=bool)
        self.spring_active = np.ones(model.n_springs, dtype=bool)
        s = len(self.springs)
        # force-limited (sewing) springs, as indices into self.springs: their local step is the
        # Huber projection
        limit = model.spring_force_limit
        self.limited = None if limit is None else np.flatnonzero(np.isfinite(limit[self.springs]))
        if self.limited is not None:
            self.limited_stiffness = model.spring_stiffness[self.springs][self.limited]
            self.limited_force = limit[self.springs][self.limited]
        # p_i1 - p_i2 as sparse products (one call instead of two row gathers and a
        # subtraction), split so that the pinned particles' part is computed once per step,
        # not once per iteration
        ends = model.spring_indices[self.springs].T.ravel()
        self.incidence = incidence = sp.csc_matrix(
            (np.repeat([1.0, -1.0], s), (np.tile(np.arange(s), 2), ends)), shape=(s, model.n_particles))
        # Iterations keep coordinates as rows, (3, f) and (3, s): element-wise work runs on
        # long contiguous rows instead of strided (s, 3) columns, and one block-diagonal
        # product handles x, y and z in a single call.
        self.incidence_free = MatVec(sp.block_diag([incidence[:, self.free]] * 3))
        self.incidence_pinned = MatVec(sp.block_diag([incidence[:, model.pinned_indices]] * 3))
        # the free particles' coordinates in the flat (n, 3) layout, for scattering an iterate
        # back (a flat index does it several times faster than rows by a row index)
        self._free_flat = (3 * self.free[:, None] + np.arange(3)).ravel()
        self.factorizations = 0
        self.extra_iterations = 0  # iterations run beyond `iterations` for contacts (CONTACT_EXTRA)
        # the step after the iterations that lets the cloth buckle (vertex_newton.py); None skips it
        self.vertex_newton = VertexNewton(model, self.h, self.springs, incidence[:, self.free])
        # (s, f) |incidence| over the free particles: a particle's springs, and through them its
        # neighbours (_beside)
        self._links = abs(incidence[:, self.free]).tocsr()
        # (3s,) work rows the iterations reuse for p_i1 - p_i2 and the targets made from them: two
        # that the iterations take in turn (the last one's targets outlive it, for the vertex
        # step), two for the vertex step. Allocated once: arrays this large come from the
        # operating system page by page, which cost more than the arithmetic done in them.
        self._rows = [np.empty(3 * s) for _ in range(4)]
        self._rhs = np.empty(3 * len(self.free))
        self._dirty = True

    def set_active(self, active: np.ndarray) -> None:
        """active: (s,) bool, springs that still exist; a change refactors on the next step."""
        active = np.asarray(active, dtype=bool)
        # any spring counts, not only those with stiffness: a torn edge also cuts the bending
        # hinges across it
        if not np.array_equal(active, self.spring_active):
            self.spring_active = active.copy()
            self.active = active[self.springs]
            self._dirty = True

    def _refactor(self) -> None:
        h2 = self.h * self.h
        stiffness = np.where(self.active, self.model.spring_stiffness[self.springs], 0.0)
        self.L_ff, self.L_fp, self.J_f = spring_matrices(self.incidence, stiffness, self.free,
                                                         self.model.pinned_indices,
                                                         self.model.bending_matrix(self.spring_active))
        self.mass_f = self.model.mass[self.free]
        system = sp.diags(self.mass_f).tocsc() + h2 * self.L_ff
        self.h2_J = MatVec(sp.block_diag([h2 * self.J_f] * 3))
        # what the pinned particles' known positions move to the right-hand side
        self.coupling = h2 * self.L_fp
        self.damping_scale = None
        if self.spring_damping > 0.0:
            weights = spring_damping_weights(self.model, self.spring_damping,
                                             self.spring_active)[self.springs]
            damping = (self.incidence.T @ sp.diags(weights) @ self.incidence).tocsr()
            system = system + self.h * damping[self.free][:, self.free].tocsc()
            self.coupling = self.coupling + self.h * damping[self.free][:, self.model.pinned_indices].tocsr()
            # the damping springs' targets enter the right-hand side through h^2 J = h^2 A^T K,
            # so they are scaled by beta / h (h^2 k beta / h = h * beta * k, D's weight)
            self.damping_scale = np.where(weights > 0.0, self.spring_damping / self.h, 0.0)
        self.coupling_rows = MatVec(sp.block_diag([self.coupling] * 3))
        self.solve = factorize(system)
        # K - M over the free particles, coordinate rows: the vertex step's gradient where the last
        # iterate is not the last solve's result (see _vertex_step)
        self.stiffness_part = MatVec(sp.block_diag([system - sp.diags(self.mass_f)] * 3))
        if self.vertex_newton is not None:
            bending = self.model.bending_matrix(self.spring_active)
            self.vertex_newton.set_bending(None if bending is None else bending[self.free][:, self.free])
        self.factorizations += 1
        self._dirty = False

    def spring_targets(self, delta: np.ndarray, damped_length: np.ndarray | None = None,
                       length: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Local step: (3, s) vectors d_i along p_i1 - p_i2 (delta, (3, s), reused): of rest length
        for a stretched spring; for a compressed one, of its length l plus compression * (r - l),
        the target whose pull through the matrix's full stiffness k is the spring's own force,
        compression * k * (r - l) (the matrix stays the one factorisation; see docs/PHYSICS.md §9).

        damped_length: (s,) m, the damping springs' rest lengths times their scale (see
        _refactor), whose targets along the same direction are added to d_i. length: (s,) m, the
        springs' lengths |delta| where the caller has them already, or None. out: (3, s), where
        the targets go instead of into delta.
        In place, in one buffer: no temporaries per iteration.
        """
        if length is None:
            scale = np.einsum("ij,ij->j", delta, delta)
            np.sqrt(scale, out=scale)
        else:
            scale = length.copy()
        limited = self.limited
        length_limited = scale[limited] if limited is not None else None
        np.maximum(scale, 1e-12, out=scale)
        damped = None if damped_length is None else damped_length / scale
        np.divide(self.rest, scale, out=scale)
        if self.softened is not None:
            # r / l > 1 where compressed: 1 + compression (r / l - 1) there, r / l elsewhere
            excess = np.maximum(scale - 1.0, 0.0)
            excess *= self.softened
            scale -= excess
        if limited is not None:
            scale[limited] = limited_spring_targets(length_limited, self.rest[limited],
                                                    self.limited_stiffness, self.limited_force)
        if damped is not None:
            scale += damped
        return np.multiply(delta, scale, out=delta if out is None else out)

    def right_hand_side(self, targets: np.ndarray, base: np.ndarray, push: np.ndarray | None) -> np.ndarray:
        """(f, 3) M y + h^2 J d (- the pinned particles' coupling, in base) + contact push, from the
        local step's (3, s) targets d and base ((3f,) coordinate rows, left as it is). A view of a
        buffer the next call reuses."""
        np.copyto(self._rhs, base)
        rhs = self.h2_J.add_into(targets.ravel(), self._rhs).reshape(3, -1).T
        return rhs if push is None else rhs + push

    def _spring_vectors(self, xf: np.ndarray, delta_pinned: np.ndarray, buffer: int) -> np.ndarray:
        """(3, s) p_i1 - p_i2 of every spring at the free particles' xf (f, 3), in work rows
        `buffer`; delta_pinned: (3s,) the pinned particles' part."""
        rows = self._rows[buffer]
        np.copyto(rows, delta_pinned)
        return self.incidence_free.add_into(xf.T.ravel(), rows).reshape(3, -1)

    def advance(self, positions, previous, accel, pin_targets, contact=None, iterations=None,
                observer=None, start_at_y=False):
        """One implicit Euler substep: (n, 3) positions after `iterations` local/global rounds
        (up to CONTACT_EXTRA more while contact still moves a particle by more than
        CONTACT_TOLERANCE edge lengths in the last one).

        The iterations start from the inertial guess without external forces,
        x + (1 - damping)(x - x_prev): at rest under gravity that guess IS the solution, so a
        settled cloth sits exactly at the spring/gravity equilibrium whatever the iteration
        count. Starting at y (`start_at_y`, the paper's choice) leaves an error of a few
        iterations' worth each frame, which shows as extra sag at low iteration counts.
        contact: an IterationContact (base.py) or None. observer(k, x) gets every iterate (n, 3),
        the initial guess as k = 0 (the paper's plots).
        """
        if self._dirty:
            self._refactor()
        iterations = self.iterations if iterations is None else iterations
        # the inertial guess without external forces, then y from it: the same sums as two
        # predictions, in one
        guess = self.predict(positions, previous, 0.0, pin_targets)
        y = guess + accel * (self.h * self.h)
        y[self.model.pinned_indices] = pin_targets
        free = self.free
        base, delta_pinned = self._fixed_parts(y)
        damped_length, damping = self._damping(positions)
        x = y if start_at_y else guess
        xf = gather(x, free)

        def observe(k):
            full = y.copy()
            full[free] = xf
            observer(k, full)

        if observer is not None:
            observe(0)
        older = xf  # x^(k-1) for Chebyshev
        omega = 1.0
        # contact forces so far (f, 3), in the right-hand side's units (mass times displacement),
        # from where the contact stage's last substep left them (see below)
        push = None if contact is None or contact.push is None else gather(contact.push, free)
        # below this, a contact correction is left to the next substep's iterations (squared, m^2)
        settled = (CONTACT_TOLERANCE * self.model.median_edge_length) ** 2
        last = iterations
        k = 0
        while k < last:
            k += 1
            targets = self.spring_targets(self._spring_vectors(xf, delta_pinned, k % 2), damped_length)
            solved = self.solve(self.right_hand_side(targets, base, push))
            new = solved
            exact = True  # the iterate is the solve's result (the vertex step's gradient uses it)
            # Not while contact forces act: they change from one iteration to the next, and
            # extrapolating along that change set a cloth on a table vibrating.
            if self.chebyshev and k > CHEBYSHEV_DELAY and push is None:
                first = k == CHEBYSHEV_DELAY + 1
                omega = 2.0 / (2.0 - self.rho**2) if first else 4.0 / (4.0 - self.rho**2 * omega)
                new = older + omega * (solved - older)
                exact = False
            pushed = None
            if contact is not None:
                new, moved = self._project(contact, y, new)
                # The projection becomes a force on the contact particles alone (M times the
                # correction, an Uzawa step on the contact constraints): only projecting the
                # iterate would, through the global step's Laplacian, pull the contact's
                # neighbours towards the collider, a pull that grows with the iteration count.
                if moved is not None:
                    if (k == last and last < iterations + CONTACT_EXTRA
                            and np.einsum("ij,ij->i", moved, moved).max() > settled):
                        last += 1
                        self.extra_iterations += 1
                    pushed = moved * self.mass_f[:, None]
                    push = pushed if push is None else push + pushed
                    exact = False
            older, xf = xf, new
            if observer is not None:
                observe(k)
        if self.vertex_newton is not None and k:
            solved = None if exact else solved
            touching = None if contact is None else contact.mesh_touching
            kept = None if touching is None or not touching.any() else self._beside(touching[free])
            xf = self._vertex_step(xf, solved, targets, pushed, delta_pinned, damped_length, damping,
                                   kept, push)
        if contact is not None:
            contact.push = None
            if push is not None:
                contact.push = np.zeros_like(y)
                contact.push[free] = push
        out = y.copy()
        out.reshape(-1)[self._free_flat] = xf.ravel()
        return out

    def _fixed_parts(self, y: np.ndarray):
        """What the iterations of one substep share, from the prediction y (n, 3): (base (3f,), the
        right-hand side's M y less the pinned particles' coupling; delta_pinned (3s,), the
        pinned particles' part of the springs' vectors), in coordinate rows [x..., y..., z...]."""
        y_rows = np.ascontiguousarray(y.T)
        base = y_rows.take(self.free, axis=1)
        base *= self.mass_f
        base = base.ravel()
        pinned_rows = y_rows.take(self.model.pinned_indices, axis=1).ravel()
        if len(self.model.pinned_indices):
            base -= self.coupling_rows(pinned_rows)
        return base, self.incidence_pinned(pinned_rows)

    def _damping(self, positions: np.ndarray):
        """(damped_length (s,) m, damping (stiffness (s,) N/m, start lengths (s,) m)) of the damping
        springs at the substep's start positions (n, 3), or (None, None) without damping."""
        if self.damping_scale is None:
            return None, None
        start = self.incidence @ positions
        start_length = np.sqrt(np.einsum("ij,ij->i", start, start))
        return (self.damping_scale * start_length,
                (self.damping_scale * self.model.spring_stiffness[self.springs], start_length))

    def _project(self, contact, y: np.ndarray, new: np.ndarray):
        """The free particles' iterate new (f, 3) moved out of the colliders by contact.project (the
        pinned ones at y (n, 3)): (projected (f, 3), the move (f, 3), or None where nothing moved)."""
        full = y.copy()
        full[self.free] = new
        contact.project(full)
        projected = gather(full, self.free)
        moved = projected - new
        return projected, (moved if np.any(moved) else None)

    def _beside(self, touching: np.ndarray) -> np.ndarray:
        """(f,) bool: the free particles `touching` ((f,) bool) marks, and every particle a spring
        joins to one of them."""
        springs = self._links @ touching.astype(np.float64)
        return touching | (self._links.T @ springs > 0.0)

    def _vertex_step(self, xf, solved, targets, pushed, delta_pinned, damped_length, damping, kept=None,
                     push=None):
        """xf (f, 3) after the vertex Newton step (vertex_newton.py), from the last iteration's
        solve result (f, 3; None when xf is exactly it), its targets (3, s) and the contact forces
        its projection added ((f, 3) or None). kept: (f,) bool, particles the step leaves where
        the iterations put them, or None; push: (f, 3) the contact forces the iterations ended
        with, or None.

        The step's blocks know nothing of the colliders, so it is kept out of them: a particle a
        collider pushes does not move further along the push's opposite (into that collider),
        and particles a mesh collider with a rim holds, with their neighbours, do not move at
        all. Along a box's rim, where the projection turns the cloth over a sharp edge in every
        iteration, the step buckled the cloth against the projection and the next substep's
        projection put it back: a crumpled band that never settled (docs/PHYSICS.md §9). Smooth
        surfaces (the analytic floor and ball, a floor plane, a smooth body) let the step's moves
        slide along them, and need it there: a tube standing on the floor buckles at its foot.

        The step needs the objective's gradient at xf. For force-matched targets d(x) it is
        K x - b(d(x)) (K = M + h^2 L, b the right-hand side), and the last solve made
        K solved = b(targets); so at xf = solved + e
            grad g(xf) = h^2 J (targets - d(xf)) + (K - M) e + M (e - e_contact)
        with e_contact the projection's part of e, whose M e_contact the push already holds: one
        local step and one product with h^2 J, and a product with K - M only where the iterate
        was moved after its solve (contact, Chebyshev).
        """
        delta = self._spring_vectors(xf, delta_pinned, 2)
        length = np.sqrt(np.einsum("ij,ij->j", delta, delta))
        here = self._rows[3].reshape(3, -1)
        # the targets there, then the change since the last solve's (in place)
        change = np.subtract(targets, self.spring_targets(delta, damped_length, length, out=here), out=here)
        gradient = self.h2_J(change.ravel()).reshape(3, -1)
        moved = None if solved is None else xf - solved
        if moved is not None and np.any(moved):
            gradient += self.stiffness_part(np.ascontiguousarray(moved.T).ravel()).reshape(3, -1)
            if pushed is not None:
                moved = moved - pushed / self.mass_f[:, None]
            gradient += (self.mass_f[:, None] * moved).T
        step = self.vertex_newton.step(gradient, length, delta, self.active, damping).T
        if kept is not None:
            step[kept] = 0.0
        if push is not None:
            strength = np.sqrt(np.einsum("ij,ij->i", push, push))
            rows = np.flatnonzero(strength > 0.0)
            if len(rows):
                normal = push[rows] / strength[rows, None]
                into = np.einsum("ij,ij->i", step[rows], normal)
                step[rows] -= np.maximum(into, 0.0)[:, None] * normal
        return xf - step
