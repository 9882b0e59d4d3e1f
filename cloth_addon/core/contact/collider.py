"""The one interface the contact stage drives every collider through (plane, sphere, mesh).

A collider is moved by its pose (what the user reassigns between frames: a sphere's centre, a
plane's point, a mesh's vertices); the stage spreads the motion from the pose at the last frame's
end to the pose now over the substeps, so the collider sweeps. Per substep, in order:

    prepare          (broad phase) once, on the solver's first iterate: remember what is near the
                     cloth for the rest of the substep
    resolve          (narrow phase, continuous check and response) keep the cloth out of the body,
                     in place: vertices inside the solver's iterations, and after them, with the
                     model's contact features, its edges and faces
    contact_normals  the particles touching it, for the stage's Coulomb friction

A plain object with only `project(positions, previous, movable, margin, friction)` (a script's own
collider) is driven through `as_collider`: it projects, and takes no friction from the stage.
"""

import numpy as np


class Collider:
    """Base of the colliders; every method has the behaviour of a body that does not move.

    friction: Coulomb coefficient, or None for Settings.friction; thickness: m, added to the
    cloth's collision distance."""

    friction = None
    thickness = 0.0

    # -- motion ----------------------------------------------------------------------------
    def pose(self) -> np.ndarray | None:
        """What moves the collider (an array), or None for a body the stage does not move."""
        return None

    def move_to(self, pose) -> None:
        """Put the collider at `pose` (one that pose() returned, or a blend of two)."""

    def sweep_start(self, remembered):
        """Where this frame's sweep starts: `remembered`, the pose the stage saw at the last
        frame's end (None: none), unless the collider keeps its own record."""
        return remembered

    def frame_done(self) -> None:
        """The last substep of a frame has put the collider where the user left it."""

    # -- contact ---------------------------------------------------------------------------
    def prepare(self, x0, motion, margin, movable, sweep_from=None) -> None:
        """Broad phase, once a substep: x0 (n, 3) m the substep's start, motion (n,) m how far
        each particle may move in it, margin m the cloth's collision distance, movable (n,) bool,
        sweep_from the pose at the substep's start (None: standing still)."""

    def resolve(self, x, x0, movable, margin, sweep_from=None, features=None, inv_mass=None,
                friction=0.0) -> None:
        """Keep x (n, 3) out of the body, in place; x0 (n, 3) where the substep started.
        features: the model's contact_features to keep out too (None: vertices only); inv_mass
        (n,) 1/kg; friction: the coefficient feature contacts apply (vertex contacts take the
        stage's friction instead)."""
        raise NotImplementedError

    def contact_normals(self, positions, margin, movable, start=None):
        """Particles touching the body: (rows (k,), unit normals (k, 3), surface displacement
        (k, 3) since pose `start`, or None), or None for a collider that takes no friction."""
        return None


class ProjectingCollider(Collider):
    """A plain object with `project(positions, previous, movable, margin, friction)`, driven as a
    Collider: it projects every time the stage resolves, and takes no friction from the stage."""

    def __init__(self, body):
        self.body = body
        self.friction = getattr(body, "friction", None)

    def resolve(self, x, x0, movable, margin, sweep_from=None, features=None, inv_mass=None,
                friction=0.0) -> None:
        self.body.project(x, x0, movable, margin, None)


def as_collider(body) -> Collider:
    """body itself if it is a Collider, else a ProjectingCollider around it."""
    return body if isinstance(body, Collider) else ProjectingCollider(body)
