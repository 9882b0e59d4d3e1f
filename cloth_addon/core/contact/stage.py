"""The contact stage: colliders, the cloth's own layers and other cloth objects, in one place.

One substep of a Simulation, around the solver:

    begin_substep   colliders are put where they are at the end of this substep (their motion
                    between frames is spread evenly over the substeps)
    in_iterations   inside the solver's iterations: every collider projects the cloth out of its
                    body, so the springs of the next iteration already see the contact (the
                    solver never has to stretch the cloth to get it out of a collider afterwards).
                    The implicit solvers turn each projection into a force on the touching
                    particles alone (mass times the correction, added to the right-hand side of
                    the next global step, accumulated like an Uzawa step but never lowered
                    within a substep). Projecting
                    the iterate alone would leave the global step, through its Laplacian, pulling
                    the contact's neighbours towards the collider: a cloth draped over a table's
                    rim stretched more the more iterations ran. A particle still touching at the
                    end of the substep starts the next one with CONTACT_MEMORY of the part of
                    its force that held it against the cloth or a moving collider.
    finish          after the solver: proximity passes of the colliders and of self-contact,
                    interleaved so that neither undoes the other (a layer on a layer on the
                    floor); Coulomb friction from the normal velocity change each contact
                    caused (Bridson, Fedkiw, Anderson 2002); then the continuous self-contact
                    check that makes the substep free of crossings (self_contact/)

Colliders contact the cloth by features: cloth vertices against the collider's faces, cloth
edges against a sphere (analytic.py, mesh/), and a mesh collider's sharp convex edges and corners
against the cloth's edges and faces (mesh/sharp_features.py). Vertices are projected inside the
solver's iterations too; edges and faces only in finish, after each vertex projection of the
collider there (for solvers with contact_features: not Verlet, which keeps its JavaScript
reference's vertex contact). Those feature contacts carry their own Coulomb friction (on the push
they make, as self-contact's do): a cloth edge hanging on a rim has vertices too far off the
collider for the friction below.

Friction, per contact with unit normal n, collider surface displacement u over the substep,
cloth displacement x1 - x0 and free-flight displacement y - x0 (y: the solver's inertial
prediction, gravity and wind included):
    normal velocity change   dn = max(0, (x1 - y) . n)        (times 1/h)
    tangential slide         s  = ((x1 - x0) - u) - (((x1 - x0) - u) . n) n
    s <- max(0, 1 - mu dn / |s|) s
so a cloth on a still table sticks while mu dn >= |s| (static friction), slides with kinetic
friction otherwise, and a moving collider carries the cloth along.
"""

import numpy as np

from ..geometry import gather, vector_lengths
from ..solvers.base import IterationContact
from .collider import as_collider
from .mesh.collider import MeshCollider
from .self_contact import PASSES, SelfContact

# Friction acts on particles this close to a collider's reach, as a fraction of the median edge
# length: edge contacts lift a cloth's vertices a little off a curved or sharp body (by the sag of
# an edge), and those vertices still touch it. Free flight past a body gets no friction anyway:
# its normal velocity change is zero.
_FRICTION_BAND = 0.1

# A particle that still touches a collider at the end of a substep starts the next substep's
# solver iterations with this fraction of the part of its contact force that held it against
# the cloth's pull or a collider's push (ContactStage._carry: a cloth pulled onto a ball needs
# nearly that force again, and two iterations alone do not build it up). Less than 1 so that a
# force left over from a contact that is ending fades instead of pushing the particle on (all of
# it set a tablecloth rocking); a particle that no longer touches starts from none.
CONTACT_MEMORY = 0.9

# A mesh collider's open boundary counts as a rim (in_iterations) for the particles it holds within
# this many median edge lengths of its reach from it.
RIM_EDGES = 2.0

# Rounds of vertex projections after which two colliders that push a vertex back and forth (the
# wedge between a ball and the floor) are left to the next substep (ContactStage._agree).
AGREE_ROUNDS = 4

# The proximity passes of a substep stop once one has moved no coordinate of any vertex by more than
# this fraction of the self-contact gap.
PASS_TOLERANCE = 1e-3

# How far beyond the first iterate's motion (doubled) a mesh collider's candidates reach, as a
# fraction of the median edge length (ContactStage._prepare). A particle that goes farther is looked
# up afresh: the slack trades those look-ups against pairs remembered for nothing (at 0.5 a resting
# cloth on a finely meshed body kept three times the pairs, for the same result).
_CANDIDATE_SLACK = 0.1


