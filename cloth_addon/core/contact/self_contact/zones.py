"""The guarantee: rigid impact zones, then a fall-back to the substep's start.

Continuous collision detection (narrow_phase.touching) finds every candidate pair that touches
during the substep on the straight paths x0 -> x1. The vertices of touching pairs form impact
zones (Provot 1997; Bridson, Fedkiw, Anderson 2002) that move rigidly with their mass-weighted
mean displacement (translation only), so nothing inside a zone can cross; zones that still touch
others merge, up to ZONE_ROUNDS times (after a move, the pairs with a vertex that moved are found by a
search over the bounding spheres of their paths, narrow_phase.SweptSearch, not among the
candidates, which the move may have left behind; the last round's touching pairs none of whose
vertices moved are kept as they are, `_again`);
whatever still touches then stays where it started the substep, pinned vertices last: a pin that
would still drive its features through the cloth waits at its start for that substep and is aimed
at its target again by the next. A substep that starts without crossings ends without them,
whatever the solver, iterations, substeps, gap, speed or pin motion, provided every motion is a
straight line over the substep (which position-based stepping makes it).
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ... import geometry
from ...geometry import gather

# Impact-zone merges before the fall-back (vertices back at the start of the substep).
ZONE_ROUNDS = 12
# In an impact zone, a vertex that a collider holds counts this many times its mass, so that a
# zone landing on the floor mostly stops with it rather than being pushed into it.
HELD_WEIGHT = 20.0


class ImpactZones:
    """Untangles the substeps of one model. touching(x0, x1, changed): (k, 4) vertices of the
    pairs that touch during x0 -> x1 (changed None: among the candidates; else (n,) bool, the
    pairs with a changed vertex, searched afresh); stats: the SelfContact's counters."""

    def __init__(self, model, touching, stats):
        self.model = model
        self.touching = touching
        self.stats = stats
        self._normal = None  # (n, 3) contact normals of the held vertices, for one untangle

    def untangle(self, x0, x1, held, normal=None):
        """Make x0 -> x1 free of crossings, in place on x1 (n, 3); x0 must be crossing-free.
        held: (n,) bool or None, vertices a collider holds; normal: (n, 3) their contact normals
        (zero elsewhere) or None. Returns how many vertices ended in impact zones."""
        n = len(x0)
        pinned = self.model.inv_mass == 0.0
        held = np.zeros(n, dtype=bool) if held is None else held & ~pinned
        self._normal = normal
        found = self._merge(x0, x1, pinned, held)
        if isinstance(found, int):
            return found
        in_zone, zone_of, touching = found
        self._fall_back(x0, x1, pinned, in_zone, zone_of, touching)
        self.stats["rounds"] = ZONE_ROUNDS
        return int(in_zone.sum())

    def _again(self, x0, x1, touching, moved):
        """(k, 4) every pair that touches during x0 -> x1 after the vertices moved (n,) bool moved,
        given `touching`, every pair that touched before they did. A pair none of whose vertices
        moved has the same straight paths as before, so it touches exactly if it did: those of
        touching are kept without a test (a zone that cannot move, a rope wound round a turning
        pin, is not searched for again every round); a pair with a moved vertex is searched for."""
        kept = touching[~geometry.row_any(moved[touching])]
        if not moved.any():
            return kept
        return np.concatenate([kept, self.touching(x0, x1, moved)])

    def _merge(self, x0, x1, pinned, held):
        """Zone rounds, in place on x1. Returns how many vertices ended in zones when nothing
        touches any more, else (in_zone (n,) bool, zone_of (n,) int or None: each vertex's zone's
        smallest vertex, touching (k, 4): the pairs that touch, every one) for the fall-back."""
        n = len(x0)
        zone_of = None
        in_zone = np.zeros(n, dtype=bool)
        # The candidates hold for x1 as it comes in (prepare); once zones have moved, the pairs
        # with a vertex that moved are searched for directly (their vertices may have left the
        # candidates' reach), and the others touch as they did (_again).
        touching = self.touching(x0, x1, None)
        for rounds in range(1, ZONE_ROUNDS + 1):
            if len(touching) == 0:
                self.stats["rounds"] = rounds - 1
                return int(in_zone.sum())
            # zones: connected vertex sets of touching pairs, merged with the zones so far
            rows = np.repeat(touching[:, 0], touching.shape[1] - 1)
            cols = touching[:, 1:].ravel()
            if zone_of is not None:
                members = np.flatnonzero(in_zone)
                rows = np.concatenate([rows, members])
                cols = np.concatenate([cols, zone_of[members]])
            graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
            _, label = connected_components(graph, directed=False)
            in_zone[touching.ravel()] = True
            # a zone's representative: its smallest vertex (stable across rounds)
            first = np.full(label.max() + 1, n, dtype=np.int64)
            np.minimum.at(first, label[in_zone], np.flatnonzero(in_zone))
            zone_of = first[label]
            before = x1.copy()
            self._move(x0, x1, in_zone, label, pinned, held)
            moved = geometry.row_any(x1 != before)
            touching = self._again(x0, x1, touching, moved)
            if not moved.any():
                break  # the zones cannot move any other way (their anchors disagree): fall back
            self.stats["zones"] = int(len(np.unique(label[in_zone])))
        return in_zone, zone_of, touching

    @staticmethod
    def _lift(zones, size, short, held, normal):
        """(zones, 3) m: how far along its held vertices' mean contact normal each zone must move
        on so that none of them ends nearer its collider than the collider put it (short: (k, 3)
        each member's own motion less the zone's, normal: (k, 3) unit normals of the held ones).
        Without it a zone that straddles a fold lying on the floor, its upper layer falling,
        carries the lower layer back into the floor's margin, a little more every substep."""
        deficit = np.where(held, np.einsum("ij,ij->i", short, normal), 0.0)
        need = np.zeros(size)
        np.maximum.at(need, zones, deficit)
        direction = np.stack([np.bincount(zones, held * normal[:, k], size) for k in range(3)], axis=1)
        length = np.sqrt(np.einsum("ij,ij->i", direction, direction))
        direction /= np.maximum(length, 1e-300)[:, None]
        # moving along the mean normal d, a held vertex with normal n gains (d . n) per metre
        reach = np.full(size, 1.0)
        np.minimum.at(reach, zones, np.where(held, np.einsum("ij,ij->i", direction[zones], normal), 1.0))
        return (need / np.maximum(reach, 0.1))[:, None] * direction

    def _fall_back(self, x0, x1, pinned, in_zone, zone_of, touching):
        """Every vertex still touching, and its zone, back at the start, in place on x1; touching:
        (k, 4) every pair that touches during x0 -> x1 as it comes in."""
        n = len(x0)
        stuck = np.zeros(n, dtype=bool)
        waiting = np.zeros(n, dtype=bool)
        for _ in range(2 * n):
            if len(touching) == 0:
                break
            before = stuck | waiting
            stuck[touching.ravel()] = True
            if zone_of is not None:
                stuck |= in_zone & np.isin(zone_of, zone_of[stuck & in_zone])
            stuck &= ~pinned
            if np.array_equal(x1[stuck], x0[stuck]):
                # Only pins still drive a crossing (a pinned column turned through the cloth
                # wrapped round it): those pins wait where the substep started. The next substep
                # aims them at their own target again, so they catch up as soon as the cloth
                # lets them pass.
                pins = np.zeros(n, dtype=bool)
                pins[touching.ravel()] = True
                waiting |= pins & pinned
            x1[stuck | waiting] = x0[stuck | waiting]
            changed = (stuck | waiting) & ~before
            if not changed.any():
                break  # x1 is x0 wherever a touching pair has a vertex: x0 is crossing-free
            touching = self._again(x0, x1, touching, changed)
        self.stats["frozen"] = int(stuck.sum())
        self.stats["pins_held"] = int(waiting.sum())

    def _move(self, x0, x1, in_zone, label, pinned_all, held_all):
        """Every zone moves rigidly: a zone with pinned vertices by the rotation and translation
        that best carry its pins to their targets (Kabsch), so that a zone at a turning pin turns
        with it; else by its mass-weighted mean displacement, a vertex that a collider holds
        weighing as much as the collider's share (HELD_WEIGHT times its mass)."""
        members = np.flatnonzero(in_zone)
        zones = label[members]
        size = label.max() + 1
        pinned, held = pinned_all[members], held_all[members]
        start, end = gather(x0, members), gather(x1, members)

        def mean(values, weight):
            total = np.bincount(zones, weight, size)
            sums = np.stack([np.bincount(zones, weight * values[:, k], size) for k in range(3)], axis=1)
            return sums / np.maximum(total, 1e-300)[:, None], total > 0.0

        motion = end - start
        # a vertex a collider holds weighs HELD_WEIGHT times its mass: the collider's share
        weight = np.where(pinned, 0.0, self.model.mass[members] * np.where(held, HELD_WEIGHT, 1.0))
        shift, _ = mean(motion, weight)
        if self._normal is not None and held.any():
            shift += self._lift(zones, size, motion - shift[zones], held, gather(self._normal, members))
        moved = start + shift[zones]
        if pinned.any():
            # only the zones with pins turn: their members (rows), numbered among those zones
            pin_from, has_pins = mean(start, pinned.astype(np.float64))
            pin_to, _ = mean(end, pinned.astype(np.float64))
            rows = np.flatnonzero(has_pins[zones])
            turning = zones[rows]
            local = np.searchsorted(np.flatnonzero(has_pins), turning)
            count = int(has_pins.sum())
            # cross-covariance of the pins about their centres, one 3 x 3 per turning zone
            a, b = start[rows] - pin_from[turning], end[rows] - pin_to[turning]
            weight = pinned[rows]
            cov = np.zeros((count, 3, 3))
            for i in range(3):
                for j in range(3):
                    cov[:, i, j] = np.bincount(local, weight * a[:, i] * b[:, j], count)
            u, _, vt = np.linalg.svd(cov)
            turn = np.einsum("zij,zjk->zki", u, vt)  # R = V U^T
            flip = np.linalg.det(turn) < 0.0
            if np.any(flip):
                vt[flip, 2] *= -1.0
                turn = np.einsum("zij,zjk->zki", u, vt)
            moved[rows] = pin_to[turning] + np.einsum("kij,kj->ki", turn[local], a)
        keep = ~pinned
        x1[members[keep]] = moved[keep]
