"""Garment features of the model: sewing springs, shrinking, per-vertex property weights.

Sewing (as in Blender's Cloth): with Settings.use_sewing, the loose edges of a mesh that has
faces (edges in no face) do not become rope springs but sewing springs: rest length 0,
stiffness Settings.stretch_stiffness (see `sewing_stiffness` for a limited force), their pull
capped at Settings.sewing_force_max newtons.
A capped spring has the Huber energy
    E(l) = 1/2 k l^2              for k l <= F
         = F l - F^2 / (2 k)      beyond,
which is min over d of 1/2 k |p1 - p2 - d|^2 + F |d|: the local/global solver keeps its
constant matrix and only its local step changes (d shrinks toward p1 - p2, see
`limited_spring_targets`), so the fast solver stays prefactored.

Per-vertex weights (Simulation's `weights` argument) are (n,) float arrays in [0, 1]; a
spring takes the mean of its two vertices' weights:
    "shrink":  scales Settings.shrink per vertex (rest length * (1 - shrink * w)).
    "stretch", "shear": blend the spring's stiffness from the base value (w = 0) to
               Settings.<kind>_stiffness_max (w = 1), like Blender's property weights.
    "bend":    blends the bending stiffness k_b (N m) from Settings.bend_stiffness to
               Settings.bend_stiffness_max the same way: each hinge of the bending model by the
               mean weight of the edge it folds about, each verlet bend spring by its ends'.
    "mass":    scales each vertex's mass (its share of the cloth's density); w = 0 is refused
               (a particle needs mass).
Weights are fixed for a simulation: changing them means a new Simulation (the fast solver's
matrix depends on them).
"""

import numpy as np

from .topology import BEND, SEWING, SHEAR, STRUCTURAL

# A force-limited sewing spring reaches its limit at this fraction of the median edge length.
SEWING_REACH = 0.2
WEIGHT_NAMES = ("shrink", "stretch", "shear", "bend", "mass")
_KIND_OF = {"stretch": STRUCTURAL, "shear": SHEAR}


def validate_weights(weights, n: int) -> dict:
    """{name: (n,) float64 in [0, 1]} from a mapping of names to array-likes (None = {})."""
    if weights is None:
        return {}
    if not hasattr(weights, "items"):
        raise ValueError(f"weights must be a dict of (n,) arrays keyed by {WEIGHT_NAMES}")
    out = {}
    for name, values in weights.items():
        if name not in WEIGHT_NAMES:
            raise ValueError(f"weights[{name!r}]: unknown weight; expected one of {WEIGHT_NAMES}")
        if values is None:
            continue
        array = np.asarray(values, dtype=np.float64)
        if array.shape != (n,):
            raise ValueError(f"weights[{name!r}] must have shape ({n},), got {array.shape}")
        if not np.all((array >= 0.0) & (array <= 1.0)):
            raise ValueError(f"weights[{name!r}] must be in [0, 1]")
        if name == "mass" and not np.all(array > 0.0):
            raise ValueError("weights['mass'] must be > 0 at every vertex (a particle needs mass)")
        out[name] = array.copy()
    return out


