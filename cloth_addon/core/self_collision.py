"""Self-collision: keep cloth particles, edges and triangles `thickness` apart.

After the solver and the colliders, per substep (positions x, start of the substep x0):

1. Broad phase (Teschner 2003 in spirit, with a k-d tree instead of a hash table): particle
   pairs closer than r = thickness + (longest edge) / sqrt(3) at the start, the middle or the
   end of the substep (r: how far a point of a triangle can be from its nearest corner). Pairs
   that share a spring or were closer than the thickness at rest are the cloth's own
   neighbourhood and are skipped. The surviving pairs name the candidate contacts: each
   particle against the triangles around its partner, and where one of them is on the cloth's
   border, each edge against the edges there.
2. Crossings (the per-step displacement limit): a particle whose path went through a candidate
   triangle during the substep (signed distance changes sign, inside the triangle at that
   moment, linear motion) goes back to the side it came from; so do two edges whose common
   normal flipped. However far the solver moved the cloth, a contact seen by the broad phase
   cannot jump through (relative motion up to ~4 r per substep). A plain clamp of every step to
   a fraction of the thickness would instead cap the cloth's speed (~0.1 m/s at 24 fps).
3. Proximity: particle-triangle, particle-particle and edge-edge at least `thickness` apart.
   Position projection, mass weighted (pinned particles do not move, a particle a collider holds
   is not pushed back into it), Jacobi-averaged over a few passes, Coulomb friction on the
   relative tangential motion.

The cloth cannot fold tighter than the thickness, so a thickness about the edge length (and a
few substeps for fast folds) keeps edges out of triangles (tests/core/test_self_collision.py).
"""

import numpy as np

from . import geometry

# Projection passes per substep; the pair list is built once per substep.
PASSES = 3
# Bary slack: a particle exactly over a shared edge belongs to both triangles.
_SLACK = 1e-6
# Triangles are gathered around this many nearest partners of each particle.
_PARTNERS = 6
# Thickness / median edge length above which interior edges need no edge-edge test.
_BORDER_ONLY = 0.75
# Edges cross only if the sine of their angle is above this (else they are nearly parallel).
_SKEW = 0.2


