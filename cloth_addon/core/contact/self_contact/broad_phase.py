"""Self-contact's broad phase: candidate pairs kept over substeps while they hold.

Vertex-triangle and edge-edge pairs that can come within the gap d, found at reference positions
x_ref (the end of the substep that built the set: its budgets then reach back to that substep's
start and forward over the next ones alike). For two features a, b (a point of each carried by
the same barycentric weights) the gap at x is at least

    gap(x_ref) - dev_a - dev_b - max |m_A - m_B| over the clusters A of a's and B of b's vertices

(dev: the largest deviation of a feature's vertices from its cluster's reference motion since
x_ref; m: the clusters' reference motions, clusters.py). Each vertex gets a budget (GROW times
its deviation over a substep, plus SLACK d) and each two clusters a drift allowance (DRIFT_GROW
times how far their reference motions differ over that substep, plus DRIFT_SLACK d); the search
(feature_search.py) lists the pairs whose exact gap at x_ref is within d plus their features'
largest budgets plus their clusters' largest allowance, and stores that gap. Two clusters whose
reaches have bounding spheres at x_ref further apart than d plus the reaches' largest budgets plus
the allowance take no allowance: their limit on the drift is instead how far those spheres are
apart beyond d and the budgets; others' limit is their allowance. While no vertex deviates by
more than its budget and no two clusters drift apart by more than their limit, every other pair
stays further apart than d, and a candidate's gap is at least its reference gap less its
features' deviations and its clusters' drift since: a scalar test per pair (`shortlist`,
`may_touch`) drops most before any geometry. Deviations and drifts are norms of linear functions
of the positions, so positions within bounds at both ends of a straight path are within them all
along it. A vertex that outruns its budget gets a larger one and the pairs that brings within
reach are added (`cover`); two clusters that drift beyond their limit get a larger allowance, and
the pairs between their features that brings within reach are added too. When the drifting
clusters or the vertices outrunning their budgets are too many (REBUILD), or the set has doubled,
it is built afresh.

The proximity passes also carry a floor per candidate: a lower bound of its gap at the positions
of the last shortlist (its exact gap where the narrow phase measured it, `note_gaps`, else the
bound above). A pair's gap shrinks by at most how far its features' vertices moved since, so the
next passes (a push of a fraction of a millimetre, a substep's motion in a settled pile) measure
again only the pairs that this leaves within the gap.
"""

import numpy as np

from ...geometry import vector_lengths
from .. import sphere_search
from .candidates import Candidates, member
from .clusters import largest, most, pairwise

# A vertex's candidate budget: GROW times its deviation over the substep that found them, plus
# SLACK times the gap, so that the set lasts a few substeps and covers what the response moves.
GROW = 2.0
SLACK = 0.25
# The same for the drift between two clusters' reference motions.
DRIFT_GROW = 2.0
DRIFT_SLACK = 0.25
# The candidates are found afresh when more than this fraction of the vertices outrun their
# budgets at once, or belong to clusters that drift beyond their limits (rather than growing
# the budgets and allowances of those).
REBUILD = 0.25
# A pair is left out of a proximity pass only when its carried floor is above the gap by this
# fraction of it: far beyond the rounding of the exact gaps, so the passes find the same contacts.
FLOOR_MARGIN = 1e-9