def spring_weight(weights: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """(s,) mean of the two end vertices' weights."""
    return 0.5 * (weights[pairs[:, 0]] + weights[pairs[:, 1]])


def shrink_rest_lengths(rest, pairs, settings, weights: dict) -> np.ndarray:
    """(s,) m: rest lengths shortened by Settings.shrink (times the spring's shrink weight)."""
    if settings.shrink == 0.0:
        return rest
    shrink = settings.shrink * (spring_weight(weights["shrink"], pairs) if "shrink" in weights else 1.0)
    return rest * (1.0 - shrink)


def sewing_stiffness(kinds, rest, settings) -> float:
    """N/m of the sewing springs: Settings.stretch_stiffness, or with a force limit F, at most
    F / (SEWING_REACH * median edge length), so that the limit is reached when the seam is a
    fifth of an edge open.

    Why: the fast solver's constant matrix holds each spring at its full stiffness k from one
    iteration to the next, so a spring pulling with F moves its ends by about F / k per
    iteration. With k = 500 N/m and F = 1 N that is 2 mm, and a 0.6 m seam would take hundreds
    of frames to close (Newton, which drops the capped spring's stiffness, closes it in a few).
    """
    if settings.sewing_force_max <= 0.0:
        return settings.stretch_stiffness
    edges = rest[kinds == STRUCTURAL]
    edge = float(np.median(edges)) if len(edges) else 1.0
    return min(settings.stretch_stiffness, settings.sewing_force_max / (SEWING_REACH * edge))


def spring_stiffness(kinds, pairs, rest, settings, weights: dict) -> np.ndarray:
    """(s,) N/m per spring: the kind's base stiffness, blended toward its max by the weights."""
    per_kind = np.array([settings.stretch_stiffness, settings.shear_stiffness, settings.bend_stiffness,
                         sewing_stiffness(kinds, rest, settings)])
    stiffness = per_kind[kinds]
    for name, kind in _KIND_OF.items():
        top = getattr(settings, f"{name}_stiffness_max")
        if name not in weights or top is None:
            continue
        chosen = kinds == kind
        base = per_kind[kind]
        stiffness[chosen] = base + (top - base) * spring_weight(weights[name], pairs[chosen])
    return stiffness


def bend_stiffness(settings, weights: dict, pairs: np.ndarray) -> float | np.ndarray:
    """k_b, N m, of the folds about each (e, 2) vertex pair: Settings.bend_stiffness, or with a
    "bend" weight and Settings.bend_stiffness_max an (e,) float64 blend between the two."""
    top = settings.bend_stiffness_max
    if "bend" not in weights or top is None or not np.isfinite(settings.bend_stiffness):
        return settings.bend_stiffness  # rigid (inf, verlet only) stays rigid
    base = settings.bend_stiffness
    return base + (top - base) * spring_weight(weights["bend"], np.asarray(pairs).reshape(-1, 2))


def sewing_pairs(loose: np.ndarray, n: int) -> np.ndarray:
    """(q, 2) int64 sorted unique (lo, hi) sewing pairs from loose edges (self loops dropped)."""
    if not len(loose):
        return np.zeros((0, 2), dtype=np.int64)
    lo, hi = np.minimum(loose[:, 0], loose[:, 1]), np.maximum(loose[:, 0], loose[:, 1])
    keys = np.unique(lo[lo != hi] * n + hi[lo != hi])
    return np.stack([keys // n, keys % n], axis=1)


def force_limits(kinds, settings) -> np.ndarray | None:
    """(s,) N, the most each spring pulls with (inf = unlimited), or None when none is limited."""
    if settings.sewing_force_max <= 0.0 or not np.any(kinds == SEWING):
        return None
    return np.where(kinds == SEWING, settings.sewing_force_max, np.inf)


def compression_ratios(kinds, settings) -> np.ndarray | None:
    """(s,) Settings.compression for stretch and shear springs (and rope springs, which are
    structural), 1 for bend springs (the verlet solver's skip-one springs resist folding by
    resisting compression) and sewing springs (rest length 0: never compressed); None when
    compression is 1 (every spring resists compression as it resists stretching)."""
    if settings.compression == 1.0:
        return None
    return np.where((kinds == BEND) | (kinds == SEWING), 1.0, settings.compression)


def limited_force(stretch, stiffness, limit):
    """(s,) N: the spring force k (l - r) clipped to [-F, F] (limit None or inf = unlimited)."""
    force = stiffness * stretch
    return force if limit is None else np.clip(force, -limit, limit)


def limited_spring_targets(length, rest, stiffness, limit):
    """(k,) scale of p1 - p2 that gives the local step's d for force-limited springs.

    d minimises 1/2 k |delta - d|^2 + F | |d| - r |: |d| = l - clip(l - r, -F/k, F/k), so the
    spring pulls with min(k |l - r|, F). length, rest, stiffness, limit: (k,) float64.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(stiffness > 0.0, limit / stiffness, np.inf)
        scale = 1.0 - np.clip(length - rest, -reach, reach) / np.maximum(length, 1e-12)
    return scale