def _ragged(starts, counts):
    """Concatenated ranges [starts[k], starts[k] + counts[k]) as one int64 array, no loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.cumsum(counts) + counts, counts)
    return offsets + np.arange(total)


class SelfCollision:
    """Self-collision of one ClothModel. thickness: m (Settings.collision_distance); friction: Coulomb."""

    def __init__(self, model, thickness: float, friction: float, passes: int = PASSES):
        if not thickness >= 0.0:
            raise ValueError(f"self-collision thickness must be >= 0, got {thickness!r}")
        self.model = model
        self.thickness = float(thickness)
        self.friction = float(friction)
        self.passes = int(passes)
        n = model.n_particles
        i, j = model.spring_indices.T
        self._spring_keys = np.unique(np.minimum(i, j) * n + np.maximum(i, j))
        self._rest = model.rest_positions
        tris = model.triangles
        self._triangles = tris
        # Vertex -> incident triangles, CSR (sorted corners, their triangle numbers).
        order = np.argsort(tris.ravel(), kind="stable")
        self._vt_tri = order // 3
        self._vt_start = np.searchsorted(tris.ravel()[order], np.arange(n))
        self._vt_count = np.bincount(tris.ravel(), minlength=n)
        structural = model.spring_kind == 0
        edges = model.spring_indices[structural] if np.any(structural) else model.spring_indices
        self._edges = edges
        self._rest_longest = float(np.linalg.norm(self._rest[edges[:, 0]] - self._rest[edges[:, 1]],
                                                  axis=1).max()) if len(edges) else 0.0
        # With a thickness near the edge length, edge-edge contacts are only tested where one
        # edge is on the cloth's border (in one triangle): inside the cloth the particle-triangle
        # contacts keep edges apart, at a border an edge can slide over another's edge with no
        # particle near a triangle. A thinner cloth tests all edges.
        tri_edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
        tri_keys, tri_count = np.unique(np.minimum(tri_edges[:, 0], tri_edges[:, 1]) * n
                                        + np.maximum(tri_edges[:, 0], tri_edges[:, 1]), return_counts=True)
        edge_keys = np.minimum(edges[:, 0], edges[:, 1]) * n + np.maximum(edges[:, 0], edges[:, 1])
        at = np.minimum(np.searchsorted(tri_keys, edge_keys), max(len(tri_keys) - 1, 0))
        self._border_edge = (tri_keys[at] == edge_keys) & (tri_count[at] == 1) if len(tri_keys) else \
            np.ones(len(edges), dtype=bool)
        rest_length = np.linalg.norm(self._rest[edges[:, 0]] - self._rest[edges[:, 1]], axis=1)
        if len(edges) and self.thickness < _BORDER_ONLY * float(np.median(rest_length)):
            self._border_edge[:] = True  # thinner than the mesh: interior edges can cross too
        self._border_vertex = np.zeros(n, dtype=bool)
        self._border_vertex[edges[self._border_edge].ravel()] = True
        # Vertex -> incident mesh edges, CSR, for edge-edge contacts.
        order = np.argsort(edges.ravel(), kind="stable")
        self._ve_edge = order // 2
        self._ve_start = np.searchsorted(edges.ravel()[order], np.arange(n))
        self._ve_count = np.bincount(edges.ravel(), minlength=n)
        self._precompute_rest_neighbourhood()

    def _precompute_rest_neighbourhood(self):
        """What the rest shape rules out, as sorted keys, found once instead of every substep:
        particle pairs sharing a spring or closer than the thickness, particles within the
        thickness of a triangle, edge pairs sharing a particle or within the thickness."""
        from scipy.spatial import cKDTree

        n, d, rest, tris = self.model.n_particles, self.thickness, self._rest, self._triangles
        tree = cKDTree(rest)
        near = tree.query_pairs(d * (1.0 + 1e-9), output_type="ndarray").astype(np.int64)
        apart = rest[near[:, 0]] - rest[near[:, 1]]
        near = near[np.einsum("ij,ij->i", apart, apart) <= d * d]  # the test _candidates skipped
        self._excluded_keys = np.union1d(self._spring_keys, near[:, 0] * n + near[:, 1])
        # Particle-triangle and edge-edge pairs within the thickness at rest: found around
        # bounding spheres (a point within d of a triangle is within d + radius of its centre),
        # so that few pairs need an exact distance.
        slack = 1e-9 * (d + 1.0)
        self._touching_keys = np.zeros(0, dtype=np.int64)
        centre, radius, middle, half = self._spheres(rest)
        if len(tris):
            found = cKDTree(centre).sparse_distance_matrix(tree, d + float(radius.max()) + slack,
                                                          output_type="ndarray")
            tri, who = found["i"].astype(np.int64), found["j"].astype(np.int64)
            keep = (found["v"] <= d + radius[tri] + slack) & np.all(tris[tri] != who[:, None], axis=1)
            who, tri = who[keep], tri[keep]
            apart = self._rest_apart(who, tri)
            self._touching_keys = np.sort(who[~apart] * len(tris) + tri[~apart])
        m = len(self._edges)
        self._touching_edge_keys = np.zeros(0, dtype=np.int64)
        if m:
            found = cKDTree(middle).query_pairs(d + 2.0 * float(half.max()) + slack,
                                                output_type="ndarray").astype(np.int64)
            e, f = found.min(axis=1), found.max(axis=1)
            close = np.linalg.norm(middle[e] - middle[f], axis=1) <= d + half[e] + half[f] + slack
            keys = e[close] * m + f[close]
            keys = keys[~self._rest_edges_apart(keys)]
            # An edge against itself never counts either.
            self._touching_edge_keys = np.union1d(keys, np.arange(m) * (m + 1))

    def _around(self, who, partner):
        """Particle-triangle candidates: each `who` against the triangles around its `partner`,
        sorted and without repeats, none of them the particle's own."""
        counts = self._vt_count[partner]
        tri = self._vt_tri[_ragged(self._vt_start[partner], counts)]
        who = np.repeat(who, counts)
        key = np.unique(who * len(self._triangles) + tri)
        who, tri = key // len(self._triangles), key % len(self._triangles)
        keep = np.all(self._triangles[tri] != who[:, None], axis=1)
        return who[keep], tri[keep]

    def _rest_apart(self, who, tri):
        """(k,) bool: the particle is more than the thickness from the triangle at rest."""
        rest, corners = self._rest, self._triangles[tri]
        q, _, _ = geometry.closest_points(rest[who], rest[corners[:, 0]], rest[corners[:, 1]],
                                         rest[corners[:, 2]])
        return np.linalg.norm(rest[who] - q, axis=1) > self.thickness

    def _rest_edges_apart(self, keys):
        """(k,) bool: the edge pairs (keys e1 * edges + e2) share no particle and are more than
        the thickness apart at rest."""
        m, rest = len(self._edges), self._rest
        a, b = self._edges[keys // m], self._edges[keys % m]
        apart = np.all(a[:, :1] != b, axis=1) & np.all(a[:, 1:] != b, axis=1)  # disjoint first
        a, b = a[apart], b[apart]
        s, t = geometry.segment_closest(rest[a[:, 0]], rest[a[:, 1]], rest[b[:, 0]], rest[b[:, 1]])
        gap = np.linalg.norm(rest[a[:, 0]] + s[:, None] * (rest[a[:, 1]] - rest[a[:, 0]])
                             - rest[b[:, 0]] - t[:, None] * (rest[b[:, 1]] - rest[b[:, 0]]), axis=1)
        apart[apart] = gap > self.thickness
        return apart

    def _candidates(self, x, x0):
        """(particle pairs (p, 2), each particle's nearest partners (q, 2), particle-triangle
        pairs (particle (k,), triangle (k,))).

        Pairs within reach at the start, in the middle or at the end of the substep: a particle
        that passes through the cloth moving less than about 4 x reach relative to it is seen.
        """
        from scipy.spatial import cKDTree  # bundled with the extension; imported lazily

        n, d = self.model.n_particles, self.thickness
        # One overstretched edge must not widen the search for the whole cloth: edges count up
        # to 1.5 x the longest rest edge (a particle near a triangle stretched more may be missed).
        longest = min(float(np.linalg.norm(x[self._edges[:, 0]] - x[self._edges[:, 1]], axis=1).max()),
                      1.5 * self._rest_longest) if len(self._edges) else 0.0
        reach = d + longest / np.sqrt(3.0)
        keys = []
        for points in (x, x0, 0.5 * (x + x0)):  # the end, the start and the middle of the substep
            # Three small queries, not one over start and end together: in a fast but rigid
            # motion (a falling sheet) start-to-end pairs would be many and all false.
            tree = cKDTree(points, balanced_tree=False)  # builds faster, queries as fast here
            found = tree.query_pairs(reach, output_type="ndarray").astype(np.int64)
            keys.append(found[:, 0] * n + found[:, 1])  # query_pairs: first < second
        # Pairs that share a spring or were closer than the thickness at rest: looked up once
        # for the three queries together, in the set built at construction.
        keys = np.unique(np.concatenate(keys))
        keys = keys[~_member(keys, self._excluded_keys)]
        pairs = np.stack([keys // n, keys % n], axis=1)
        empty = np.zeros(0, dtype=np.int64)
        if len(pairs) == 0 or len(self._triangles) == 0:
            return pairs, pairs, empty, empty
        # Each particle against the triangles around its nearest partners (both ways), without
        # repeats. In a pile a particle has dozens of partners; the triangles around the nearest
        # few (at the end of the substep) hold its closest points on the layers next to it.
        who = np.concatenate([pairs[:, 0], pairs[:, 1]])
        partner = np.concatenate([pairs[:, 1], pairs[:, 0]])
        gap = np.einsum("ij,ij->i", x[who] - x[partner], x[who] - x[partner])
        order = np.lexsort((gap, who))
        who, partner = who[order], partner[order]
        rank = np.arange(len(who)) - np.searchsorted(who, who)
        who, partner = who[rank < _PARTNERS], partner[rank < _PARTNERS]
        nearest = np.stack([who, partner], axis=1)  # also where edge-edge candidates come from
        who, tri = self._around(who, partner)
        # Skip particles that sit on or next to the triangle in the rest shape (set built once).
        keep = ~_member(who * len(self._triangles) + tri, self._touching_keys)
        return pairs, nearest, who[keep], tri[keep]

    def _edge_pairs(self, pairs):
        """(e, 2) pairs of mesh edges around close particle pairs, sharing no particle."""
        pairs = pairs[self._border_vertex[pairs[:, 0]] | self._border_vertex[pairs[:, 1]]]
        if len(pairs) == 0 or len(self._edges) == 0:
            return np.zeros((0, 2), dtype=np.int64)
        keys = self._edge_products(pairs)
        m = len(self._edges)
        border = self._border_edge[keys // m] | self._border_edge[keys % m]
        # Edges sharing a particle or within the thickness at rest: the set built at construction.
        keep = border & ~_member(keys, self._touching_edge_keys)
        return np.stack([keys // m, keys % m], axis=1)[keep]

    def _edge_products(self, pairs):
        """Sorted unique keys e1 * edges + e2 (e1 <= e2) of every edge at i with every edge at j,
        over the particle pairs (i, j)."""
        if len(pairs) == 0 or len(self._edges) == 0:
            return np.zeros(0, dtype=np.int64)
        i, j = pairs[:, 0], pairs[:, 1]
        ci, cj = self._ve_count[i], self._ve_count[j]
        # Every edge at i with every edge at j: repeat i's edges cj times, tile j's edges ci times.
        ei = self._ve_edge[_ragged(self._ve_start[i], ci)]
        ej = self._ve_edge[_ragged(self._ve_start[j], cj)]
        reps = np.repeat(cj, ci)
        first = np.repeat(ei, reps)
        block = np.repeat(np.cumsum(ci * cj) - ci * cj, ci * cj)
        k = np.arange(len(first)) - block  # position inside the pair's ci x cj block
        owner = np.repeat(np.arange(len(pairs)), ci * cj)
        second = ej[(np.cumsum(cj) - cj)[owner] + k % np.repeat(cj, ci * cj)]
        m = len(self._edges)
        return np.unique(np.minimum(first, second) * m + np.maximum(first, second))

    def project(self, x, x0, pushed=None) -> None:
        """Separate the cloth from itself, in place on x (n, 3); x0 (n, 3): start of the substep.

        pushed: optional (n, 3), how far the colliders just moved each particle (zero for most).
        A particle is not pushed back against that (into the floor that holds it); the other
        side of the contact takes the whole correction instead.
        """
        if self.thickness <= 0.0:
            return
        pairs, nearest, who, tri = self._candidates(x, x0)
        if len(pairs) == 0:
            return
        w = self.model.inv_mass
        held = np.zeros_like(x) if pushed is None else pushed
        side, h1 = self._sides(x, x0, who, tri)
        # The passes move particles by about the thickness: contacts whose bounding spheres are
        # farther apart than twice that, at the start and at the end, and that did not cross,
        # cannot act in this substep and are dropped before the (costly) narrow phase.
        gap = 2.0 * self.thickness
        near = side != 0.0
        edge_pairs = self._edge_pairs(nearest)
        near_edges = np.zeros(len(edge_pairs), dtype=bool)
        for points in (x, x0):
            centre, radius, middle, half = self._spheres(points)
            near |= np.linalg.norm(points[who] - centre[tri], axis=1) <= radius[tri] + gap
            e, f = edge_pairs[:, 0], edge_pairs[:, 1]
            near_edges |= np.linalg.norm(middle[e] - middle[f], axis=1) <= half[e] + half[f] + gap
        who, tri, side, h1 = who[near], tri[near], side[near], h1[near]
        ia, ib = edge_pairs[near_edges, 0], edge_pairs[near_edges, 1]  # edge numbers
        ea, eb = self._edges[ia], self._edges[ib]
        lengths0 = self._edge_lengths(x0)
        start = self._edge_start(x0, ea, eb, lengths0[ia] * lengths0[ib])
        # Verlet-style skipping (exact): a contact's distance can shrink by no more than its
        # particles moved (point-triangle and segment-segment distances are 1-Lipschitz in each
        # corner), so a contact `clear` farther than the thickness at reference positions cannot
        # act before its particles moved that much in total. Most candidates never act; only
        # the ones that might are evaluated. clear: a lower bound of (distance - thickness).
        # Triangle contacts: the distance to the plane, a lower bound of the distance to the
        # triangle, now (the first pass's reference); crossed ones always act.
        tol = 1e-3 * self.thickness + 1e-4 * self._rest_longest  # rounding and bary slack
        pt_clear = np.where(side != 0.0, -np.inf, np.abs(h1) - self.thickness)
        # Edge contacts: the distance at the start of the substep, the reference x0; those that
        # may cross (closest points inside both edges, not parallel) always act.
        ee_clear = np.where(start[2] & start[3], -np.inf, start[4] - self.thickness)
        ee_moved = np.linalg.norm(x - x0, axis=1)
        reference = x.copy()
        for number in range(self.passes):
            moved = np.zeros(len(x)) if number == 0 else np.linalg.norm(x - reference, axis=1)
            moves = []
            # Largest move per triangle and per edge first: fewer values to gather.
            tri_moved = moved[self._triangles].max(axis=1)
            may = pt_clear - moved[who] - tri_moved[tri] <= tol
            evaluated, dist = self._particle_triangle(x, x0, who[may], tri[may], side[may], w, held, moves,
                                                      tol)
            if number == 0:  # the first pass's exact distances, where computed, tighten the bound
                pt_clear[np.flatnonzero(may)[evaluated]] = np.where(side[may][evaluated] != 0.0, -np.inf,
                                                                    dist - self.thickness)
            self._particle_particle(x, x0, pairs, w, held, moves)
            if number > 0:
                ee_moved = moved
            edge_moved = ee_moved[self._edges].max(axis=1)
            may = ee_clear - edge_moved[ia] - edge_moved[ib] <= tol
            lengths = self._edge_lengths(x)
            dist = self._edge_edge(x, tuple(v[may] for v in start), ea[may], eb[may],
                                   lengths[ia[may]] * lengths[ib[may]], w, held, moves)
            if number == 0:  # bounds moved to the first pass's positions, exact where computed
                ee_clear -= edge_moved[ia] + edge_moved[ib]
                ee_clear[may] = np.where(start[2][may] & start[3][may], -np.inf, dist - self.thickness)
            if not moves:
                return
            index = np.concatenate([m[0] for m in moves])
            vectors = np.concatenate([m[1] for m in moves])
            # Jacobi: each particle takes the mean of its contacts' corrections.
            real = np.einsum("ij,ij->i", vectors, vectors) > 0.0
            index, vectors = index[real], vectors[real]
            count = np.bincount(index, minlength=len(x))
            for axis in range(3):
                x[:, axis] += np.bincount(index, vectors[:, axis], len(x)) / np.maximum(count, 1)

    def _edge_lengths(self, points):
        """(e,) length of every mesh edge, m."""
        return np.linalg.norm(points[self._edges[:, 1]] - points[self._edges[:, 0]], axis=1)

    def _spheres(self, points):
        """Bounding spheres: triangle centroids (t, 3) and radii (t,), edge midpoints (e, 3) and
        half lengths (e,), m."""
        corners = points[self._triangles]
        centre = corners.mean(axis=1)
        spread = corners - centre[:, None]
        radius = np.sqrt(np.einsum("ijk,ijk->ij", spread, spread).max(axis=1))
        a, b = points[self._edges[:, 0]], points[self._edges[:, 1]]
        return centre, radius, 0.5 * (a + b), 0.5 * np.linalg.norm(a - b, axis=1)

    def _sides(self, x, x0, who, tri):
        """((k,) +-1 or 0: the side of each triangle's plane its particle must go back to,
        (k,) signed distance to the plane now).

        +-1 where its path crossed the triangle during the substep (the signed distance changes
        sign and the particle is inside the triangle, both interpolated linearly at that moment):
        the side it came from. 0 elsewhere: the side it is on, read afresh in every pass (other
        contacts move it). Going round the triangle's edge is no crossing.
        """
        corners = self._triangles[tri]
        # Per triangle, then per contact: fewer cross products (a triangle has several contacts).
        n0 = geometry.triangle_normals(x0, self._triangles)[tri]
        n1 = geometry.triangle_normals(x, self._triangles)[tri]
        h0 = np.einsum("ij,ij->i", x0[who] - x0[corners[:, 0]], n0)
        h1 = np.einsum("ij,ij->i", x[who] - x[corners[:, 0]], n1)
        side = np.zeros(len(who))  # 0: wherever it is when the contact is resolved
        flipped = (h0 > 0.0) != (h1 > 0.0)
        flipped &= h0 != 0.0
        if np.any(flipped):
            k = np.flatnonzero(flipped)
            t = (h0[k] / (h0[k] - h1[k]))[:, None]
            at = [x0[corners[k, c]] + t * (x[corners[k, c]] - x0[corners[k, c]]) for c in range(3)]
            point = x0[who[k]] + t * (x[who[k]] - x0[who[k]])
            through = np.all(geometry.barycentric(point, *at) >= -_SLACK, axis=1)
            side[k[through]] = np.sign(h0[k[through]])
        return side, h1

    def _particle_triangle(self, x, x0, who, tri, side, w, held, moves, tol):
        """Push particles out of triangles. Returns (which contacts got an exact distance (k,) bool,
        their distances to the triangle); the others are farther than the thickness from the plane."""
        normals = geometry.triangle_normals(x, self._triangles)  # per triangle, not per contact
        corners = self._triangles[tri]
        h = np.einsum("ij,ij->i", x[who] - x[corners[:, 0]], normals[tri])
        # The distance to the triangle is at least that to its plane: far from the plane and not
        # crossed, the contact cannot act (no closest point needed).
        close = (side != 0.0) | (np.abs(h) < self.thickness + tol)
        if not np.any(close):
            return close, np.zeros(0)
        who, corners, side, h, normal = who[close], corners[close], side[close], h[close], normals[tri[close]]
        a, b, c = (x[corners[:, k]] for k in range(3))
        p = x[who]
        bary = geometry.barycentric(p, a, b, c)
        over = np.all(bary >= -_SLACK, axis=1)
        s = np.where(side != 0.0, side, np.where(h < 0.0, -1.0, 1.0))
        # Over the triangle: the signed distance on the starting side (crossing over counts as
        # negative), weights of the projection. Beside it: the plain distance to the closest
        # point on an edge or corner, computed only there. (dist over it: that to the plane.)
        offset = np.zeros_like(p)
        dist = np.abs(h)
        aside = np.flatnonzero(~over)
        if len(aside):
            q, bary[aside], _ = geometry.closest_points(p[aside], a[aside], b[aside], c[aside])
            offset[aside] = p[aside] - q
            dist[aside] = np.linalg.norm(offset[aside], axis=1)
        beside = ~over & (dist > 1e-12)
        direction = s[:, None] * normal
        direction[beside] = offset[beside] / dist[beside, None]
        gap = np.where(over, s * h, dist) - self.thickness  # < 0: too close, or crossed over
        active = (gap < 0.0) & (over | beside)
        if not np.any(active):
            return close, dist
        who, corners, bary, direction, gap = (v[active] for v in (who, corners, bary, direction, gap))
        # Only the particle moves, by its mass-weighted share: the triangle's own corners are
        # moved by the mirrored contacts (each of them against the other layer's triangles).
        # Moving corners here too would push a light corner next to held ones by gap / weight.
        wi = _free(w[who], held[who], direction)
        wc = np.stack([_free(w[corners[:, k]], held[corners[:, k]], -direction) for k in range(3)], axis=1)
        total = wi + np.einsum("ij,ij->i", bary**2, wc)
        share = np.where(total > 0.0, wi / np.where(total > 0.0, total, 1.0), 0.0)
        # Friction: cut the relative tangential motion by friction * depth, shared the same way.
        rel = (x[who] - x0[who]) - np.einsum("ij,ijk->ik", bary, x[corners] - x0[corners])
        tangent = rel - np.einsum("ij,ij->i", rel, direction)[:, None] * direction
        slide = np.linalg.norm(tangent, axis=1)
        cut = np.minimum(1.0, self.friction * (-gap) / np.maximum(slide, 1e-300))
        move = share[:, None] * (-gap[:, None] * direction - cut[:, None] * tangent)
        moves.append((who, move))
        return close, dist

    def _particle_particle(self, x, x0, pairs, w, held, moves):
        if len(pairs) == 0:
            return
        i, j = pairs[:, 0], pairs[:, 1]
        offset = x[i] - x[j]
        dist = np.linalg.norm(offset, axis=1)
        active = (dist < self.thickness) & (dist > 1e-12)
        if not np.any(active):
            return
        i, j, offset, dist = i[active], j[active], offset[active], dist[active]
        direction = offset / dist[:, None]
        wi, wj = _free(w[i], held[i], direction), _free(w[j], held[j], -direction)
        total = wi + wj
        ok = total > 0.0
        inverse = np.where(ok, 1.0 / np.where(ok, total, 1.0), 0.0)
        push = ((self.thickness - dist) * inverse)[:, None] * direction
        rel = (x[i] - x0[i]) - (x[j] - x0[j])
        tangent = rel - np.einsum("ij,ij->i", rel, direction)[:, None] * direction
        slide = np.linalg.norm(tangent, axis=1)
        cut = np.minimum(1.0, self.friction * (self.thickness - dist) / np.maximum(slide, 1e-300))
        share = (cut * inverse)[:, None] * tangent
        moves.append((i, wi[:, None] * (push - share)))
        moves.append((j, wj[:, None] * (share - push)))


    @staticmethod
    def _edge_start(x0, ea, eb, lengths0):
        """What the edge pairs looked like at the start of the substep (the same in every pass):
        (common normal (k, 3), offset along it (k,), closest points inside both edges (k,),
        the edges clearly not parallel (k,), distance (k,))."""
        a0, a1, b0, b1 = x0[ea[:, 0]], x0[ea[:, 1]], x0[eb[:, 0]], x0[eb[:, 1]]
        cross0 = np.cross(a1 - a0, b1 - b0)
        s0, t0 = geometry.segment_closest(a0, a1, b0, b1)
        offset0 = a0 + s0[:, None] * (a1 - a0) - b0 - t0[:, None] * (b1 - b0)
        inside = (s0 > 0.0) & (s0 < 1.0) & (t0 > 0.0) & (t0 < 1.0)
        skew0 = np.linalg.norm(cross0, axis=1) > _SKEW * lengths0
        return (cross0, np.einsum("ij,ij->i", offset0, cross0), inside, skew0,
                np.linalg.norm(offset0, axis=1))

    def _edge_edge(self, x, start, ea, eb, lengths, w, held, moves):
        """Mesh edges at least `thickness` apart, and back to their starting side if they crossed.
        Returns their distances (k,)."""
        if len(ea) == 0:
            return np.zeros(0)
        cross0, before, inside0, skew0, _ = start
        p1, q1, p2, q2 = x[ea[:, 0]], x[ea[:, 1]], x[eb[:, 0]], x[eb[:, 1]]
        s, t = geometry.segment_closest(p1, q1, p2, q2)
        offset = p1 + s[:, None] * (q1 - p1) - p2 - t[:, None] * (q2 - p2)
        dist = np.linalg.norm(offset, axis=1)
        # Which way round the edges are, along the common normal d1 x d2 as it was at the start.
        cross1 = np.cross(q1 - p1, q2 - p2)
        cross1 *= np.where(np.einsum("ij,ij->i", cross0, cross1) < 0.0, -1.0, 1.0)[:, None]
        now = np.einsum("ij,ij->i", offset, cross1)
        interior = inside0 & (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)
        length = np.linalg.norm(cross1, axis=1)
        # Nearly parallel edges have no common normal to cross along (the particle-triangle
        # contacts hold them); the sine of their angle must be clear at both ends of the step.
        skew = (length > _SKEW * lengths) & skew0
        crossed = interior & skew & (before * now < 0.0)
        direction = np.where(dist[:, None] > 1e-12, offset / np.maximum(dist, 1e-300)[:, None],
                             cross1 / np.maximum(length, 1e-300)[:, None])
        direction[crossed] = (np.sign(before[crossed])[:, None] * cross1[crossed]
                              / np.maximum(length[crossed], 1e-300)[:, None])
        gap = np.where(crossed, -dist, dist) - self.thickness
        active = gap < 0.0
        if not np.any(active):
            return dist
        ea, eb, s, t, direction, gap = (v[active] for v in (ea, eb, s, t, direction, gap))
        coeff = np.stack([1.0 - s, s, -(1.0 - t), -t], axis=1)  # how each end moves the gap
        ends = np.concatenate([ea, eb], axis=1)
        sign = np.sign(coeff)
        wk = np.stack([_free(w[ends[:, k]], held[ends[:, k]], sign[:, k, None] * direction)
                       for k in range(4)], axis=1)
        total = np.einsum("ij,ij->i", coeff**2, wk)
        lam = np.where(total > 0.0, -gap / np.where(total > 0.0, total, 1.0), 0.0)
        for k in range(4):  # the four ends of all edge pairs at once
            move = (wk[:, k] * coeff[:, k] * lam)[:, None] * direction
            moves.append((ends[:, k], _clamp(move, -gap)))
        return dist


def _member(keys, table):
    """(k,) bool: which keys are in the sorted int64 array `table`."""
    if len(table) == 0:
        return np.zeros(len(keys), dtype=bool)
    return table[np.minimum(np.searchsorted(table, keys), len(table) - 1)] == keys


def _free(inv_mass, held, direction):
    """Inverse masses, zero where the move along `direction` would undo a collider's push."""
    return np.where(np.einsum("ij,ij->i", held, direction) < 0.0, 0.0, inv_mass)


def _clamp(vectors, limit):
    """(k, 3) vectors shortened to at most limit (k,) long."""
    length = np.linalg.norm(vectors, axis=1)
    return vectors * np.minimum(1.0, limit / np.maximum(length, 1e-300))[:, None]
