"""SelfContact: the cloth's layers kept a gap apart, and never passing through each other.

Per substep, with x0 the (crossing-free) start and x1 the solver's end, the contact stage calls:

1. `prepare`: candidate pairs that hold for the substep (broad_phase.py, kept over substeps while
   they hold; the pair searches in feature_search.py, the clusters whose motion the bounds
   follow in clusters.py, the pairs as one value in candidates.py).
2. `separate` (a few passes, interleaved with the colliders by the contact stage): pairs closer
   than the gap d at the end, measured exactly (narrow_phase.py), pushed apart along the side
   they were on at the start (response.py). Pairs already closer than d in the rest shape are
   the cloth's own neighbourhood and are left alone.
3. `untangle`: the guarantee (zones.py): every pair that touches during the substep, found by
   continuous collision detection (narrow_phase.py, ccd.py), is resolved by rigid impact zones,
   and what still touches stays where it started. A substep that starts without crossings ends
   without them.
"""

import numpy as np

from .. import sphere_search
from . import feature_search, narrow_phase, response
from .broad_phase import BroadPhase
from .candidates import Neighbourhood
from .clusters import Clusters
from .feature_search import FeatureSearch
from .zones import ImpactZones

# Proximity passes per substep (each followed by the colliders).
PASSES = 3
# Vertices per cluster (at most): the rest shape is cut into clusters of about this many, each
# with its own reference motion; larger ones on a cloth of more than CLUSTER * MAX_CLUSTERS
# vertices (the drifts between clusters are (c, c) tables, built every substep).
CLUSTER = 32
MAX_CLUSTERS = 1024
# Touch tolerance of the continuous test, as a fraction of the gap (and never below 1 um).
TOUCH = 1e-3
# Where the solver's end of a substep would list more candidate pairs than are worth listing, each
# free vertex's move beyond its free flight is cut to at most this many median edge lengths, then
# the next, before the cloth is held where the substep started (`prepare`). The shortest cut cuts
# each pin's move too: a pin moves more than its animation only when it catches up after waiting
# (zones.py), and the folds' pinned row, lowered into its pile, waited there and then made every
# later search too large by catching up, so that the whole cloth was held from then on. Above the
# shortest cut the pins keep to their animation (the twist's turning column would lag it).
LIMITS = (1.0, 0.5, 0.25, 0.125, 0.0625)
# A cut cloth tries one level less cut at its next substep (a climb); a climb that does not fit
# costs a whole refused search, and a cloth wound tight refuses most, so after a refused climb
# the next ones wait this many substeps, doubled after each refusal in a row up to CLIMB_WAIT_MOST.
CLIMB_WAIT = 1
CLIMB_WAIT_MOST = 8


