"""Simulation: the public entry point that ties model, state, solver, forces and colliders.

One frame = `settings.substeps` substeps of h = dt / substeps. A substep:
    colliders move to where they are at the end of the substep         (contact/)
    accel    = gravity + drag/lift in the wind (+ gas pressure)           (forces.py, wind.py, pressure.py)
    x_new    = solver.advance(x, x_prev, accel, pins, contact)            (solvers/; the colliders
               project every iterate, so the springs see the contact within the step)
    x_new    = contact stage: colliders and self-contact resolved together, friction, and the
               continuous check that keeps the cloth from passing through itself (contact/)
    tearing  = springs longer than rest * tear_factor break for good
"""

import warnings
from dataclasses import dataclass, fields, replace

import numpy as np

from . import forces
from .contact import ContactStage
from .model import build_model, concatenate_models
from .pressure import Pressure
from .settings import AUTO_SELF_DISTANCE, Settings
from .state import ClothState
from .topology import SEWING, STRUCTURAL

# What counts as blown up: positions beyond this distance from the origin (m; a cloth in free
# fall for an hour is at 6e7 m), or an untorn cloth grown to this many times its rest size.
DIVERGENCE_LIMIT = 1e9
STRETCH_LIMIT = 1e3

# Settings read afresh every step, and settings baked into the model.
LIVE_FIELDS = {"gravity", "wind", "air_drag", "air_lift", "friction", "collision_distance",
               "self_collision", "self_collision_distance", "tear_factor", "use_pressure", "pressure",
               "target_volume", "imperfection"}
MODEL_FIELDS = {"density", "linear_density", "stretch_stiffness", "shear_stiffness", "bend_stiffness",
                "max_vertices", "use_sewing", "sewing_force_max", "shrink", "stretch_stiffness_max",
                "shear_stiffness_max", "bend_stiffness_max", "compression"}


@dataclass(frozen=True)
class ClothPart:
    """One cloth object of a Simulation.from_parts: its mesh (as for Simulation), and the
    Settings its material comes from (None: the simulation's)."""

    vertices: object
    faces: object
    settings: Settings | None = None
    pinned: object = None
    edges: object = None
    weights: object = None  # per-vertex property weights, as for Simulation
    rest_shape: object = None  # (n, 3) rest shape, as for Simulation


class SimulationDiverged(RuntimeError):
    """The solver produced non-finite or absurd positions; the state was not updated."""


def listed_pins(pinned) -> np.ndarray:
    """(p,) int64: the pinned vertices in the order `pinned` (indices or an (n,) bool mask, as
    build_model validates it) lists them; a mask lists them in index order."""
    if pinned is None:
        return np.zeros(0, dtype=np.int64)
    array = np.asarray(pinned)
    return np.flatnonzero(array) if array.dtype == bool else array.reshape(-1).astype(np.int64)


def make_solver(model, settings):
    """The solver object named by settings.solver."""
    if settings.solver == "verlet":
        from .solvers.verlet import VerletSolver
        return VerletSolver(model, settings)
    if settings.solver == "fast_mass_spring":
        from .solvers.fast_mass_spring import FastMassSpringSolver
        return FastMassSpringSolver(model, settings)
    from .solvers.newton import NewtonSolver
    return NewtonSolver(model, settings)


