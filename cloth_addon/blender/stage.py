"""The cloth stage: where the simulation sits in the object's modifier stack, as Blender's Cloth
modifier does.

It is a Geometry Nodes modifier, "ClothSim", running one shared node group:

    Group Input -> Store Named Attribute  cloth_addon_input = Position    (what the cloth is driven by)
                -> Store Named Attribute  cloth_addon_index = Index       (checks the vertex order)
                -> Set Position  Position = cloth_addon_result  where it exists
                -> Group Output

Everything above the stage (Armature, Hook, Lattice, Mesh/Surface Deform, shape keys, the user's
own node groups) deforms the mesh before it reaches the stage; the stage records those positions
as a point attribute, which the evaluated mesh hands to Python
(`obj.evaluated_get(depsgraph).data.attributes`), and replaces them with the simulated result.
So the deformers are applied once, to the cloth's input, and never again on top of its result;
everything below the stage (Subdivision, Solidify, tearing's Split Edges, a bake's Mesh Cache)
applies to the result.

Why the result travels as a point attribute of the mesh, `cloth_addon_result`, and not as a shape
key: shape keys are mixed before the first modifier, so a key holding the result would be
deformed by the Armature once more. A point attribute written on the mesh is carried unchanged
through deform modifiers and is read at the stage, where Set Position puts it in place. It holds
object-space coordinates (the object's transform applies after the stack, as for any mesh).

Modifiers below the stage may add vertices (Subdivision, Solidify, Mirror, Array and Split Edges
keep the original vertices first, in order); the stored index attribute lets `read_input` check
that the first n vertices of the final mesh are the stage's, and fail clearly when a modifier
reorders them. Modifiers above the stage must keep the vertex count: the simulation is the mesh's.

The node group uses only nodes and the `interface.new_socket` API that Blender 4.2 to 5.x share.
"""

import bpy
import numpy as np

from .ids import BAKE_KEY_PREFIX

MODIFIER = "ClothSim"
NODE_GROUP = "ClothAddon Stage"
INPUT_ATTRIBUTE = "cloth_addon_input"
INDEX_ATTRIBUTE = "cloth_addon_index"
RESULT_ATTRIBUTE = "cloth_addon_result"

# Modifiers that only move vertices: Make Cloth places the stage after the leading run of them,
# so a rigged garment is driven by its Armature while a Subdivision below smooths the result.
DEFORM_TYPES = {"ARMATURE", "CAST", "CURVE", "DISPLACE", "HOOK", "LAPLACIANDEFORM", "LATTICE",
                "MESH_DEFORM", "SHRINKWRAP", "SIMPLE_DEFORM", "SMOOTH", "CORRECTIVE_SMOOTH",
                "LAPLACIANSMOOTH", "SURFACE_DEFORM", "WARP", "WAVE", "MESH_CACHE",
                "MESH_SEQUENCE_CACHE", "VERTEX_WEIGHT_EDIT", "VERTEX_WEIGHT_MIX",
                "VERTEX_WEIGHT_PROXIMITY"}


class StageError(ValueError):
    """The stack does not let the cloth read its input; the message is for the user."""


def geometry_node_group(name: str):
    """(group, its Group Input node, its Group Output node): a new Geometry Nodes group with one
    geometry input and output, as a modifier runs it."""
    group = bpy.data.node_groups.new(name, "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    return group, group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")


def _node_group():
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None:
        return group
    group, source, sink = geometry_node_group(NODE_GROUP)
    nodes, links = group.nodes, group.links
    store_input = _store(nodes, "FLOAT_VECTOR", INPUT_ATTRIBUTE)
    store_index = _store(nodes, "INT", INDEX_ATTRIBUTE)
    position, index = nodes.new("GeometryNodeInputPosition"), nodes.new("GeometryNodeInputIndex")
    result = nodes.new("GeometryNodeInputNamedAttribute")
    result.data_type = "FLOAT_VECTOR"
    result.inputs["Name"].default_value = RESULT_ATTRIBUTE
    place = nodes.new("GeometryNodeSetPosition")
    links.new(source.outputs[0], store_input.inputs["Geometry"])
    links.new(position.outputs["Position"], _value(store_input))
    links.new(store_input.outputs["Geometry"], store_index.inputs["Geometry"])
    links.new(index.outputs["Index"], _value(store_index))
    links.new(store_index.outputs["Geometry"], place.inputs["Geometry"])
    links.new(result.outputs["Attribute"], place.inputs["Position"])
    links.new(result.outputs["Exists"], place.inputs["Selection"])
    links.new(place.outputs["Geometry"], sink.inputs[0])
    for column, node in enumerate((source, store_input, store_index, place, sink)):
        node.location = (220 * column, 0)
    for node, row in ((position, -1), (index, -1), (result, -2)):
        node.location = (220 * (1 + (node is index) + 2 * (node is result)), 200 * row)
    return group


def _store(nodes, data_type: str, name: str):
    node = nodes.new("GeometryNodeStoreNamedAttribute")
    node.data_type, node.domain = data_type, "POINT"
    node.inputs["Name"].default_value = name
    return node


def _value(node):
    """The Store Named Attribute's value socket of its data type (older Blenders keep one per type)."""
    return next(socket for socket in node.inputs if socket.name == "Value" and socket.enabled)


def modifier(obj):
    """The object's cloth stage modifier, or None."""
    found = obj.modifiers.get(MODIFIER)
    return found if found is not None and found.type == "NODES" else None


