"""Self-contact's proximity response: contacts pushed apart to the gap, with Coulomb friction.

An inelastic position projection of each contact's point pair along its normal, weighted by the
inverse masses of its vertices, several contacts at a vertex averaged (Jacobi), with Coulomb
friction on the pair's relative tangential slide over the substep, capped by the normal
correction (Bridson, Fedkiw, Anderson 2002).
"""

import numpy as np

from ...geometry import gather, vector_lengths


def scatter(index, vectors, n):
    """(n, 3) per-vertex mean of the (k, 3) vectors sent to vertex index (k,) (Jacobi average)."""
    count = np.bincount(index, minlength=n).astype(np.float64)
    out = np.empty((n, 3))
    for axis in range(3):
        out[:, axis] = np.bincount(index, vectors[:, axis], n)
    return out / np.maximum(count, 1.0)[:, None]


def push(x, x0, contacts, inv_mass, friction):
    """(vertex ids (k m,), displacements (k m, 3)) of the inelastic projection of k contacts on
    their m vertices each, or None when none can move: contacts = (who (k, m) vertex ids, weights
    (k, m) signed barycentric weights (+ on one side, - on the other), normal (k, 3), depth (k,) m
    to correct) at x (n, 3) of the substep from x0; inv_mass (n,) 1/kg; friction cuts the relative
    tangential slide."""
    who, weights, normal, depth = contacts
    inv = inv_mass[who]
    denom = np.einsum("ij,ij->i", weights * weights, inv)
    movable = denom > 0.0
    if not np.all(movable):
        if not np.any(movable):
            return None
        who, weights, normal, depth, inv, denom = (v[movable]
                                                   for v in (who, weights, normal, depth, inv, denom))
    lam = depth / denom
    step = (weights * inv * lam[:, None])[:, :, None] * normal[:, None, :]  # (k, m, 3)
    if friction > 0.0:
        # relative slide of the two sides over the substep, tangential part
        slide = np.einsum("ij,ijk->ik", weights, gather(x, who) - gather(x0, who))
        slide -= np.einsum("ij,ij->i", slide, normal)[:, None] * normal
        length = vector_lengths(slide)
        cut = np.minimum(1.0, friction * np.abs(depth) / np.maximum(length, 1e-300))
        mu = (cut / denom)[:, None] * slide  # the impulse that stops that share of the slide
        step -= (weights * inv)[:, :, None] * mu[:, None, :]
    return who.ravel(), step.reshape(-1, 3)
