"""The cloth solver core: pure numpy/scipy, no Blender import.

    from cloth_addon.core import Simulation, Settings, SphereCollider, PlaneCollider, MeshCollider
    from cloth_addon.core import WindField
"""

from .contact import MeshCollider, PlaneCollider, SphereCollider
from .model import ClothModel, build_model
from .settings import SOLVERS, Settings
from .simulation import ClothPart, Simulation, SimulationDiverged
from .state import ClothState
from .wind import WindField

__all__ = ["Simulation", "ClothPart", "Settings", "SOLVERS", "SphereCollider", "PlaneCollider",
           "MeshCollider", "ClothModel", "ClothState", "SimulationDiverged", "build_model", "WindField"]