def _two_contacts(x, colliders, movable, margin) -> bool:
    """Move every vertex of x (n, 3, in place) that is inside one of the analytic colliders out of
    its two deepest ones at once (ContactStage._agree); True if any moved."""
    gaps, normals = zip(*(c.gaps(x, margin) for c in colliders), strict=True)
    gaps, normals = np.stack(gaps), np.stack(normals)  # (c, n), (c, n, 3)
    inside = np.flatnonzero((gaps.min(axis=0) < -1e-12) & movable)
    if not len(inside):
        return False
    order = np.argsort(gaps[:, inside], axis=0)[:2]  # the deepest two of each vertex
    rows = np.arange(len(inside))
    g_a, g_b = gaps[order[0], inside], gaps[order[1], inside]
    n_a, n_b = normals[order[0], inside], normals[order[1], inside]
    # alone, the deepest contact moves the vertex by -g_a along n_a; if that leaves it inside the
    # other (n_b . dx < -g_b), both bind: [1 c; c 1] (a, b) = (-g_a, -g_b), c = n_a . n_b
    move = -g_a[:, None] * n_a
    cosine = np.einsum("ij,ij->i", n_a, n_b)
    both = (np.einsum("ij,ij->i", move, n_b) < -g_b) & (1.0 - cosine * cosine > 1e-6)
    if np.any(both):
        c, ga, gb = cosine[both], -g_a[both], -g_b[both]
        det = 1.0 - c * c
        a = (ga - c * gb) / det
        b = (gb - c * ga) / det
        ok = (a >= 0.0) & (b >= 0.0)
        pick = rows[both][ok]
        move[pick] = a[ok, None] * n_a[pick] + b[ok, None] * n_b[pick]
    x[inside] += move
    return True


