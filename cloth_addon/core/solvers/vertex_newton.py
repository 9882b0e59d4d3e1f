"""One Newton step per vertex on the implicit Euler objective, after the fast solver's iterations
(docs/PHYSICS.md §9): what makes the cloth buckle and fold at two iterations.

The local/global iterations are a gradient descent preconditioned with M + h^2 L, which gives
every spring its stiffness k in every direction, across the spring as along it. The local step
turns the springs' targets with the iterate, so a stretched spring's artificial stiffness across
itself vanishes as the iterations converge; but they converge slowly there, at a rate near
h^2 k / (m + h^2 k) per iteration. Where springs are compressed the true Hessian is soft across
them (negative before the clamp: a compressed column is an unstable equilibrium) and, with
Settings.compression below 1, soft along them too; two iterations from a straight start still find
the straight column, and a compressed spring that the matrix holds at full stiffness barely
shortens (the cloth stands like cardboard where a converged implicit step buckles and folds).

The step fixes what the iterations leave there, vertex by vertex:

    x_i <- x_i - D_i^-1 grad_i g(x)
    D_i  = m_i I + 2 h^2 sum over i's springs of H_s + h^2 sum_j |B_ij| I          (3 x 3)
    H_s  = k_s n n^T + max(0, f_s / l_s) (I - n n^T)     (the clamped spring Hessian, f = k_s (l - r))

k_s is the spring's stiffness, times Settings.compression where it is shorter than at rest. grad
is the whole objective's, inertia, springs, bending and contact forces included, so a vertex the
iterations left in balance does not move (a cloth at rest stays exactly where it is). D is a
Gershgorin bound of the true Hessian's diagonal blocks: a spring's 6 x 6 Hessian is at most twice
its two diagonal blocks, and the bending matrix at most its absolute row sums, so the step descends
on g's quadratic model whatever the neighbours do (the plain block diagonal, a Jacobi step,
overshoots where stiff springs couple vertices). Across a compressed spring D holds the mass alone,
so the bending instability grows there as in Newton's method; along stiff stretched springs it
moves a vertex by at most half of what Newton would, and the iterations have already converged
those. Like a vertex block descent step (Chen et al. 2024), but all vertices at once.
"""

import numpy as np
import scipy.sparse as sp

from ..garment import limited_force
from ..sparse_ops import MatVec


