"""Which cloth objects are simulated together: the ones that collide with each other.

The scene's live cloth objects with `use_cloth_collision` on and the same frame range (start and
end frame) form one group, simulated as one core Simulation over their combined meshes
(core.Simulation.from_parts), so each sees the others both ways. A group is ordered by object
name; its first member, the leader, gives the settings the whole group is stepped with (solver,
substeps, iterations, collision and self-collision distances, friction, wind, tearing), while
every member keeps its own material (density, stiffness, damping of its springs) and pins.
An object with `use_cloth_collision` off, or alone in its frame range, is a group of one.
"""


def live_cloth_objects(scene):
    """The cloth objects the frame update simulates: enabled, not baked, not in Edit Mode.

    In Edit Mode the mesh lives in an edit copy that would overwrite what we write on exit; a baked
    object plays its bake and is not simulated (so it is no member of any group either).
    """
    return [obj for obj in scene.objects if obj.type == "MESH" and obj.cloth_addon.enabled
            and not obj.cloth_addon.is_baked and obj.mode != "EDIT"]


def _group_key(obj) -> tuple:
    props = obj.cloth_addon
    return props.frame_start, max(props.frame_end, props.frame_start)


def members(obj, scene) -> list:
    """The objects simulated together with `obj` (itself included), leader first."""
    if not obj.cloth_addon.use_cloth_collision:
        return [obj]
    key = _group_key(obj)
    together = [other for other in live_cloth_objects(scene)
                if other.cloth_addon.use_cloth_collision and _group_key(other) == key]
    if obj not in together:  # being made cloth or reset while not live: simulated alone
        return [obj]
    return sorted(together, key=lambda other: other.name)


def with_partners(objects, scene) -> list:
    """`objects` and every object simulated together with one of them (a group bakes as one)."""
    found = {}
    for obj in objects:
        for other in members(obj, scene):
            found.setdefault(other.name, other)
    return list(found.values())
