"""Contact: colliders (one interface), the cloth's own layers and other cloth objects, in stages.

    stage.py            the contact stage of a substep: what runs inside the solver's iterations
                        and after them (ContactStage)
    collider.py         the Collider interface every body is driven through
    analytic.py         PlaneCollider, SphereCollider
    mesh/               MeshCollider and the sharp features of a mesh
    self_contact/       the cloth's layers kept apart and never passing through each other
    sphere_search.py    broad-phase kernels (k-d tree sphere pairs)
    distance.py         narrow-phase kernels (closest points)
    ccd.py              continuous collision detection (times of impact)
    friction.py         Coulomb friction in positions
"""

from .analytic import PlaneCollider, SphereCollider
from .collider import Collider
from .mesh import MeshCollider
from .stage import ContactStage

__all__ = ["Collider", "ContactStage", "MeshCollider", "PlaneCollider", "SphereCollider"]