class SelfContact:
    """Self-contact of one ClothModel (and of several cloth objects simulated as one model).

    distance: m, the gap kept between layers; friction: Coulomb coefficient between layers;
    parts: for several cloth objects, (label (n,) int, own (k,) bool): each vertex's object and
    whether that object's own layers collide (None: every pair of features can be a contact).
    stats: counters of the last substeps (candidate pairs vf and ee, builds, zones, ...).
    """

    def __init__(self, model, distance: float, friction: float, parts=None):
        if not distance > 0.0:
            raise ValueError(f"self-contact distance must be > 0, got {distance!r}")
        self.model = model
        self.distance = float(distance)
        self.friction = float(friction)
        self.edges, self.triangles, _ = model.contact_features
        size = max(CLUSTER, -(-model.n_particles // MAX_CLUSTERS))
        clusters = Clusters(model, self.triangles, self.edges, size)
        self.search = FeatureSearch(model.n_particles, self.triangles, self.edges, self.distance, clusters,
                                    parts)
        self.neighbourhood = self._rest_neighbourhood()
        self.stats = {"vf": 0, "ee": 0, "zones": 0, "rounds": 0, "frozen": 0, "pins_held": 0,
                      "clusters": clusters.count}
        self.broad = BroadPhase(self.search, self.neighbourhood, self.stats)
        self._cut = 0  # the level of LIMITS the last `prepare` cut to (0: none)
        self._wait, self._backoff = 0, CLIMB_WAIT  # substeps before the next climb; the next wait
        self.zones = ImpactZones(model, self._touching, self.stats)
        self._swept = narrow_phase.SweptSearch(self.search)

    @property
    def clusters(self) -> Clusters:
        return self.search.clusters

    def _rest_neighbourhood(self) -> Neighbourhood:
        """Pairs already closer than the gap in the rest shape: the cloth's own neighbourhood,
        which proximity must not push apart (continuous detection still watches them)."""
        rest, d = self.model.rest_positions, self.distance
        vf_p, vf_t, vf_gap, ea, eb, ee_gap = self.search.near(rest, np.zeros(len(rest)))
        close_vf, close_ee = vf_gap < d, ee_gap < d
        return Neighbourhood(np.sort(vf_p[close_vf] * max(len(self.triangles), 1) + vf_t[close_vf]),
                             np.sort(ea[close_ee] * max(len(self.edges), 1) + eb[close_ee]),
                             len(self.triangles), len(self.edges))

    @property
    def candidates(self):
        """The kept candidates.Candidates, or None before the first `prepare`."""
        return self.broad.candidates

    def prepare(self, x0, x1, free=None) -> None:
        """Candidates that hold for the substep x0 -> x1 (n, 3). Without free, x1 is set back to
        x0 if they cannot be listed within memory (this substep does not move the cloth). Given
        free (n, 3), where free flight takes each vertex (the solver's inertial prediction): if
        a search for them would list more than feature_search.PAIR_LIMIT sphere pairs a vertex,
        each free vertex's move beyond free flight is cut to at most LIMITS median edge lengths
        in turn (at the shortest, each pin's move too), in place on x1, until none does; the two
        shortest cuts are kept within memory's limit (pair_limit) instead, and if neither fits
        the cloth is held (`_hold`).

        The cut is for a cloth wound tight (a sheet twisted into a rope): its springs push it far
        beyond free flight in every substep while its layers hold it back and the impact zones
        undo the move, and the candidates for such moves grow to memory's limit. Holding the whole
        cloth instead, while its pins went on turning, stretched the cloth between them and its
        last free pose into huge triangles in every held substep."""
        if free is None:
            try:
                self.broad.cover(x0, x1)
            except sphere_search.TooManyPairs:
                self._hold(x0, x1)
            return
        search = self.search
        # a cloth that needed a cut (or was held) needs one again in the next substep: it starts
        # one level above the last (each refused level costs a search; level 0: no cut), and
        # climbs back while it fits; after a refused climb it starts at the last level for a
        # few substeps (CLIMB_WAIT)
        start, self._cut = self._cut, 0
        climb = start > 0 and self._wait == 0
        if start > 0 and not climb:
            self._wait -= 1
        first = start - 1 if climb else start
        movable = beyond = size = None
        try:
            search.work_limit = feature_search.PAIR_LIMIT * len(x1)
            for level in range(first, len(LIMITS) + 1):
                if level:
                    if beyond is None:
                        movable = self.model.inv_mass > 0.0
                        base = np.where(movable[:, None], free, x0)
                        beyond = x1 - base
                        size = np.sqrt(np.einsum("ij,ij->i", beyond, beyond))
                    cut = LIMITS[level - 1] * self.model.median_edge_length
                    reach = cut if level == len(LIMITS) else np.where(movable, cut, np.inf)
                    scale = np.minimum(1.0, reach / np.maximum(size, 1e-300))
                    rows = movable | (scale < 1.0)  # a pin within the cut keeps its target exactly
                    x1[rows] = base[rows] + beyond[rows] * scale[rows, None]
                if level >= len(LIMITS) - 1:
                    # the two shortest cuts, the last that keeps the pins to their animation and
                    # the one that cuts them too: memory's limit
                    search.work_limit = None
                try:
                    self.broad.cover(x0, x1)
                except sphere_search.TooManyPairs:
                    continue
                if level:
                    self.stats["limited"] = self.stats.get("limited", 0) + 1
                self._cut = level
                if climb:
                    self._climbed(level == first)
                return
            self._cut = len(LIMITS)
            if climb:
                self._climbed(False)
            self._hold(x0, x1)
        finally:
            search.work_limit = None

    def _climbed(self, fitted) -> None:
        """After a climb: the next one waits CLIMB_WAIT substeps, doubled after each refused climb
        in a row (up to CLIMB_WAIT_MOST), or none once a climb fitted."""
        if fitted:
            self._wait, self._backoff = 0, CLIMB_WAIT
        else:
            self._wait, self._backoff = self._backoff, min(2 * self._backoff, CLIMB_WAIT_MOST)

    def _hold(self, x0, x1) -> bool:
        """The last resort, in place on x1: every free vertex stays where the substep started. The
        pins go on to their targets if the candidates can be made to hold for their move alone
        (the impact zones then make any pin whose features would pass through the cloth wait,
        zones.py); else they wait too, and the next substep aims them at their targets again.
        Pins sent on unchecked were lowered through a pile of folds in every held substep.
        Returns whether the pins went on."""
        free = self.model.inv_mass > 0.0
        x1[free] = x0[free]
        self.stats["held"] = self.stats.get("held", 0) + 1
        if np.array_equal(x1, x0):
            return False
        try:
            self.broad.cover(x0, x1)
            return True
        except sphere_search.TooManyPairs:
            self._pins_wait(x0, x1)
            return False

    def _pins_wait(self, x0, x1) -> None:
        """The pins too stay where the substep started (in place on x1): the whole substep waits."""
        x1[:] = x0
        self.stats["pins_waited"] = self.stats.get("pins_waited", 0) + 1

    def separate(self, x, x0) -> None:
        """One proximity pass, in place on x (n, 3): pairs closer than the gap pushed apart to it,
        on the side they were on at x0, with friction on their relative sliding."""
        if self.broad.reference is None:
            return  # no candidates: the first search did not fit in memory, and the substep held
        d = self.distance
        p, t, a, b = self.broad.shortlist(x)
        found, vf_gap, ee_gap = [], None, None
        if len(p):
            contacts, vf_gap = narrow_phase.vf_contacts(x, x0, p, self.triangles[t], d)
            found.append(contacts)
        if len(a):
            contacts, ee_gap = narrow_phase.ee_contacts(x, x0, self.edges, a, b, d)
            found.append(contacts)
        self.broad.note_gaps(vf_gap, ee_gap)
        found = [contacts for contacts in found if contacts is not None]
        if not found:
            return
        # both kinds in one push: four vertices a contact either way
        contacts = found[0] if len(found) == 1 else tuple(np.concatenate(column)
                                                           for column in zip(*found, strict=True))
        pushed = response.push(x, x0, contacts, self.model.inv_mass, self.friction)
        if pushed is not None:
            x += response.scatter(*pushed, len(x))

    def _touching(self, x0, x1, changed=None):
        """(k, 4) vertices of the pairs that touch during x0 -> x1: among the candidates (changed
        None), or those with a vertex of changed (n,) bool, searched afresh."""
        tol = max(TOUCH * self.distance, 1e-6)
        if changed is not None:
            return self._swept.touching(x0, x1, changed, tol)
        if self.broad.reference is None:
            return np.zeros((0, 4), dtype=np.int64)  # as in separate
        return narrow_phase.touching(self.broad, x0, x1, tol)

    def untangle(self, x0, x1, held=None, normal=None) -> int:
        """Make x0 -> x1 free of crossings, in place on x1 (n, 3); x0 must be crossing-free.

        held: optional (n,) bool, vertices a collider holds, and normal: (n, 3) their contact
        normals: a zone holding some translates as they do on average (a zone landing on the floor
        stops with it, not pushed into it), and never carries one back into its collider.
        Returns how many vertices ended in impact zones."""
        try:
            return self.zones.untangle(x0, x1, held, normal)
        except sphere_search.TooManyPairs:  # the zones flung the cloth about: the substep is undone
            if self._hold(x0, x1):
                try:  # the pins alone go on, through the zones as any move does
                    return self.zones.untangle(x0, x1, held, normal)
                except sphere_search.TooManyPairs:
                    self._pins_wait(x0, x1)
            return 0