class Simulation:
    """A cloth simulation of one mesh.

    vertices: (n, 3) array-like, m, world space. faces: sequence of index sequences
    (triangles, quads, n-gons mixed) or an (m, k) int array. settings: Settings.
    pinned: None, indices (each once, in the order move_pins takes their targets) or an (n,)
    bool mask (index order). colliders: objects with a `project` method
    (PlaneCollider, SphereCollider, MeshCollider); `sim.colliders` may be replaced between
    frames. edges: optional (e, 2) int mesh edges; those in no face become rope springs (or
    sewing springs with Settings.use_sewing). weights: optional {"shrink"|"stretch"|"shear"|
    "bend"|"mass": (n,) float in [0, 1]} per-vertex property weights (core/garment.py).
    rest_shape: optional (n, 3) m, the shape that gives the springs' rest lengths (e.g. a shape
    key); the simulation starts from `vertices`.
    wind_fields: core.WindField objects blowing on top of settings.wind; `sim.wind_fields`
    may be replaced between frames too. Their gusts follow `sim.time`.
    """

    def __init__(self, vertices, faces, settings: Settings | None = None, pinned=None,
                 colliders=(), edges=None, wind_fields=(), weights=None, rest_shape=None, _model=None):
        settings = settings if settings is not None else Settings()
        if not isinstance(settings, Settings):
            raise ValueError("settings must be a Settings instance")
        self._settings = settings
        # What each part's model was built from besides its vertices (set_rest_shape rebuilds it).
        self._part_inputs = [(faces, settings, pinned, edges, weights)]
        # a model built elsewhere (from_parts) bends the way this simulation's solver does
        self.model = (_model.for_solver(settings.solver) if _model is not None
                      else build_model(vertices, faces, settings, pinned=pinned, edges=edges, weights=weights,
                                       rest_shape=rest_shape))
        self.parts = [slice(0, self.model.n_particles)]
        # move_pins' (p, 3) row k is for the k-th pin as `pinned` listed it: its row here
        self._pin_rows = np.searchsorted(self.model.pinned_indices, listed_pins(pinned))
        # per part: whether its own layers collide (from_parts; one part follows settings)
        self.part_self_collision = [True]
        self._pressure = Pressure(self.model) if settings.use_pressure else None
        self.colliders = list(colliders)
        self.wind_fields = list(wind_fields)
        self.solver = make_solver(self.model, settings)
        self.contact = ContactStage(self)
        extent = np.ptp(self.model.rest_positions, axis=0).max()
        self._rest_size = max(extent, 1e-6) if self.model.n_springs else 0.0
        self.reset()

    @classmethod
    def from_parts(cls, parts, settings: Settings | None = None, colliders=(),
                   wind_fields=()) -> "Simulation":
        """One simulation of several cloth objects that collide with each other (both ways).

        parts: sequence of ClothPart(vertices, faces, settings=None, pinned=None, edges=None);
        each part's material (density, stiffness) comes from its own settings, its pins are
        indices into its own vertices (move_pins takes their targets part by part). settings: how the
        whole is stepped (solver, dt, substeps, iterations, gravity, wind, air, contact), the first
        part's when None; wind_fields blow on all parts. With settings.self_collision on, the parts keep
        self_collision_distance apart and never pass through each other; off, they pass. A part's
        own layers collide only if its own settings (the simulation's when None) have
        self_collision on: two sheets that must not pass through each other need not each pay
        for self-collision, and a garment sewn in a hurry does not list its own pairs.
        `sim.parts[k]` is the slice of part k's particles in `sim.positions`.
        """
        parts = list(parts)
        if not parts or not all(isinstance(p, ClothPart) for p in parts):
            raise ValueError("Simulation.from_parts needs a non-empty sequence of ClothPart")
        settings = settings if settings is not None else (parts[0].settings or Settings())
        if not isinstance(settings, Settings):
            raise ValueError("settings must be a Settings instance")
        models = [build_model(p.vertices, p.faces, p.settings or settings, pinned=p.pinned, edges=p.edges,
                              weights=p.weights, rest_shape=p.rest_shape)
                  for p in parts]
        model, starts = concatenate_models(models)
        sim = cls(None, None, settings, colliders=colliders, wind_fields=wind_fields, _model=model)
        sim._part_inputs = [(p.faces, p.settings or settings, p.pinned, p.edges, p.weights) for p in parts]
        sim.parts = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)]
        listed = [listed_pins(p.pinned) + start for p, start in zip(parts, starts[:-1], strict=True)]
        sim._pin_rows = np.searchsorted(model.pinned_indices, np.concatenate(listed))
        sim.part_self_collision = [bool((p.settings or settings).self_collision) for p in parts]
        return sim

    @property
    def settings(self) -> Settings:
        """The Settings in force. Assign a changed copy (`settings.replace(...)`) to change them
        between frames: forces and collisions follow at once, solver fields (solver, dt,
        substeps, iterations, damping, chebyshev...) rebuild the solver and keep the state;
        the material (density, stiffness) shapes the model, so it needs a new Simulation."""
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        if not isinstance(value, Settings):
            raise ValueError("settings must be a Settings instance")
        old = self._settings
        changed = {f.name for f in fields(Settings) if getattr(value, f.name) != getattr(old, f.name)}
        frozen = sorted(changed & MODEL_FIELDS)
        if frozen:
            raise ValueError(f"Settings.{frozen[0]} shapes the model (masses, springs): "
                             "make a new Simulation to change it")
        if value.use_pressure and self._pressure is None:
            self._pressure = Pressure(self.model)  # raises for an open mesh before anything changes
        self._settings = value
        if changed - LIVE_FIELDS:
            # verlet bends with springs, the implicit solvers with the bending matrix
            self.model = self.model.for_solver(value.solver)
            self.solver = make_solver(self.model, value)
            self.solver.set_active(~self._torn)
            self.contact.forget()  # its carried forces are in the old solver's units (h^2)

    # -- state -----------------------------------------------------------------------------
    def reset(self, start=None) -> None:
        """Back to the rest shape (or to start: (n, 3) m), at rest, nothing torn, frame 0 (time 0).

        Unlike setting `state`, a reset lets the first step give the cloth its imperfection
        (_add_imperfection)."""
        rest = self.model.rest_positions
        if start is not None:
            rest = np.array(start, dtype=np.float64)
            if rest.shape != (self.model.n_particles, 3) or not np.all(np.isfinite(rest)):
                raise ValueError(f"reset start must be finite with shape ({self.model.n_particles}, 3)")
        self._x = rest.copy()
        self._x_prev = rest.copy()
        self._torn = np.zeros(self.model.n_springs, dtype=bool)
        self._pin_targets = rest[self.model.pinned_indices].copy()
        self.solver.set_active(~self._torn)
        self.frame = 0
        self._imperfect = False
        self.contact.forget()

    @property
    def time(self) -> float:
        """s: simulated time since the last reset, frame * settings.dt."""
        return self.frame * self.settings.dt

    @property
    def positions(self) -> np.ndarray:
        """(n, 3) float64, m: current positions (read-only view; copy to keep)."""
        view = self._x.view()
        view.flags.writeable = False
        return view

    @property
    def torn(self) -> np.ndarray:
        """(s,) bool: springs torn so far (same order as model.spring_indices)."""
        return self._torn.copy()

    @property
    def state(self) -> ClothState:
        """A copy of what the next step starts from."""
        return ClothState(self._x.copy(), self._x_prev.copy(), self._torn.copy())

    @state.setter
    def state(self, value: ClothState) -> None:
        n, s = self.model.n_particles, self.model.n_springs
        x = np.array(value.positions, dtype=np.float64)
        prev = np.array(value.previous, dtype=np.float64)
        if x.shape != (n, 3) or prev.shape != (n, 3):
            raise ValueError(f"state positions must have shape ({n}, 3)")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(prev))):
            raise ValueError("state positions must be finite")
        torn = np.zeros(s, dtype=bool) if value.torn is None else np.array(value.torn, dtype=bool)
        if torn.shape != (s,):
            raise ValueError(f"state torn mask must have shape ({s},)")
        self._x, self._x_prev, self._torn = x, prev, torn
        self._pin_targets = x[self.model.pinned_indices].copy()
        self.solver.set_active(~self._torn)
        self._imperfect = True  # a state given is taken as it is
        self.contact.forget()

    def move_pins(self, targets) -> None:
        """Where pinned particles must be at the end of the next frame, m, world space.

        targets: (p, 3) float, one row per pin in the order `pinned=` listed them (pinned=[7, 2]:
        row 0 is vertex 7's target; a boolean mask lists them in index order; from_parts: part
        by part, each in its own order), or (n, 3) with one row per vertex (also when every
        vertex is pinned), of which only the pinned rows are read. Over the frame's substeps
        pins move linearly from where they are to there; with self-collision, a pin that would
        drive the cloth through itself waits for that substep (contact/self_contact), so a pin
        the cloth blocks lags its target.
        """
        targets = np.asarray(targets, dtype=np.float64)
        pinned = self.model.pinned_indices
        if targets.shape == (self.model.n_particles, 3):
            targets = targets[pinned]
        elif targets.shape == (len(pinned), 3):
            ordered = np.empty_like(targets)
            ordered[self._pin_rows] = targets
            targets = ordered
        if targets.shape != (len(pinned), 3) or not np.all(np.isfinite(targets)):
            raise ValueError(f"pin targets must be finite with shape ({len(pinned)}, 3) "
                             f"or ({self.model.n_particles}, 3)")
        self._pin_targets = targets

    def set_rest_shape(self, shape) -> None:
        """Make `shape` ((n, 3) m, world space) the shape the cloth rests in, keeping its state.

        The springs' rest lengths and the bending matrix (its rest cotangents and areas) are
        taken from `shape`, as if the model had been built with it, and the solver is rebuilt
        for the new matrix (the fast solver refactors it); masses, pins, torn springs and the
        state stay. This is what lets a cloth driven by a deforming mesh rest in the deformed
        shape every frame (Blender's Dynamic Mesh). Cost: a model build and a factorisation.
        The rest shape's springs must be the model's (no spring collapsing to zero length).
        """
        n = self.model.n_particles
        shape = np.asarray(shape, dtype=np.float64)
        if shape.shape != (n, 3) or not np.all(np.isfinite(shape)):
            raise ValueError(f"rest shape must be finite with shape ({n}, 3)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dropped springs are refused below, with the reason
            models = [build_model(shape[part], faces, settings, pinned=pinned, edges=edges, weights=weights)
                      for part, (faces, settings, pinned, edges, weights)
                      in zip(self.parts, self._part_inputs, strict=True)]
        model = models[0] if len(models) == 1 else concatenate_models(models)[0]
        if not np.array_equal(model.spring_indices, self.model.spring_indices):
            raise ValueError("the rest shape collapses springs of the mesh to zero length")
        old = self.model
        model = replace(model, rest_positions=old.rest_positions, mass=old.mass, inv_mass=old.inv_mass)
        # Contact bounds and the automatic self-collision gap stay those of the first rest shape:
        # they are measured once, and a per-frame change would move the contact distances.
        for cached in ("contact_features", "median_edge_length"):
            if cached in old.__dict__:
                model.__dict__[cached] = old.__dict__[cached]
        self.model = model.for_solver(self.settings.solver)
        self.solver = make_solver(self.model, self.settings)
        self.solver.set_active(~self._torn)

    # -- stepping ----------------------------------------------------------------------------
    def step(self, frames: int = 1) -> None:
        """Advance `frames` whole frames of settings.dt seconds each."""
        if isinstance(frames, bool) or not isinstance(frames, int | np.integer) or frames < 0:
            raise ValueError(f"frames must be a non-negative integer, got {frames!r}")
        for _ in range(int(frames)):
            self._step_frame()
            self.frame += 1

    def _step_frame(self) -> None:
        settings, model = self.settings, self.model
        h, substeps = settings.h, settings.substeps
        pinned = model.pinned_indices
        start = self._x[pinned].copy()
        x, x_prev = self._x.copy(), self._x_prev.copy()
        if not self._imperfect:
            self._add_imperfection(x, x_prev)
        contact = self.contact
        contact.begin_frame(substeps)
        for sub in range(1, substeps + 1):
            contact.begin_substep(sub)
            target = start + (self._pin_targets - start) * (sub / substeps)
            velocity = (x - x_prev) / h
            accel = forces.external_acceleration(model, x, velocity, settings, h, self.wind_fields,
                                                 self.time + (sub - 1) * h)
            if settings.use_pressure:
                gas = self._pressure.forces(x, settings.pressure, settings.target_volume)
                accel += gas / model.mass[:, None]
            if self.solver.contact_in_iterations:
                x_new = self.solver.advance(x, x_prev, accel, target, contact=contact.in_iterations(x))
            else:
                x_new = self.solver.advance(x, x_prev, accel, target)
            contact.finish(x, x_new, self.solver.predict(x, x_prev, accel, target))
            x_prev, x = x, x_new
            if settings.tear_factor is not None:
                self._tear(x)
        self._check_diverged(x)
        self._x, self._x_prev = x, x_prev

    def _add_imperfection(self, x, x_prev) -> None:
        """Displace the free particles by a fixed pseudo-random Settings.imperfection x the median
        edge length (no velocity), in place on x and x_prev (n, 3): once, at the first step after
        a reset (docs/PHYSICS.md §9).

        A perfectly flat sheet compressed in its own plane (a hanging strip landing on its edge,
        a curtain whose pins are drawn together, an upright tube) is an unstable equilibrium that
        nothing leaves: gravity and the springs never push a particle out of the plane, so it
        stands, or collapses in its plane, instead of folding. Real cloth is never that flat, and
        Blender's own float noise breaks such symmetry too; nanometres suffice to let the buckling
        instability grow. The offsets come from a generator seeded with the particle count, so a
        scene gives the same result every run; on a scene that is not balanced on such an edge
        they stay nanometres (a hanging sheet moves by far less than 0.1 mm over 60 frames,
        tests/core/test_buckling.py)."""
        self._imperfect = True
        model = self.model
        if self.settings.imperfection == 0.0 or not model.n_springs:
            return
        free = model.inv_mass > 0.0
        structural = model.spring_kind == STRUCTURAL
        # each part its own, from its own edges and seeded by its particle count: cloth objects
        # stepped together get the nudges each would get alone
        for part in self.parts:
            count = part.stop - part.start
            first = model.spring_indices[:, 0]
            own = structural & (first >= part.start) & (first < part.stop)
            if not own.any():
                continue
            size = self.settings.imperfection * float(np.median(model.spring_rest_length[own]))
            offset = size * np.random.default_rng(count).standard_normal((count, 3))
            offset[~free[part]] = 0.0
            x[part] += offset
            x_prev[part] += offset

    def _check_diverged(self, x) -> None:
        """Raise SimulationDiverged instead of accepting garbage; the state stays as it was."""
        problem = None
        reach = np.abs(x).max()  # NaN propagates and inf exceeds the limit: one pass for both
        if not reach <= DIVERGENCE_LIMIT:
            problem = ("positions are not finite" if not np.isfinite(reach)
                       else f"positions are beyond {DIVERGENCE_LIMIT:g} m")
        elif self._rest_size and not self._torn.any():
            # distance from one particle: O(n) and fast, where spring lengths would cost more
            # than the forces and numpy's axis-0 min/max over (n, 3) is slow
            if np.abs(x - x[0]).max() > STRETCH_LIMIT * self._rest_size:
                problem = f"the cloth grew past {STRETCH_LIMIT:g} times its size at rest"
        if problem:
            raise SimulationDiverged(
                f"the simulation diverged at frame {self.frame + 1} ({problem}); lower dt, raise "
                "substeps or iterations, or lower the stiffness")

    @property
    def self_collision_distance(self) -> float:
        """m: the gap self-collision keeps between layers (Settings.self_collision_distance, or
        AUTO_SELF_DISTANCE times the median rest edge length when that is None)."""
        if self.settings.self_collision_distance is not None:
            return self.settings.self_collision_distance
        return AUTO_SELF_DISTANCE * self.model.median_edge_length

    def _tear(self, x) -> None:
        """Break springs stretched past rest * tear_factor; refactor solvers once if any broke."""
        i, j = self.model.spring_indices.T
        length = np.linalg.norm(x[i] - x[j], axis=1)
        breaking = (length > self.model.spring_rest_length * self.settings.tear_factor) & ~self._torn
        breaking &= self.model.spring_kind != SEWING  # rest length 0: a seam does not tear
        if np.any(breaking):
            self._torn |= breaking
            self.solver.set_active(~self._torn)
