"""Tearing made visible: mesh edges whose structural spring tore are split in the evaluated mesh.

Why a Geometry Nodes "Split Edges" modifier driven by a boolean edge attribute, and not a bmesh
split of the mesh itself: the mesh keeps its vertex count, so the Basis, the live result, the
baked per-frame keys and a PC2 cache (whose Mesh Cache modifier sits at the cloth stage, above
the split) all stay valid
while the cut grows; and nothing of the user's mesh is rewritten, so Free Bake and Remove Cloth
restore it exactly by deleting one attribute and one modifier.

The attribute holds the edges torn by the frame on screen (tearing only grows). A baked object
keeps the edges torn by the end of the bake: before an edge tears, the two sides of its cut get
the same positions from the keys, so the cut is invisible until the cloth parts there.
"""

import bpy
import numpy as np

from ..core.topology import pair_keys
from . import mesh_io, stage
from .ids import CACHE_MODIFIER

ATTRIBUTE = "cloth_addon_torn"
MODIFIER = "ClothTear"
NODE_GROUP = "ClothAddon Tear"
_NEVER = np.iinfo(np.int64).max


def _node_group():
    """The shared node group: Split Edges where the edge attribute is true."""
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None:
        return group
    group, source, sink = stage.geometry_node_group(NODE_GROUP)
    nodes, links = group.nodes, group.links
    split = nodes.new("GeometryNodeSplitEdges")
    torn = nodes.new("GeometryNodeInputNamedAttribute")
    torn.data_type = "BOOLEAN"
    torn.inputs["Name"].default_value = ATTRIBUTE
    links.new(source.outputs[0], split.inputs["Mesh"])
    links.new(torn.outputs["Attribute"], split.inputs["Selection"])
    links.new(split.outputs["Mesh"], sink.inputs[0])
    return group


def _edge_springs(live, obj) -> np.ndarray:
    """(e,) int64: for each mesh edge of `obj` (a member of the live session), its spring in the
    session's simulation, or -1."""
    member = live.member(obj.session_uid)
    mesh = obj.data
    cached = member.tear_edge_springs
    if cached is not None and len(cached) == len(mesh.edges):
        return cached
    n = live.sim.model.n_particles
    springs = live.sim.model.spring_indices
    spring_keys = pair_keys(springs[:, 0], springs[:, 1], n)
    order = np.argsort(spring_keys)
    edges = mesh_io.read_edges(mesh) + member.part.start  # the object's particles in the simulation
    keys = pair_keys(edges[:, 0], edges[:, 1], n)
    pos = np.minimum(np.searchsorted(spring_keys[order], keys), len(order) - 1)
    found = spring_keys[order][pos] == keys
    member.tear_edge_springs = np.where(found, order[pos], -1)
    return member.tear_edge_springs


def show(obj, live, frame: int) -> None:
    """Split the object's edges torn by `frame` in the live session `live` (a ClothSession)."""
    torn = live.sim.torn
    first = live.tear_frame
    if first is None or len(first) != len(torn):
        first = np.full(len(torn), _NEVER, dtype=np.int64)
    first[~torn] = _NEVER  # the simulation was reset
    first[torn & (first == _NEVER)] = live.last_frame
    live.tear_frame = first
    springs = _edge_springs(live, obj)
    if not np.any(torn[springs[springs >= 0]]):  # of objects simulated together, maybe another tore
        remove(obj)
        return
    mesh = obj.data
    cut = (springs >= 0) & (first[np.maximum(springs, 0)] <= frame)
    attribute = mesh.attributes.get(ATTRIBUTE)
    if attribute is None:
        attribute = mesh.attributes.new(ATTRIBUTE, "BOOLEAN", "EDGE")
    attribute.data.foreach_set("value", cut)
    if obj.modifiers.get(MODIFIER) is None:
        modifier = obj.modifiers.new(MODIFIER, "NODES")
        modifier.node_group = _node_group()
        # Right below the cloth stage (and a bake's cache): split the simulated surface before
        # anything smooths or subdivides it.
        stage.place_below(obj, modifier, after=(CACHE_MODIFIER,))
    mesh.update_tag()


def remove(obj) -> None:
    """Take the cut away: the tear modifier, the edge attribute, the node group once unused."""
    modifier = obj.modifiers.get(MODIFIER)
    if modifier is not None:
        obj.modifiers.remove(modifier)
    mesh = obj.data
    attribute = mesh.attributes.get(ATTRIBUTE)
    if attribute is not None:
        mesh.attributes.remove(attribute)
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None and group.users == 0:
        bpy.data.node_groups.remove(group)
