"""Coulomb friction in positions, shared by the colliders.

A contact that pushed a particle `depth` along `normal` cuts the tangential part of its motion over
the substep by friction * depth: the particle sticks while the whole slide is below that (static
friction) and slides with that much less otherwise (Bridson, Fedkiw, Anderson 2002, in positions).
"""

import numpy as np

from ..geometry import vector_lengths


def friction_coefficient(collider, friction) -> float:
    """The coefficient a `project` call applies: none when called with friction=None (the contact
    stage applies Coulomb friction itself), else the collider's own or, without one, `friction`."""
    if friction is None:
        return 0.0
    return collider.friction if collider.friction is not None else friction


def apply_friction(positions, previous, hit, normal, depth, friction):
    """Cut the tangential displacement positions - previous (n, 3) of the particles `hit` ((n,)
    bool) by friction * depth, in place; normal (k, 3) unit, depth (k,) m, for the k hit rows."""
    if friction <= 0.0 or not np.any(hit):
        return
    disp = positions[hit] - previous[hit]
    tangent = disp - np.einsum("ij,ij->i", disp, normal)[:, None] * normal
    slide = vector_lengths(tangent)
    cut = np.minimum(1.0, friction * depth / np.maximum(slide, 1e-300))
    positions[hit] -= tangent * cut[:, None]
