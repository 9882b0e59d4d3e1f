"""A triangle mesh as a collider: MeshCollider, and its sharp convex edges and corners."""

from .collider import MeshCollider

__all__ = ["MeshCollider"]