class ContactStage:
    """Contact of one Simulation. The stage holds no settings of its own: every substep reads the
    Simulation's colliders, settings and self-contact distance afresh."""

    def __init__(self, sim):
        self.sim = sim
        self._poses = {}  # id(collider) -> (collider, pose at the end of the last frame)
        self._self = None
        self._frame = []
        self._push = None  # (n, 3) contact forces carried to the next substep, or None
        self._iterating = None  # this substep's IterationContact, whose push finish carries on
        self._mesh_touched = None  # (n,) bool, what mesh colliders moved in the last substep's iterations

    def forget(self) -> None:
        """Drop what the stage carries from one substep to the next (the cloth was reset or given
        a state, or a new solver)."""
        self._push = None
        self._iterating = None
        self._mesh_touched = None

    # -- colliders over a frame ----------------------------------------------------------------
    def begin_frame(self, substeps: int) -> None:
        """Remember where every collider starts this frame and where the user put it for its end."""
        frame = []
        seen = {}
        for collider in map(as_collider, self.sim.colliders):
            end = collider.pose()
            known = self._poses.get(id(collider))
            start = collider.sweep_start(known[1] if known is not None and known[0] is collider else end)
            if start is not None and end is not None and np.shape(start) != np.shape(end):
                start = end
            frame.append((collider, start, end))
            seen[id(collider)] = (collider, end)
        self._poses = seen
        self._frame = frame
        self._substeps = substeps
        self._sweep = {}

    def begin_substep(self, sub: int) -> None:
        """Put the colliders where they are at the end of substep `sub` (1-based), remembering where
        they were at its start (their sweep over the substep)."""
        for collider, start, end in self._frame:
            if end is None:
                continue
            pose = self._between(start, end, sub)
            self._sweep[id(collider)] = self._between(start, end, sub - 1)
            collider.move_to(pose)
            if sub == self._substeps:
                collider.frame_done()

    def _between(self, start, end, sub):
        if start is end or sub == self._substeps:
            return end
        return start if sub == 0 else start + (end - start) * (sub / self._substeps)

    # -- inside the solver ---------------------------------------------------------------------------
    def in_iterations(self, x0) -> IterationContact | None:
        """The contact for the solver's iterations (solvers/base.py), x0 (n, 3) being the start of
        the substep; None when there are no colliders. Its projection moves an iterate out of every
        collider in place; its push starts as CONTACT_MEMORY times the forces the last substep
        ended with, and the solver leaves its final ones there for finish to carry on."""
        if not self.sim.colliders:
            self._iterating = self._mesh_touched = None
            return None
        movable = ~self.sim.model.pinned
        margin = self.sim.settings.collision_distance
        colliders = [as_collider(body) for body in self.sim.colliders]
        prepared = []
        # Which particles mesh colliders with a rim hold, for the solver's vertex step
        # (fast_mass_spring.py leaves them and their neighbours to the iterations). Last substep's
        # count too: a particle the projection has just let go of is still on the collider's edge.
        # A mesh without a rim near the cloth (a floor plane, a smooth body) is left to the step
        # as the analytic colliders are.
        touched = now = None
        rim = margin + RIM_EDGES * self.sim.model.median_edge_length
        if any(isinstance(c, MeshCollider) for c in colliders):
            recent = self._mesh_touched
            now = np.zeros(len(x0), dtype=bool)
            touched = now.copy() if recent is None or len(recent) != len(now) else recent.copy()
        self._mesh_touched = now

        def project(x):
            if not prepared:
                self._prepare(x0, x, movable, margin)
                prepared.append(True)
            # vertices only: the solver's next iterate moves them again; features are resolved
            # once the solver is done (finish)
            for collider in colliders:
                if touched is None or not isinstance(collider, MeshCollider):
                    self._project(collider, x, x0, movable, margin, None)
                    continue
                before = x.copy()
                self._project(collider, x, x0, movable, margin, None)
                moved = np.any(x != before, axis=1)
                if collider.rim_near(x[moved], collider.thickness + rim):
                    now[moved] = True
                    touched[moved] = True

        carried = None if self._push is None else CONTACT_MEMORY * self._push
        self._iterating = IterationContact(project, carried, touched)
        return self._iterating

    def _prepare(self, x0, x, movable, margin) -> None:
        """Once a substep, on the solver's first iterate x: every collider's broad phase, around
        each particle's start x0, far enough for the rest of the substep."""
        # The first iterate's motion, doubled, plus a slack for what the later iterations add; a
        # particle that still goes farther is looked up afresh by the collider.
        motion = 2.0 * vector_lengths(x - x0) + _CANDIDATE_SLACK * self.sim.model.median_edge_length
        for collider in map(as_collider, self.sim.colliders):
            collider.prepare(x0, motion, margin, movable, self._sweep.get(id(collider)))

    # -- after the solver --------------------------------------------------------------------------------
    def finish(self, x0, x1, y) -> None:
        """Resolve this substep's contacts in place on x1 (n, 3); x0 the start, y the prediction."""
        sim = self.sim
        settings = sim.settings
        movable = ~sim.model.pinned
        margin = settings.collision_distance
        features = sim.model.contact_features if sim.solver.contact_features else None
        contact = self._self_contact() if settings.self_collision else None
        colliders = [as_collider(body) for body in sim.colliders]
        for collider in colliders:
            self._project(collider, x1, x0, movable, margin, features)
        if contact is not None:
            # checked where the colliders put the cloth: the passes below move it little
            # (a pass may still move a vertex out of the candidates' reach: proximity then misses
            # a pair for this substep, which only the guarantee below must not); a move so far
            # beyond free flight that its candidates would be too many is cut here, where the
            # passes and the colliders still follow (a cut can take a vertex back into a collider
            # that had pushed it out: every pass projects the colliders again)
            contact.prepare(x0, x1, free=y)
            # the passes stop once one moves no vertex by more than PASS_TOLERANCE of the gap: the
            # layers have found their places, and another pass would measure the same pairs again
            tolerance = PASS_TOLERANCE * contact.distance
            for _ in range(PASSES):
                before = x1.copy()
                contact.separate(x1, x0)
                for collider in colliders:
                    self._project(collider, x1, x0, movable, margin, features)
                if not np.abs(x1 - before).max(initial=0.0) > tolerance:
                    break
        held, normal, surface = self._friction(x0, x1, y, movable, margin)
        self._agree(x1, x0, movable, margin)
        self._carry(x0, y, held, normal, surface)
        if contact is not None:
            contact.prepare(x0, x1)
            # last, so that nothing undoes it; vertices a collider holds anchor their impact zones
            # like pins, so that a zone is not pushed into the floor under a pile
            contact.untangle(x0, x1, held, normal)

    def _agree(self, x1, x0, movable, margin) -> None:
        """After friction, make every collider's contact hold at once, in place on x1.

        Where two bodies meet (a ball on the floor) one's friction, holding a vertex where it was
        along its surface, or one's projection can leave it inside the other, in the wedge between
        them; projecting in turn converges there at a rate near the cosine squared of the angle
        between the two surfaces, so slowly that the cloth pulled in creeps under the ball. For the
        analytic colliders (gaps()) the two deepest contacts of a vertex are solved together: the
        shortest move that takes it out of both tangent half-spaces, dx = a n_A + b n_B with
        a, b >= 0 (two constraints, their 2 x 2 Gram system). Mesh colliders project in turn.
        At most AGREE_ROUNDS rounds (the ball's curvature leaves a remainder to a second).
        """
        colliders = [as_collider(body) for body in self.sim.colliders]
        if len(colliders) < 2:
            return
        analytic = [c for c in colliders if hasattr(c, "gaps")]
        meshes = [c for c in colliders if not hasattr(c, "gaps")]
        for _ in range(AGREE_ROUNDS):
            moved = False
            for collider in meshes:
                before = x1.copy()
                self._project(collider, x1, x0, movable, margin, None)
                moved |= not np.array_equal(before, x1)
            if len(analytic) >= 2:
                moved |= _two_contacts(x1, analytic, movable, margin)
            elif analytic:
                before = x1.copy()
                self._project(analytic[0], x1, x0, movable, margin, None)
                moved |= not np.array_equal(before, x1)
            if not moved:
                return

    def _carry(self, x0, y, held, normal, surface) -> None:
        """Keep, for the next substep, the part of each touching particle's contact force that
        held it against something other than its own momentum (cloth pulled onto a ball, a
        curtain pushed by one): the normal force less what stopping the particle's predicted
        motion y - x0 into the collider took. That part the next substep needs again; the rest
        it rebuilds from its own prediction in its first iteration, and carrying it too would
        throw a cloth that has just landed back into the air."""
        push = None if self._iterating is None else self._iterating.push
        # read once: a substep whose solver iterates without contact (Verlet) must not find it again
        self._iterating = None
        self._push = None
        if push is None or not np.any(held):
            return
        rows = np.flatnonzero(held)
        n = gather(normal, rows)
        force = np.einsum("ij,ij->i", gather(push, rows), n)
        into = -np.einsum("ij,ij->i", (gather(y, rows) - gather(x0, rows)) - gather(surface, rows), n)
        held_force = np.maximum(force - self.sim.model.mass[rows] * np.maximum(into, 0.0), 0.0)
        carried = np.zeros_like(push)
        carried[rows] = held_force[:, None] * n
        self._push = carried

    def _project(self, collider, x, x0, movable, margin, features):
        """Keep x out of one collider (no friction on vertex contacts: finish applies it once per
        substep; feature contacts carry their own)."""
        mu = self.sim.settings.friction if collider.friction is None else collider.friction
        collider.resolve(x, x0, movable, margin, self._sweep.get(id(collider)), features,
                         self.sim.model.inv_mass, mu)

    def _self_contact(self) -> SelfContact:
        key = (self.sim.self_collision_distance, self.sim.settings.friction)
        if self._self is None or self._self[0] != key:
            own = self.sim.part_self_collision
            parts = None
            if len(own) > 1 and not all(own):
                # several cloth objects: each object's own layers collide only if its settings say
                sizes = [part.stop - part.start for part in self.sim.parts]
                parts = (np.repeat(np.arange(len(sizes)), sizes), np.array(own))
            self._self = (key, SelfContact(self.sim.model, *key, parts=parts))
        return self._self[1]

    @property
    def self_contact(self) -> SelfContact | None:
        """The SelfContact of the last substep that had self-collision on (its `stats`), or None."""
        return None if self._self is None else self._self[1]

    def _friction(self, x0, x1, y, movable, margin):
        """Coulomb friction at every collider contact (see the module docstring). Returns (held
        (n,) bool: the particles touching a collider, normal (n, 3): their contact normals, surface
        (n, 3): the collider surface's displacement over the substep there; zero elsewhere)."""
        default = self.sim.settings.friction
        held = np.zeros(len(x1), dtype=bool)
        normals, surfaces = np.zeros_like(x1), np.zeros_like(x1)
        for collider, _, _ in self._frame:
            mu = default if collider.friction is None else collider.friction
            band = margin + _FRICTION_BAND * self.sim.model.median_edge_length + 1e-9
            touching = collider.contact_normals(x1, band, movable, self._sweep.get(id(collider)))
            if touching is None:
                continue
            rows, normal, surface = touching
            held[rows] = True
            normals[rows] = normal
            surface = 0.0 if surface is None else surface  # the collider's motion over the substep
            surfaces[rows] = surface
            if len(rows) == 0 or not mu or mu <= 0.0:
                continue
            end = gather(x1, rows)
            moved = (end - gather(x0, rows)) - surface
            slide = moved - np.einsum("ij,ij->i", moved, normal)[:, None] * normal
            push = np.maximum(0.0, np.einsum("ij,ij->i", end - gather(y, rows), normal))
            length = vector_lengths(slide)
            cut = np.minimum(1.0, mu * push / np.maximum(length, 1e-300))
            x1[rows] -= cut[:, None] * slide
        return held, normals, surfaces
