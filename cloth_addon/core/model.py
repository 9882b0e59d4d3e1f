"""ClothModel: the immutable part of a simulation (topology, masses, material)."""

from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import garment, topology
from .bending import BendingTerms, bending_terms
from .settings import Settings

# Contact broad phases assume no edge grows past this many times its rest length.
EDGE_STRETCH_BOUND = 2.0
# Springs shorter than this fraction of the mesh's size join coincident vertices.
_DEGENERATE_FRACTION = 1e-9


class ContactFeatures(NamedTuple):
    """edges: (e, 2) int64 unique edges of the triangles (lo, hi); triangles: (t, 3) int64;
    longest: m, a bound of any edge's length while simulating (EDGE_STRETCH_BOUND x the longest
    at rest), for broad phases."""

    edges: np.ndarray
    triangles: np.ndarray
    longest: float


@dataclass(frozen=True, eq=False)
class ClothModel:
    """Topology and parameters, structure of arrays. Never changes during a simulation.

    rest_positions:     (n, 3) float64, m, the mesh as given (world space).
    mass:               (n,) float64, kg, lumped per particle.
    inv_mass:           (n,) float64, 1/kg; 0 for pinned particles.
    pinned:             (n,) bool.
    pinned_indices:     (p,) int64.
    spring_indices:     (s, 2) int64, particle pairs (lo, hi).
    spring_kind:        (s,) int8, topology.STRUCTURAL / SHEAR / BEND / SEWING.
    spring_rest_length: (s,) float64, m.
    spring_stiffness:   (s,) float64, N/m (may be inf for the verlet solver: rigid). Bend
                        springs have 0 for the implicit solvers (bending is `bending` there)
                        and verlet_bend_stiffness(...) for the verlet solver.
    triangles:          (t, 3) int64, fan triangulation of the faces (wind, collisions).
    faces:              topology.Faces, the polygons as flat corner arrays.
    dropped_springs:    number of zero-length springs removed (coincident vertices).
    verlet_stiffness:   (s,) float64, N/m, every spring's stiffness in a verlet model (bend
                        springs: verlet_bend_stiffness of the bending stiffness, see
                        garment.bend_stiffness); None = as
                        spring_stiffness.
    bending:            (n, n) CSR float64, N/m: k_b Q of the quadratic bending model
                        (bending.py), E_bend = 1/2 sum over x, y, z of x^T bending x; None = none.
    bending_terms:      bending.BendingTerms, its hinges (k_b included), for tearing.
    spring_force_limit: (s,) float64, N, the most a spring pulls with (inf = unlimited), or None
                        when no spring is limited (sewing springs, core/garment.py).
    spring_compression: (s,) float64 in [0, 1], the fraction of its stiffness a spring shorter than
                        at rest pushes back with (Settings.compression; 1 for bend and sewing
                        springs), or None for 1 everywhere.
    """

    rest_positions: np.ndarray
    mass: np.ndarray
    inv_mass: np.ndarray
    pinned: np.ndarray
    pinned_indices: np.ndarray
    spring_indices: np.ndarray
    spring_kind: np.ndarray
    spring_rest_length: np.ndarray
    spring_stiffness: np.ndarray
    triangles: np.ndarray
    faces: topology.Faces
    dropped_springs: int = 0
    verlet_stiffness: np.ndarray | None = None
    bending: sp.csr_matrix | None = None
    bending_terms: BendingTerms | None = None
    spring_force_limit: np.ndarray | None = None
    spring_compression: np.ndarray | None = None

    @property
    def n_particles(self) -> int:
        return len(self.mass)

    @property
    def n_springs(self) -> int:
        return len(self.spring_indices)

    @cached_property
    def contact_features(self) -> "ContactFeatures":
        """The cloth's surface for contact: its triangles and their unique edges."""
        tris = self.triangles
        n = self.n_particles
        edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]) if len(tris) else \
            np.zeros((0, 2), dtype=np.int64)
        keys = np.unique(topology.pair_keys(edges[:, 0], edges[:, 1], n))
        edges = np.stack([keys // n, keys % n], axis=1)
        rest = self.rest_positions
        lengths = np.linalg.norm(rest[edges[:, 0]] - rest[edges[:, 1]], axis=1)
        longest = float(lengths.max()) if len(edges) else 0.0
        return ContactFeatures(edges, tris, EDGE_STRETCH_BOUND * longest)

    @cached_property
    def median_edge_length(self) -> float:
        """m: median rest length of the structural springs (mesh edges); 0 without springs."""
        structural = self.spring_rest_length[self.spring_kind == topology.STRUCTURAL]
        return float(np.median(structural)) if len(structural) else 0.0

    def effective_stiffness(self, length: np.ndarray, stiffness: np.ndarray | None = None) -> np.ndarray:
        """(s,) N/m: each spring's stiffness at its current length (m, (s,)): times its compression
        ratio where it is shorter than at rest. stiffness: (s,) to use instead of spring_stiffness."""
        stiffness = self.spring_stiffness if stiffness is None else stiffness
        if self.spring_compression is None:
            return stiffness
        return np.where(length < self.spring_rest_length, self.spring_compression * stiffness, stiffness)

    def energy(self, positions: np.ndarray, active: np.ndarray | None = None) -> float:
        """Spring energy E = sum 1/2 k (|p1 - p2| - r)^2, J, over active springs, k times the
        compression ratio where a spring is compressed (force-limited springs: the Huber energy of
        core/garment.py past their limit)."""
        i, j = self.spring_indices.T
        length = np.linalg.norm(positions[i] - positions[j], axis=1)
        stretch = length - self.spring_rest_length
        k, limit = self.effective_stiffness(length), self.spring_force_limit
        terms = 0.5 * k * stretch**2
        if limit is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                capped = np.abs(k * stretch) > limit
                terms = np.where(capped, limit * np.abs(stretch) - 0.5 * limit**2 / k, terms)
        return float(terms.sum() if active is None else terms[active].sum())

    def bending_matrix(self, active: np.ndarray | None = None) -> sp.csr_matrix | None:
        """(n, n) CSR, N/m: k_b Q without the hinges that touch a torn spring (active: (s,)
        bool, springs that still exist; None = all); None without bending."""
        if self.bending is None or active is None or np.all(active):
            return self.bending
        return self.bending_terms.matrix(self.n_particles, active)

    def bending_forces(self, positions: np.ndarray) -> np.ndarray:
        """(n, 3) float64, N: -dE_bend/dx = -(k_b Q) x."""
        if self.bending is None:
            return np.zeros_like(positions)
        return -(self.bending @ positions)

    def for_solver(self, solver: str) -> "ClothModel":
        """This model with the bend springs' stiffness the named solver needs (same springs).

        The implicit solvers bend through `bending` and give bend springs no stiffness; the
        verlet solver has no energy to add it to and uses the springs instead."""
        if self.verlet_stiffness is None:
            return self
        stiffness = self.verlet_stiffness.copy()
        if solver != "verlet":
            stiffness[self.spring_kind == topology.BEND] = 0.0
        if np.array_equal(stiffness, self.spring_stiffness):
            return self
        return replace(self, spring_stiffness=stiffness)

    def spring_forces(self, positions: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
        """(n, 3) float64, N: -dE/dx for the springs (the force each particle feels)."""
        i, j = self.spring_indices.T
        delta = positions[i] - positions[j]
        length = np.linalg.norm(delta, axis=1)
        force = garment.limited_force(length - self.spring_rest_length, self.effective_stiffness(length),
                                      self.spring_force_limit)
        scale = force / np.maximum(length, 1e-300)
        if active is not None:
            scale = scale * active
        return pulls_to_forces(self.spring_indices, delta * scale[:, None], len(positions))

    def spring_curvatures(self, length: np.ndarray, stiffness: np.ndarray):
        """(along, across), each (s,) N/m: a spring's Hessian is along n n^T + across (I - n n^T)
        at current lengths `length` (m), clamped to be positive semi-definite (across =
        max(0, f / l) drops a compressed spring's negative curvature); a spring at its force
        limit has no stiffness along n. stiffness: (s,) N/m before compression."""
        stiffness = self.effective_stiffness(length, stiffness)
        force = garment.limited_force(length - self.spring_rest_length, stiffness, self.spring_force_limit)
        along = stiffness
        if self.spring_force_limit is not None:
            along = np.where(np.abs(stiffness * (length - self.spring_rest_length)) > self.spring_force_limit,
                             0.0, stiffness)
        return along, np.maximum(0.0, force / length)


# The fold angle between neighbouring edges at which a skip-one spring of rest length r and
# the quadratic model store the same energy (see verlet_bend_stiffness).
VERLET_MATCH_ANGLE = 0.1


def pulls_to_forces(spring_indices: np.ndarray, pull: np.ndarray, n: int) -> np.ndarray:
    """(n, 3) float64, N: each spring's pull (s, 3) on its ends summed per particle, pulling the
    first particle towards the second (-pull) and the second towards the first (+pull)."""
    i, j = spring_indices.T
    out = np.zeros((n, 3))
    for axis in range(3):
        out[:, axis] = np.bincount(j, pull[:, axis], n) - np.bincount(i, pull[:, axis], n)
    return out


def verlet_bend_stiffness(bend_stiffness: float, rest_length: np.ndarray) -> np.ndarray:
    """(s,) float64, N/m: stiffness of skip-one bend springs for a plate stiffness k_b (N m).

    A skip-one spring of rest length r = 2a spans two edges of length a; folded by an angle
    theta between them it shortens by r (1 - cos(theta / 2)) ~ r theta^2 / 8 and stores
    k r^2 theta^4 / 128, quartic where the plate stores 1/2 k_b kappa^2 per area
    (kappa = theta / a, one spring per a^2). No constant k matches at every angle: k is chosen
    so that the two agree at theta = VERLET_MATCH_ANGLE, k = 64 k_b / (r^2 theta^2); gentler
    curvature meets less resistance than in the implicit solvers, sharper folds more.
    rest_length: (s,) m. inf stays inf (rigid constraints).
    """
    return 64.0 * bend_stiffness / (np.asarray(rest_length, dtype=np.float64) ** 2 * VERLET_MATCH_ANGLE**2)


def _validate_vertices(vertices, settings: Settings) -> np.ndarray:
    array = np.asarray(vertices, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"vertices must have shape (n, 3), got {array.shape}")
    if len(array) == 0:
        raise ValueError("the mesh is empty: no vertices")
    if len(array) > settings.max_vertices:
        raise ValueError(f"the mesh has {len(array)} vertices, more than Settings.max_vertices="
                         f"{settings.max_vertices}; raise Settings.max_vertices to simulate it")
    if not np.all(np.isfinite(array)):
        bad = int(np.argmax(~np.all(np.isfinite(array), axis=1)))
        raise ValueError(f"vertex {bad} has a NaN or infinite coordinate")
    return array.copy()


def _validate_rest_shape(rest_shape, n: int) -> np.ndarray:
    array = np.asarray(rest_shape, dtype=np.float64)
    if array.shape != (n, 3):
        raise ValueError(f"rest_shape must have shape ({n}, 3), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("rest_shape has a NaN or infinite coordinate")
    return array


def _pinned_mask(pinned, n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    if pinned is None:
        return mask
    array = np.asarray(pinned)
    if array.dtype == bool:
        if array.shape != (n,):
            raise ValueError(f"pinned mask must have shape ({n},), got {array.shape}")
        return array.copy()
    array = array.reshape(-1)
    if array.size and (not np.issubdtype(array.dtype, np.integer) or array.min() < 0 or array.max() >= n):
        raise ValueError(f"pinned indices must be integers in [0, {n})")
    values, counts = np.unique(array, return_counts=True)
    if np.any(counts > 1):
        # move_pins takes one target per listed pin, in this order: a repeat has no meaning
        raise ValueError(f"pinned lists vertex {values[counts > 1][0]} more than once")
    mask[array.astype(np.int64)] = True
    return mask


def _validate_edges(edges, n: int) -> np.ndarray | None:
    if edges is None:
        return None
    array = np.asarray(edges)
    if array.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"edges must be an (e, 2) integer array, got shape {array.shape}")
    if array.min() < 0 or array.max() >= n:
        raise ValueError(f"edge index out of range for {n} vertices")
    return array.astype(np.int64)


def build_model(vertices, faces, settings: Settings, pinned=None, edges=None, weights=None,
                rest_shape=None) -> ClothModel:
    """Build a ClothModel from a mesh.

    vertices: (n, 3) array-like, m. faces: sequence of index sequences (mixed sizes) or
    (m, k) int array; may be empty (a rope from `edges`, or loose particles). edges: optional
    (e, 2) int, mesh edges; those that belong to no face become structural springs with mass
    from Settings.linear_density (or, with Settings.use_sewing on a mesh with faces, massless
    sewing springs). pinned: None, indices, or (n,) bool mask. Vertices in no face and no edge
    are free particles of the smallest mass the mesh has (1 g if none). weights: optional
    {name: (n,) float in [0, 1]} per-vertex property weights (core/garment.py). rest_shape:
    optional (n, 3) m, the shape whose spring lengths are the rest lengths (a shape key);
    None = vertices. Masses always come from `vertices`.
    """
    positions = _validate_vertices(vertices, settings)
    n = len(positions)
    faces = topology.parse_faces(faces if faces is not None else [], n)
    edges = _validate_edges(edges, n)
    loose = np.zeros((0, 2), dtype=np.int64)
    if edges is not None and len(edges):
        face_keys = np.unique(topology.pair_keys(faces.corners, faces.corners[faces.next_loop], n))
        loose = edges[~np.isin(topology.pair_keys(edges[:, 0], edges[:, 1], n), face_keys)]
        loose = loose[loose[:, 0] != loose[:, 1]]
    weights = garment.validate_weights(weights, n)
    shape = positions if rest_shape is None else _validate_rest_shape(rest_shape, n)
    sewing = np.zeros((0, 2), dtype=np.int64)
    if settings.use_sewing and len(faces):
        sewing, loose = garment.sewing_pairs(loose, n), loose[:0]
    pairs, kinds = topology.build_springs(faces, n, loose)
    size = float(np.ptp(shape, axis=0).max()) or 1.0
    pairs, kinds, rest, dropped = topology.drop_degenerate(pairs, kinds, shape,
                                                         _DEGENERATE_FRACTION * size)
    rest = garment.shrink_rest_lengths(rest, pairs, settings, weights)
    # Sewing springs join vertices that may coincide (a closed seam): never dropped, rest 0.
    pairs = np.concatenate([pairs, sewing])
    kinds = np.concatenate([kinds, np.full(len(sewing), topology.SEWING, dtype=np.int8)])
    rest = np.concatenate([rest, np.zeros(len(sewing))])
    triangles = topology.triangulate(faces)
    mass = topology.lumped_masses(positions, faces, triangles, loose, settings.density,
                                  settings.linear_density)
    if "mass" in weights:
        mass = mass * weights["mass"]
    pin = _pinned_mask(pinned, n)
    inv_mass = np.where(pin, 0.0, 1.0 / mass)
    # property weights blend each spring's stiffness; the bending stiffness blends per fold
    verlet_stiffness = garment.spring_stiffness(kinds, pairs, rest, settings, weights)
    bend = kinds == topology.BEND
    verlet_stiffness[bend] = verlet_bend_stiffness(garment.bend_stiffness(settings, weights, pairs[bend]),
                                                   rest[bend])
    # none for rigid (inf, verlet only: its springs are the constraints) or absent bending
    terms = bending = None
    weighted = "bend" in weights and bool(settings.bend_stiffness_max)
    if len(faces) and np.isfinite(settings.bend_stiffness) and (settings.bend_stiffness > 0.0 or weighted):
        terms = bending_terms(positions, faces, pin, pairs)
        k_b = garment.bend_stiffness(settings, weights, terms.hinges[:, :2])
        if np.any(np.asarray(k_b) > 0.0):
            terms = terms.scaled(k_b)
            bending = terms.matrix(n)
        else:
            terms = None
    return ClothModel(
        rest_positions=positions,
        mass=mass,
        inv_mass=inv_mass,
        pinned=pin,
        pinned_indices=np.flatnonzero(pin),
        spring_indices=pairs,
        spring_kind=kinds,
        spring_rest_length=rest,
        spring_stiffness=verlet_stiffness,  # for_solver below zeroes bend springs for the implicit solvers
        triangles=triangles,
        faces=faces,
        dropped_springs=dropped,
        spring_force_limit=garment.force_limits(kinds, settings),
        spring_compression=garment.compression_ratios(kinds, settings),
        verlet_stiffness=verlet_stiffness,
        bending=bending,
        bending_terms=terms,
    ).for_solver(settings.solver)



def concatenate_models(models) -> tuple[ClothModel, np.ndarray]:
    """One ClothModel holding several, side by side (their particles, springs and faces
    renumbered in order), and (k + 1,) int64 starts: model i's particles are
    starts[i]:starts[i + 1]. Each keeps its own masses and stiffnesses."""
    models = list(models)
    counts = np.array([m.n_particles for m in models], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    total = int(starts[-1])
    corner_counts = np.array([len(m.faces.corners) for m in models], dtype=np.int64)
    corner_starts = np.concatenate([[0], np.cumsum(corner_counts)])
    faces = topology.Faces(
        np.concatenate([m.faces.corners + s for m, s in zip(models, starts, strict=False)]),
        np.concatenate([m.faces.face_start + c for m, c in zip(models, corner_starts, strict=False)]),
        np.concatenate([m.faces.face_size for m in models]), total)
    pinned = np.concatenate([m.pinned for m in models])
    model = ClothModel(
        rest_positions=np.concatenate([m.rest_positions for m in models]),
        mass=np.concatenate([m.mass for m in models]),
        inv_mass=np.concatenate([m.inv_mass for m in models]),
        pinned=pinned,
        pinned_indices=np.flatnonzero(pinned),
        spring_indices=np.concatenate([m.spring_indices + s for m, s in zip(models, starts, strict=False)]),
        spring_kind=np.concatenate([m.spring_kind for m in models]),
        spring_rest_length=np.concatenate([m.spring_rest_length for m in models]),
        spring_stiffness=np.concatenate([m.spring_stiffness for m in models]),
        triangles=np.concatenate([m.triangles + s for m, s in zip(models, starts, strict=False)]),
        faces=faces,
        dropped_springs=sum(m.dropped_springs for m in models),
        verlet_stiffness=np.concatenate([m.for_solver("verlet").spring_stiffness for m in models]),
        **_concatenated_bending(models, starts),
        spring_force_limit=_concatenated_limits(models),
        spring_compression=_concatenated_compression(models),
    )
    return model, starts


def _concatenated_bending(models, starts) -> dict:
    """bending and bending_terms of concatenate_models: block-diagonal, hinges renumbered."""
    spring_starts = np.concatenate([[0], np.cumsum([m.n_springs for m in models])])
    parts = [(m, int(start), int(spring_start))
             for m, start, spring_start in zip(models, starts, spring_starts, strict=False)
             if m.bending is not None]
    if not parts:
        return {}
    total = int(starts[-1])
    rows, cols, values = [], [], []
    hinges, blocks, springs = [], [], []
    for m, start, spring_start in parts:
        coo = m.bending.tocoo()
        rows.append(coo.row + start)
        cols.append(coo.col + start)
        values.append(coo.data)
        terms = m.bending_terms
        hinges.append(terms.hinges + start)
        blocks.append(terms.values)
        springs.append(np.where(terms.springs >= 0, terms.springs + spring_start, -1))
    bending = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(total, total))
    terms = BendingTerms(np.concatenate(hinges), np.concatenate(blocks), np.concatenate(springs))
    return {"bending": bending, "bending_terms": terms}


def _concatenated_limits(models) -> np.ndarray | None:
    """The parts' spring_force_limit side by side (inf for parts without limits), or None."""
    if all(m.spring_force_limit is None for m in models):
        return None
    return np.concatenate([np.full(m.n_springs, np.inf) if m.spring_force_limit is None
                           else m.spring_force_limit for m in models])


def _concatenated_compression(models) -> np.ndarray | None:
    """The parts' spring_compression side by side (1 for parts without), or None."""
    if all(m.spring_compression is None for m in models):
        return None
    return np.concatenate([np.ones(m.n_springs) if m.spring_compression is None
                           else m.spring_compression for m in models])
