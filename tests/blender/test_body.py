"""A garment on a rigged body: pinned at the waist, it rides on the body's Armature and the body,
read as a collider through its evaluated (deformed) mesh, pushes it without being passed through."""

import bpy
import numpy as np
import rigs
from conftest import evaluated_world, select_only

from cloth_addon import core
from cloth_addon.blender import colliders, mesh_io
from tools.quality import edge_triangle_crossings

SEGMENTS, RINGS = 32, 12
LAST = 30


def dressed_body(collide: bool):
    """A closed, coarse body (a 16-sided cylinder, r = 0.15 m, z 0.3 to 1.5) and a straight skirt
    (r = 0.18, z 1.2 to 0.6: 3 cm off the body, so it does not touch it hanging still) around it,
    both skinned to one bone that slides 0.6 m along +X over frames 1 to 13. The skirt's waist
    ring is pinned. Returns (skirt, body, rig)."""
    rig = rigs.one_bone_rig(head=(0.0, 0.0, 0.3), tail=(0.0, 0.0, 1.5))
    rigs.slide_bone(rig, 0.6, 1, 13)
    body = rigs.tube("Body", 16, 4, 0.15, np.linspace(0.3, 1.5, 4), capped=True)
    rigs.skin(body, rig)
    if collide:
        body.modifiers.new("Collision", "COLLISION")
    skirt = rigs.tube("Skirt", SEGMENTS, RINGS, 0.18, np.linspace(1.2, 0.6, RINGS))
    rigs.skin(skirt, rig)
    skirt.vertex_groups.new(name="Waist").add(list(range(SEGMENTS)), 1.0, "REPLACE")
    bpy.context.scene.frame_set(1)
    select_only(skirt)
    props = skirt.cloth_addon
    props.pin_group, props.frame_start, props.frame_end = "Waist", 1, LAST
    assert bpy.ops.cloth_addon.make_cloth() == {"FINISHED"}
    return skirt, body, rig


def through_body(skirt, body) -> tuple[int, int, float]:
    """(skirt edges crossing the body's surface, skirt vertices inside the body, the smallest
    distance of the skirt's free vertices to the body's surface in m) as the frame shows them."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    vertices, triangles, _, _ = colliders.world_mesh(body, depsgraph)
    cloth = evaluated_world(skirt)
    edges = mesh_io.read_edges(skirt.data) + len(vertices)
    crossings = edge_triangle_crossings(np.concatenate([vertices, cloth]), edges, triangles)
    _, distance, inside, _ = core.MeshCollider(vertices, triangles).closest(cloth)
    return crossings, int(inside.sum()), float(distance[SEGMENTS:].min())


def test_a_skirt_pinned_to_a_moving_body_is_pushed_by_it_and_never_passes_through(scene):
    skirt, body, rig = dressed_body(collide=True)
    rest = mesh_io.to_world(mesh_io.matrix_to_numpy(skirt.matrix_world), mesh_io.read_positions(skirt.data))
    reach = body.collision.thickness_outer + skirt.cloth_addon.collision_distance
    closest = np.inf
    for frame in range(1, LAST + 1):
        scene.frame_set(frame)
        crossings, inside, distance = through_body(skirt, body)
        assert (crossings, inside) == (0, 0), frame
        pins = evaluated_world(skirt)[:SEGMENTS]
        assert np.abs(pins - (rest[:SEGMENTS] + rigs.bone_offset(rig))).max() < 1e-3, frame
        closest = min(closest, distance)
    assert closest < reach + 0.002, "the body reached the lagging skirt and pushed it"


def test_without_the_collision_the_same_skirt_passes_through_the_body(scene):
    skirt, body, _ = dressed_body(collide=False)
    worst = 0
    for frame in range(1, LAST + 1):
        scene.frame_set(frame)
        worst = max(worst, sum(through_body(skirt, body)[:2]))
    assert worst > 0, "the skirt lags into the body: in the test above, the body is what stops it"