class BroadPhase:
    """The kept candidates of one SelfContact. search: feature_search.FeatureSearch; neighbourhood:
    candidates.Neighbourhood; stats: the SelfContact's counters (builds, grown, drifted, vf, ee).

    After the first `cover`: candidates (candidates.Candidates), reference (n, 3) m, budget (n,)
    m, allowance and limit (c, c) m."""

    def __init__(self, search, neighbourhood, stats):
        self.search = search
        self.clusters = search.clusters
        self.distance = search.distance
        self.neighbourhood = neighbourhood
        self.stats = stats
        self.reference = None
        self.candidates = None
        # the carried floors: (vf (k_vf,), ee (k_ee,)) m and the positions (n, 3) they hold at
        self._floor = None
        self._shortlisted = None  # the rows of the last shortlist's pairs, (vf, ee)

    def fit(self, budget, allowance, apart=None):
        """(allowance, limit), each (c, c) m, for vertex budgets (n,) and the drift allowances
        (c, c) asked for. Two clusters whose features are further apart at the reference than d
        plus the largest budgets of their reaches need no allowance (0): no pair of theirs can be
        found with it. limit: how far two clusters' reference motions may drift apart while the
        candidates hold, their allowance or, if larger, how far their reaches' bounding spheres
        at the reference are apart beyond d and those budgets. apart: (c, c) m, how far those
        spheres are apart (the reference's if None)."""
        apart = self._apart if apart is None else apart
        reach = self.clusters.reach_largest(budget)
        apart = apart - reach[:, None] - reach[None, :] - self.distance
        allowance = np.where(apart > allowance, 0.0, allowance)
        np.fill_diagonal(allowance, 0.0)
        return allowance, np.maximum(allowance, apart)

    def build(self, x0, x1):
        """Find candidate pairs afresh from the start x0 and the current end x1 of a substep,
        (n, 3) m.

        x1 becomes the reference. Each vertex's budget is GROW times its deviation from its
        cluster's mean motion x0 -> x1, plus SLACK d, and each two clusters' drift allowance
        DRIFT_GROW times how far their mean motions differ, plus DRIFT_SLACK d; pairs closer at x1
        than d plus their vertices' largest budgets and their clusters' allowance are candidates,
        with their exact gaps at x1. They hold for any positions at which no vertex deviates by
        more than its budget and no two clusters drift apart by more than their limit."""
        d = self.distance
        # The end is the reference: the budgets then cover the substep's motion back to x0 and
        # GROW times it forwards, a substep more than from x0 at a steady speed.
        reference = x1
        apart = self.clusters.apart(reference)
        mean, deviation = self.clusters.split(x1 - x0)
        drift = pairwise(mean)
        try:
            budget = GROW * deviation + SLACK * d
            allowance, limit = self.fit(budget, DRIFT_GROW * drift + DRIFT_SLACK * d, apart)
            found = self.search.near(reference, budget, allowance)
        except sphere_search.TooManyPairs:
            # a cloth in violent motion: budgets for this substep alone; if even those list too
            # many pairs, TooManyPairs reaches prepare/untangle, which hold the cloth still
            budget = deviation + SLACK * d
            allowance, limit = self.fit(budget, drift + DRIFT_SLACK * d, apart)
            found = self.search.near(reference, budget, allowance)
        # only now: if even the fall-back lists too many pairs, the last set and its reference stay
        self.reference, self._apart = reference.copy(), apart
        self.budget, self.allowance, self.limit = budget, allowance, limit
        self._set(self._candidates(found))
        self._floor = None
        self._built = len(self.candidates)
        self.stats["builds"] = self.stats.get("builds", 0) + 1

    def _candidates(self, found):
        search = self.search
        return Candidates.of(found, search.triangles, search.edges, self.clusters, self.neighbourhood)

    def _set(self, candidates):
        self.candidates = candidates
        self.stats["vf"], self.stats["ee"] = len(candidates.vf_p), len(candidates.ee_a)

    def spread(self, x):
        """How far the vertices at x (n, 3) deviate from the reference, apart from their
        clusters' mean motions, per feature at most: ((n,) vertices, (t,) triangles, (e,) edges),
        m; and how far the clusters' mean motions drifted apart, (c, c) m."""
        mean, vertex = self.clusters.split(x - self.reference)
        return vertex, most(vertex, self.search.triangles), most(vertex, self.search.edges), pairwise(mean)

    def cover(self, x0, x) -> bool:
        """Make the candidates hold at positions x (n, 3) of the substep that starts at x0, and at
        x0: two features that are no pair are then further apart than the gap at both, and on the
        straight path between them. A vertex that deviated from the reference by more than its
        budget gets a larger one, two clusters that drifted apart beyond their limit a larger
        allowance, and the pairs that this brings within reach are added; when many vertices
        need that, or the set has grown a lot, it is built afresh. Returns whether pairs were
        added."""
        reference = self.reference
        if reference is None or len(x) != len(reference):
            self.build(x0, x)
            return True
        # Both ends: deviations and drifts are norms of linear functions of the positions, so
        # within bounds at both ends they are within them all along the path; and growing
        # budgets lowers the limits of the drifts, which x0 must still meet.
        mean0, deviation0 = self.clusters.split(x0 - reference)
        mean, deviation = self.clusters.split(x - reference)
        deviation = np.maximum(deviation, deviation0)
        drift = np.maximum(pairwise(mean), pairwise(mean0))
        over = deviation > self.budget
        if not over.any() and not np.any(drift > self.limit):
            return False
        if over.sum() > REBUILD * len(x) or len(self.candidates) > 2 * self._built + 1000:
            self.build(x0, x)
            return True
        budget = np.where(over, GROW * deviation + SLACK * self.distance, self.budget)
        grown = self._grown_allowance(budget, drift, len(x))
        if grown is None:
            self.build(x0, x)
            return True
        allowance, limit, drifting = grown
        try:
            found = self._found(budget, allowance, over, drifting)
        except sphere_search.TooManyPairs:
            self.build(x0, x)
            return True
        self._add_new(found, budget, allowance, limit)
        return True

    def _grown_allowance(self, budget, drift, n):
        """(allowance, limit, drifting (n,) bool: the vertices of clusters that drifted beyond their
        limit) for the grown budgets (n,): such clusters get larger allowances, and only the pairs
        between their features need a search (a few cluster pairs where one part of the cloth
        comes down on another, not the whole set); None when a rebuild is due instead."""
        d = self.distance
        allowance = self.allowance
        _, limit = self.fit(budget, allowance)
        drifting = drift > limit
        drifting |= drifting.T  # (both are symmetric but for rounding)
        if not np.any(drifting):
            return allowance, limit, np.zeros(n, dtype=bool)
        self.stats["drifted"] = self.stats.get("drifted", 0) + 1
        allowance = np.where(drifting, DRIFT_GROW * drift + DRIFT_SLACK * d, allowance)
        allowance, limit = self.fit(budget, allowance)
        drifting = member(self.clusters.label, np.flatnonzero(drifting.any(axis=1)))  # now per vertex
        if np.any(drift > limit) or drifting.sum() > REBUILD * n:
            return None
        self.stats["drift_grown"] = self.stats.get("drift_grown", 0) + 1
        return allowance, limit, drifting

    def _found(self, budget, allowance, over, drifting):
        """(p, t, vf_gap, a, b, ee_gap): the pairs within the grown budgets and allowance that have
        a vertex outrunning its old budget (over (n,) bool), or both features in drifting clusters."""
        search = self.search
        found = [search.near(self.reference, budget, allowance, over)] if over.any() else []
        if np.any(drifting):
            p, t, vf_gap, a, b, ee_gap = search.near(self.reference, budget, allowance, drifting & ~over,
                                                     within=True)
            # pairs with a vertex that outran its budget came with the search above
            vf = ~(over[p] | most(over, search.triangles[t]))
            ee = ~(most(over, search.edges[a]) | most(over, search.edges[b]))
            found.append((p[vf], t[vf], vf_gap[vf], a[ee], b[ee], ee_gap[ee]))
        return tuple(np.concatenate(column) for column in zip(*found, strict=True))

    def _add_new(self, found, budget, allowance, limit):
        """Keep the grown budgets and allowance, and add the pairs of found that were out of reach
        before."""
        p, t, vf_gap, a, b, ee_gap = found
        search, d = self.search, self.distance
        flat = self.allowance.ravel()
        old = self.budget
        new = vf_gap > old[p] + most(old, search.triangles[t]) + d + self.clusters.vf_most(flat, p, t)
        fresh = ee_gap > most(old, search.edges[a]) + most(old, search.edges[b]) + d + \
            self.clusters.ee_most(flat, a, b)
        self.budget, self.allowance, self.limit = budget, allowance, limit
        more = self._candidates((p[new], t[new], vf_gap[new], a[fresh], b[fresh], ee_gap[fresh]))
        self._set(self.candidates.joined(more))
        if self._floor is not None:  # the new pairs come after the kept ones, with no floor yet
            vf, ee, at = self._floor
            self._floor = (np.concatenate([vf, np.full(len(more.vf_p), -np.inf)]),
                           np.concatenate([ee, np.full(len(more.ee_a), -np.inf)]), at)
        self.stats["grown"] = self.stats.get("grown", 0) + 1

    # -- the first cut of the narrow phase: bounds from the reference gaps ---------------------
    def shortlist(self, x):
        """The proximity candidates (p, t, a, b) that may be closer than the gap at x (n, 3): the
        pair's carried floor, less how far its features' vertices moved since it was set, is
        within the gap, and so is its gap at the reference less how far both features deviated
        since and how far their clusters drifted apart. The floors then hold at x (the exact gaps
        of these pairs, once measured, go to `note_gaps`)."""
        d = self.distance
        c = self.candidates
        (p, t), (a, b) = c.vf, c.ee
        if self._floor is None:
            vf_floor, ee_floor = np.full(len(p), -np.inf), np.full(len(a), -np.inf)
        else:
            vf_floor, ee_floor = self._floors_after(vector_lengths(x - self._floor[2]))
        # the reference's bounds only where the floors leave a pair within the gap
        clear = d * (1.0 + FLOOR_MARGIN)
        vf_rows, ee_rows = np.flatnonzero(~(vf_floor > clear)), np.flatnonzero(~(ee_floor > clear))
        vertex, triangle, edge, drift = self.spread(x)
        drift = drift.ravel()
        vf_reach = d + vertex[p[vf_rows]] + triangle[t[vf_rows]] + largest(drift, c.vf_clusters[:, vf_rows])
        ee_reach = d + edge[a[ee_rows]] + edge[b[ee_rows]] + largest(drift, c.ee_clusters[:, ee_rows])
        # those bounds, as floors at x
        vf_floor[vf_rows] = np.maximum(vf_floor[vf_rows], c.vf_gap[vf_rows] - (vf_reach - d))
        ee_floor[ee_rows] = np.maximum(ee_floor[ee_rows], c.ee_gap[ee_rows] - (ee_reach - d))
        self._floor = (vf_floor, ee_floor, x.copy())
        vf_rows = vf_rows[c.vf_pushable[vf_rows] & (c.vf_gap[vf_rows] < vf_reach)]
        ee_rows = ee_rows[c.ee_pushable[ee_rows] & (c.ee_gap[ee_rows] < ee_reach)]
        self._shortlisted = (vf_rows, ee_rows)
        return p[vf_rows], t[vf_rows], a[ee_rows], b[ee_rows]

    def _floors_after(self, moved):
        """(vf (k_vf,), ee (k_ee,)) m: the carried floors less how far each pair's features'
        vertices have moved at most, moved (n,) m per vertex from where the floors hold."""
        vf, ee, _ = self._floor
        c = self.candidates
        return (vf - moved[c.vf_p] - most(moved, c.vf_tris),
                ee - most(moved, c.ee_a_ends) - most(moved, c.ee_b_ends))

    def note_gaps(self, vf_gap=None, ee_gap=None) -> None:
        """The exact gaps (m) at the last shortlist's positions of its vertex-triangle pairs
        (vf_gap, in its order) and its edge-edge pairs (ee_gap), or None where not measured:
        they become those pairs' floors."""
        vf, ee, _ = self._floor
        vf_rows, ee_rows = self._shortlisted
        if vf_gap is not None:
            vf[vf_rows] = vf_gap
        if ee_gap is not None:
            ee[ee_rows] = ee_gap

    def may_touch(self, x0, motion, tol):
        """The candidates that may touch on the straight paths x0 -> x0 + motion (n, 3):
        ((p (k,), triangle corners (k, 3)), (ends of a (m, 2), ends of b (m, 2))). A pair can only
        touch if its gap at the reference is within what its features deviated since, at x0, plus
        what they move apart from their clusters' means over the substep, plus how far their
        clusters drift apart at most (at either end: the drift is linear), and if its carried
        floor less how far its features' vertices are from where it holds is within tol, m."""
        vertex, triangle, edge, drift = self.spread(x0)
        mean, step = self.clusters.split(motion)
        drift = np.maximum(drift, pairwise(self.clusters.mean @ (x0 - self.reference) + mean)).ravel()
        vertex = vertex + step
        triangle = triangle + most(step, self.search.triangles)
        edge = edge + most(step, self.search.edges)
        c = self.candidates
        vf_rows, ee_rows = np.arange(len(c.vf_p)), np.arange(len(c.ee_a))
        if self._floor is not None:
            # the carried floors, less the farthest either end of the path is from where they
            # hold (a point of the path is no farther than its farther end)
            at = self._floor[2]
            vf, ee = self._floors_after(np.maximum(vector_lengths(x0 - at), vector_lengths(x0 + motion - at)))
            clear = tol + FLOOR_MARGIN * self.distance
            vf_rows, ee_rows = np.flatnonzero(~(vf > clear)), np.flatnonzero(~(ee > clear))
        p, t, a, b = c.vf_p[vf_rows], c.vf_t[vf_rows], c.ee_a[ee_rows], c.ee_b[ee_rows]
        vf_reach = vertex[p] + triangle[t] + largest(drift, c.vf_clusters[:, vf_rows]) + tol
        ee_reach = edge[a] + edge[b] + largest(drift, c.ee_clusters[:, ee_rows]) + tol
        vf_rows, ee_rows = vf_rows[c.vf_gap[vf_rows] <= vf_reach], ee_rows[c.ee_gap[ee_rows] <= ee_reach]
        return (c.vf_p[vf_rows], c.vf_tris[vf_rows]), (c.ee_a_ends[ee_rows], c.ee_b_ends[ee_rows])