def index(obj) -> int:
    """Position of the stage in the stack (-1 without one)."""
    found = modifier(obj)
    return -1 if found is None else list(obj.modifiers).index(found)


def ensure(obj):
    """The cloth stage, added after the leading deform-only modifiers when missing."""
    found = modifier(obj)
    if found is not None:
        if found.node_group is None:
            found.node_group = _node_group()
        return found
    place = 0
    while place < len(obj.modifiers) and obj.modifiers[place].type in DEFORM_TYPES:
        place += 1
    found = obj.modifiers.new(MODIFIER, "NODES")
    found.node_group = _node_group()
    obj.modifiers.move(len(obj.modifiers) - 1, place)
    return found


def place_below(obj, added, after=()) -> None:
    """Move the modifier `added` to just below the stage, and below the modifiers named in
    `after` that sit right there (a bake's cache comes before the tear's split)."""
    at = index(obj)
    if at < 0:
        return
    stack = list(obj.modifiers)
    target = at + 1
    while target < len(stack) and stack[target].name in after and stack[target] is not added:
        target += 1
    current = stack.index(added)
    if current < target:
        target -= 1
    if current != target:
        obj.modifiers.move(current, target)


def above(obj) -> list:
    """The modifiers above the cloth stage, top first."""
    at = index(obj)
    return list(obj.modifiers)[:max(at, 0)]


def user_shape_keys(obj) -> list:
    """The object's shape keys other than the Basis and the ones a bake wrote."""
    keys = obj.data.shape_keys
    if keys is None:
        return []
    return [block for block in keys.key_blocks
            if block != keys.reference_key and not block.name.startswith(BAKE_KEY_PREFIX)]


def is_deformed(obj) -> bool:
    """Whether anything before the stage may move the vertices: a modifier above it, or a shape
    key that is not muted (its value may be animated or driven). False means the stage's input
    is the mesh itself and the simulation follows the object's transform alone, without reading
    the evaluated mesh."""
    return bool(above(obj)) or any(not block.mute for block in user_shape_keys(obj))


def read_input(obj, depsgraph, out: np.ndarray | None = None) -> np.ndarray:
    """(n, 3) float64 object-space positions of the vertices as they reach the stage this frame
    (every deformer above it applied), read from the evaluated mesh; n = the mesh's vertex count.

    out: optional (n * 3,) float32 staging buffer. Raises StageError when the stage is missing
    or off, or the modifiers around it change the vertices it sees.
    """
    n = len(obj.data.vertices)
    evaluated = obj.evaluated_get(depsgraph).data
    attributes = evaluated.attributes
    stored = attributes.get(INPUT_ATTRIBUTE)
    if stored is None:
        raise StageError(f"{obj.name}: the {MODIFIER} modifier is missing or off in the viewport; "
                         "Make Cloth again or turn it on")
    count = len(evaluated.vertices)
    if count > n:
        # The stage numbered its vertices: below it the first n must be those, in order, and no
        # vertex may carry a number past n (which only more vertices at the stage could give).
        order = np.empty(count, dtype=np.int32)
        attributes[INDEX_ATTRIBUTE].data.foreach_get("value", order)
        follows = np.array_equal(order[:n], np.arange(n, dtype=np.int32)) and order.max() < n
    if count < n or (count > n and not follows):
        raise StageError(f"{obj.name}: a modifier above or below the {MODIFIER} modifier changes the "
                         "vertices in a way the cloth cannot follow: above it only deforming "
                         "modifiers can sit, below it only ones that keep the mesh's vertices first "
                         "(Subdivision, Solidify, Mirror, Array...)")
    buffer = out if out is not None and out.size == count * 3 else np.empty(count * 3, dtype=np.float32)
    stored.data.foreach_get("vector", buffer.reshape(-1))
    return buffer.reshape(-1, 3)[:n].astype(np.float64)


def write_result(obj, local: np.ndarray) -> None:
    """Show (n, 3) object-space positions at the stage: stored in the mesh's result attribute,
    which the stage's Set Position puts in place. A C-contiguous float32 array is written as it is."""
    mesh = obj.data
    attribute = mesh.attributes.get(RESULT_ATTRIBUTE)
    if attribute is None or attribute.data_type != "FLOAT_VECTOR" or attribute.domain != "POINT":
        if attribute is not None:
            mesh.attributes.remove(attribute)
        attribute = mesh.attributes.new(RESULT_ATTRIBUTE, "FLOAT_VECTOR", "POINT")
    attribute.data.foreach_set("vector", np.ascontiguousarray(local, dtype=np.float32).reshape(-1))
    mesh.update_tag()


def read_result_into(obj, buffer: np.ndarray) -> np.ndarray | None:
    """Copy the shown result into a C-contiguous float32 buffer of n * 3 floats (returned); None
    when nothing is shown."""
    attribute = obj.data.attributes.get(RESULT_ATTRIBUTE)
    if attribute is None:
        return None
    attribute.data.foreach_get("vector", buffer.reshape(-1))
    return buffer


def clear_result(obj) -> None:
    """Stop showing a result: the stage passes its input through."""
    attribute = obj.data.attributes.get(RESULT_ATTRIBUTE)
    if attribute is not None:
        obj.data.attributes.remove(attribute)
        obj.data.update_tag()


def remove(obj) -> None:
    """Take the stage away: its modifier, the result attribute, the node group once unused."""
    found = modifier(obj)
    if found is not None:
        obj.modifiers.remove(found)
    clear_result(obj)
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None and group.users == 0:
        bpy.data.node_groups.remove(group)
