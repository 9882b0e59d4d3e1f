"""Verlet integration with Jakobsen relaxation (Jakobsen 2001; docs/PHYSICS.md §3).

Relaxation is Gauss-Seidel over distance constraints, vectorised by colour: springs of one
colour share no particle, so each colour is projected at once and the pass equals a
sequential loop over the springs in colour order. Finite stiffness uses XPBD compliance
alpha = 1/(k h^2) (Macklin 2016); at the default stiffness alpha is ~1e-5 of the inverse
masses, so the step is Jakobsen's projection to that precision, and k = inf is exactly it.
Known property (Liu et al. 2013, Fig. 4): more iterations make this cloth stiffer.
"""

import numpy as np
import scipy.sparse as sp

from ..colouring import colour_springs
from ..sparse_ops import MatVec
from .base import InertialSolver


class VerletSolver(InertialSolver):
    """Solver for one ClothModel; `advance` computes one substep.

    Inside the relaxation positions are one flat coordinate-major array [x..., y..., z...]. Per
    colour, one sparse product gathers every p_j - p_i as a (3, k) block, and one more scatters
    the weighted corrections back: about 15 numpy calls per colour instead of 36 with fancy
    indexing.
    """

    def __init__(self, model, settings):
        super().__init__(model, settings)
        h = self.h
        i, j = model.spring_indices.T
        wi, wj = model.inv_mass[i], model.inv_mass[j]
        k = model.spring_stiffness
        with np.errstate(divide="ignore"):
            compliance = np.where(np.isinf(k), 0.0, 1.0 / (k * h * h))
        # a spring between two pinned particles, or of zero stiffness, does nothing
        movable = ((wi + wj) > 0.0) & (k > 0.0)
        # compressed springs are softer (Settings.compression): XPBD compliance 1 / (c k h^2),
        # infinite (no resistance) at c = 0
        ratios = model.spring_compression
        with np.errstate(divide="ignore", invalid="ignore"):
            squeezed = None if ratios is None else np.where(ratios > 0.0, compliance / ratios, np.inf)
        # Force-limited (sewing) springs: XPBD's multiplier is the force times h^2, so capping
        # its accumulated value caps the force (needs the multipliers even for rigid springs).
        limit = model.spring_force_limit
        lam_limit = None if limit is None else limit * h * h
        colour = colour_springs(model.spring_indices, model.n_particles)
        n = model.n_particles
        self.colours = []
        for c in range(colour.max() + 1 if len(colour) else 0):
            ids = np.flatnonzero((colour == c) & movable)
            if not len(ids):
                continue
            denom = wi[ids] + wj[ids] + compliance[ids]
            ci, cj = wi[ids] / denom, wj[ids] / denom
            softer = None
            if squeezed is not None and np.any(ratios[ids] < 1.0):
                # (compliance, 1 / denominator) of the springs while compressed
                # an infinite compliance (compression 0) pushes nothing: its 1 / denominator is 0
                soft = squeezed[ids]
                unbounded = np.isinf(soft)
                soft = np.where(unbounded, 0.0, soft)
                softer = (soft, np.where(unbounded, 0.0, 1.0 / (wi[ids] + wj[ids] + soft)))
            gi, gj, e = i[ids], j[ids], np.arange(len(ids))
            ones = np.ones(len(ids))
            gather = sp.csr_matrix((np.concatenate([ones, -ones]), (np.tile(e, 2), np.concatenate([gj, gi]))),
                                   shape=(len(ids), n))
            scatter = sp.csr_matrix((np.concatenate([ci, -cj]), (np.concatenate([gi, gj]), np.tile(e, 2))),
                                    shape=(n, len(ids)))
            self.colours.append({
                "ids": ids, "i": gi, "j": gj, "rest": model.spring_rest_length[ids],
                "ci": ci, "cj": cj, "compliance": compliance[ids],
                "inv_denom": 1.0 / denom, "compressed": softer,
                "lam_limit": None if lam_limit is None or np.isinf(lam_limit[ids]).all() else lam_limit[ids],
                "active": None,  # None while nothing is torn: saves two products per colour
                # p_j - p_i for x, y, z at once; corrections +ci at i, -cj at j
                "gather": MatVec(sp.block_diag([gather] * 3)),
                "scatter": MatVec(sp.block_diag([scatter] * 3)),
            })
        self.has_compliance = bool(np.any(compliance > 0.0)) or lam_limit is not None or squeezed is not None

    def set_active(self, active: np.ndarray) -> None:
        """active: (s,) bool, springs that still exist (torn ones do not)."""
        for group in self.colours:
            kept = active[group["ids"]]
            group["active"] = None if kept.all() else kept.astype(np.float64)

    # The JavaScript demo this solver reproduces (docs/PHYSICS.md §3) projects its particles out of
    # colliders once, after the relaxation; keeping that (no projection inside the passes, no edge
    # or corner features) keeps this solver its algorithm (tests/core/test_verlet.py compares
    # them). Self-contact is the same for all.
    contact_in_iterations = False
    contact_features = False

    def advance(self, positions, previous, accel, pin_targets):
        """One substep: (n, 3) positions after prediction and relaxation (before contact)."""
        flat = np.ascontiguousarray(self.predict(positions, previous, accel, pin_targets).T).ravel()
        lambdas = [np.zeros(len(g["ids"])) for g in self.colours] if self.has_compliance else None
        for _ in range(self.iterations):
            for index, g in enumerate(self.colours):
                d = g["gather"](flat).reshape(3, -1)
                length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
                error = length - g["rest"]
                compliance, inv_denom = g["compliance"], g["inv_denom"]
                if g["compressed"] is not None:
                    short = error < 0.0
                    compliance = np.where(short, g["compressed"][0], compliance)
                    inv_denom = np.where(short, g["compressed"][1], inv_denom)
                if g["active"] is not None:
                    error *= g["active"]
                if lambdas is not None:
                    lam = lambdas[index]
                    error += compliance * lam
                    if g["lam_limit"] is None:
                        lam -= error * inv_denom
                    else:
                        capped = np.clip(lam - error * inv_denom, -g["lam_limit"], g["lam_limit"])
                        error = (lam - capped) / inv_denom
                        lam[:] = capped
                if g["compressed"] is not None:
                    # the scatter's weights hold the stretched springs' 1 / denominator
                    error *= inv_denom / g["inv_denom"]
                d *= error / np.maximum(length, 1e-12)
                g["scatter"].add_into(d.ravel(), flat)
        return np.ascontiguousarray(flat.reshape(3, -1).T)
