"""The candidate pairs of self-contact: one value holding what the tests need of each pair.

Vertex-triangle pairs (p, t) and edge-edge pairs (a < b), each with its exact gap at the
reference positions, its features' vertices, whether proximity may push it (pairs already closer
than the gap in the rest shape are the cloth's own neighbourhood, which only continuous detection
watches) and its cluster pairs (clusters.py). Built by the broad phase, read by the narrow phase.
"""

from dataclasses import dataclass

import numpy as np


def member(keys, table):
    """(k,) bool: keys found in the sorted array table."""
    if len(table) == 0:
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[at] == keys


@dataclass(frozen=True)
class Neighbourhood:
    """The pairs already closer than the gap in the rest shape, as sorted flat keys: vertex-triangle
    p * t_count + t (vf), edge-edge a * e_count + b (ee)."""

    vf: np.ndarray
    ee: np.ndarray
    triangle_count: int
    edge_count: int

    def vf_pushable(self, p, t):
        """(k,) bool: which vertex-triangle pairs proximity may push."""
        return ~member(p * max(self.triangle_count, 1) + t, self.vf)

    def ee_pushable(self, a, b):
        """(k,) bool: which edge-edge pairs proximity may push."""
        return ~member(a * max(self.edge_count, 1) + b, self.ee)


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs, k_vf vertex-triangle and k_ee edge-edge (int64 ids, float64 m).

    vf_p, vf_t (k_vf,): vertex and triangle; vf_gap (k_vf,): exact gap at the reference;
    vf_tris (k_vf, 3): the triangle's corners; vf_pushable (k_vf,) bool; vf_clusters (3, k_vf):
    flat (c, c) cluster pairs. ee_a, ee_b, ee_gap, ee_a_ends, ee_b_ends (k_ee, 2), ee_pushable,
    ee_clusters (4, k_ee): the same for edge pairs."""

    vf_p: np.ndarray
    vf_t: np.ndarray
    vf_gap: np.ndarray
    vf_tris: np.ndarray
    vf_pushable: np.ndarray
    vf_clusters: np.ndarray
    ee_a: np.ndarray
    ee_b: np.ndarray
    ee_gap: np.ndarray
    ee_a_ends: np.ndarray
    ee_b_ends: np.ndarray
    ee_pushable: np.ndarray
    ee_clusters: np.ndarray

    @classmethod
    def of(cls, found, triangles, edges, clusters, neighbourhood):
        """The candidates of found = (p, t, vf_gap, a, b, ee_gap) (broad_phase.BroadPhase.near)."""
        p, t, vf_gap, a, b, ee_gap = found
        return cls(p, t, vf_gap, triangles[t], neighbourhood.vf_pushable(p, t), clusters.vf_pairs(p, t),
                   a, b, ee_gap, edges[a], edges[b], neighbourhood.ee_pushable(a, b), clusters.ee_pairs(a, b))

    def joined(self, more):
        """These candidates and those of `more` (no pair in both)."""
        return Candidates(*(np.concatenate([mine, theirs], axis=1 if name.endswith("_clusters") else 0)
                            for name, mine, theirs in zip(self.__dataclass_fields__, self.fields(),
                                                          more.fields(), strict=True)))

    def fields(self):
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)

    @property
    def vf(self):
        return self.vf_p, self.vf_t

    @property
    def ee(self):
        return self.ee_a, self.ee_b

    def __len__(self):
        return len(self.vf_p) + len(self.ee_a)