class VertexNewton:
    """The step's blocks D for one model's free particles; springs (s,) are the fast solver's
    springs with stiffness, whose gradient and spring geometry it is given (coordinate rows).

    model: ClothModel; h: substep length, s; springs: (s,) int64 indices into the model's springs;
    incidence_free: (s, f) sparse, +1 at each spring's first particle and -1 at its second, over
    the free particles.
    """

    def __init__(self, model, h: float, springs: np.ndarray, incidence_free):
        self.h2 = h * h
        ratios = model.spring_compression
        self.compression = None if ratios is None else ratios[springs]
        self.rest = model.spring_rest_length[springs]
        self.stiffness = model.spring_stiffness[springs]
        limit = model.spring_force_limit
        self.limit = None if limit is None else limit[springs]
        # |A|^T sums each spring's block at both of its (free) ends, for six entries at once
        self.ends = MatVec(sp.block_diag([abs(sp.csr_matrix(incidence_free).T)] * 6))
        self.mass = model.mass[~model.pinned]
        self.diagonal = self.mass
        # work arrays reused every step (see FastMassSpringSolver._rows)
        s, f = len(self.rest), len(self.mass)
        self._weighted = np.empty((3, s))
        self._entries = np.empty((6, s))
        self._blocks = np.empty(6 * f)
        self._k_here = np.empty(s)
        self._active = self._k = None

    def _stiffness(self, active: np.ndarray):
        """((s,) N/m of the springs that exist, (s,) the same times the compression ratio or None),
        kept until the springs that exist change (tearing)."""
        if self._active is None or not np.array_equal(active, self._active):
            self._active = active.copy()
            k = np.where(active, self.stiffness, 0.0)
            self._k = (k, None if self.compression is None else self.compression * k)
        return self._k

    def set_bending(self, bending) -> None:
        """bending: (f, f) the bending matrix over the free particles (torn hinges removed), or
        None; its absolute row sums join every block's diagonal."""
        bound = 0.0 if bending is None else np.asarray(abs(bending).sum(axis=1)).ravel()
        self.diagonal = self.mass + self.h2 * bound

    def step(self, gradient: np.ndarray, length: np.ndarray, delta: np.ndarray, active: np.ndarray,
             damping: tuple | None = None) -> np.ndarray:
        """(3, f) the step D^-1 grad to subtract from the free particles' positions.

        gradient: (3, f) grad g at the positions, coordinate rows (kg m); length: (s,) m, the
        springs' lengths there (clamped above 0 in place); delta: (3, s) m, their vectors p_i1 - p_i2;
        active: (s,) bool, springs that still exist; damping: the solver's damping springs as
        (stiffness (s,) N/m, rest lengths (s,) m: the springs' lengths at the substep's start), or
        None.
        """
        stretch = length - self.rest
        k, soft = self._stiffness(active)
        if soft is not None:
            here = self._k_here
            np.copyto(here, k)
            np.copyto(here, soft, where=stretch < 0.0)
            k = here
        # A force-limited (sewing) spring past its limit has no curvature along itself, and a step
        # sized by the mass alone would carry a seam's ends far past each other before the pull
        # fades as the seam closes: k, the curvature it has once closer, bounds the step instead
        # (the block stays above the Hessian along the whole step, not only where it starts).
        along = k
        across = limited_force(stretch, k, self.limit)
        np.maximum(across, 0.0, out=across)
        if damping is not None:
            damper, start = damping
            across += np.maximum(damper * (length - start), 0.0)
            along = along + damper
        np.maximum(length, 1e-12, out=length)
        across /= length
        # each spring's block (along - across) n n^T + across I, n = delta / l, its six distinct
        # entries as rows (xx, yy, zz, xy, xz, yz)
        weight = along - across
        weight /= length
        weight /= length
        weighted = np.multiply(delta, weight, out=self._weighted)
        entries = self._entries
        np.multiply(weighted, delta, out=entries[:3])
        entries[:3] += across
        np.multiply(weighted[0], delta[1], out=entries[3])
        np.multiply(weighted[0], delta[2], out=entries[4])
        np.multiply(weighted[1], delta[2], out=entries[5])
        self._blocks.fill(0.0)
        blocks = self.ends.add_into(entries.ravel(), self._blocks).reshape(6, -1)
        blocks *= 2.0 * self.h2
        blocks[:3] += self.diagonal
        return solve_symmetric3(blocks, gradient)


def solve_symmetric3(blocks: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """(3, n) solutions of n symmetric 3 x 3 systems, by cofactors (np.linalg.solve on (n, 3, 3)
    is several times slower). blocks: (6, n) entries (xx, yy, zz, xy, xz, yz) as rows, positive
    definite; rhs: (3, n)."""
    a, d, f, b, c, e = blocks
    cofactors = np.empty((6, len(a)))
    c11, c22, c33, c12, c13, c23 = cofactors
    np.multiply(d, f, out=c11)
    c11 -= e * e
    np.multiply(c, e, out=c12)
    c12 -= b * f
    np.multiply(b, e, out=c13)
    c13 -= c * d
    np.multiply(a, f, out=c22)
    c22 -= c * c
    np.multiply(b, c, out=c23)
    c23 -= a * e
    np.multiply(a, d, out=c33)
    c33 -= b * b
    det = a * c11
    det += b * c12
    det += c * c13
    r0, r1, r2 = rhs
    out = np.empty_like(rhs)
    for row, (first, second, third) in enumerate(((c11, c12, c13), (c12, c22, c23), (c13, c23, c33))):
        np.multiply(first, r0, out=out[row])
        out[row] += second * r1
        out[row] += third * r2
    out /= det
    return out
