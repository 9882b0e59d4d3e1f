"""Object.cloth_addon: the per-object cloth settings, shown in the Physics tab."""

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)

from ..core.settings import AIR_DRAG, AIR_LIFT
from . import store


def _invalidate(self, context):
    """Any edit makes the cached simulation stale: rebuild it on the next frame."""
    obj = self.id_data
    if obj is not None:
        store.discard(obj.session_uid)


def _frame_range_changed(self, context):
    if self.frame_end < self.frame_start:
        self.frame_end = self.frame_start
    _invalidate(self, context)


def _weight_group(kind: str):
    return StringProperty(
        name=f"{kind} Group", default="", update=_invalidate,
        description=f"Vertex group blending the {kind.lower()} stiffness from its base (0) to its max (1)")


def _stiffness_max(kind: str, default: float, soft_max: float):
    return FloatProperty(
        name=f"Max {kind}", default=default, min=0.0, soft_max=soft_max, update=_invalidate,
        description=f"{kind} stiffness where the {kind} Group's weight is 1, N/m")


class ClothAddonSettings(bpy.types.PropertyGroup):
    """Cloth settings of one mesh object."""

    enabled: BoolProperty(
        name="Cloth", default=False, update=_invalidate,
        description="Simulate this mesh as cloth during playback")
    solver: EnumProperty(
        name="Solver", default="FAST_MASS_SPRING", update=_invalidate,
        items=[("FAST_MASS_SPRING", "Fast Mass-Spring",
                "Implicit Euler by local/global iterations (Liu et al. 2013): stable at any stiffness"),
               ("VERLET", "Verlet", "Verlet integration with constraint relaxation: simple, explicit")])
    iterations: IntProperty(
        name="Iterations", default=2, min=1, soft_max=50, max=500, update=_invalidate,
        description="Solver iterations per substep (Verlet: more is stiffer; Fast Mass-Spring: closer to "
                    "the exact implicit step, same stiffness)")
    substeps: IntProperty(
        name="Substeps", default=5, min=1, soft_max=20, max=200, update=_invalidate,
        description="Solver steps per frame: contacts are resolved every substep, so more substeps "
                    "with fewer iterations each give cleaner contact at the same cost")
    density: FloatProperty(
        name="Density", default=0.15, min=1e-4, soft_max=2.0, precision=3, update=_invalidate,
        description="Mass per area of cloth, kg/m²")
    stretch_stiffness: FloatProperty(
        name="Stretch", default=500.0, min=0.0, soft_max=100000.0, update=_invalidate,
        description="Stiffness of springs along mesh edges, N/m")
    shear_stiffness: FloatProperty(
        name="Shear", default=50.0, min=0.0, soft_max=20000.0, update=_invalidate,
        description="Stiffness of springs across face diagonals, N/m")
    bend_stiffness: FloatProperty(
        name="Bending", default=2e-5, min=0.0, soft_max=0.01, precision=6, update=_invalidate,
        description="Plate bending stiffness, N·m (the same material at any mesh resolution): "
                    "silk 0.000001, cotton 0.00002, denim 0.0003, leather 0.002")
    compression: FloatProperty(
        name="Compression", default=0.3, min=0.0, max=1.0, subtype="FACTOR", update=_invalidate,
        description="How hard the cloth pushes back when squeezed along itself, as a fraction of its "
                    "Stretch and Shear stiffness: cloth barely resists, so it buckles and folds "
                    "(silk 0.1, cotton 0.3, leather 0.6; 1 resists like stretching, as rubber does)")
    damping: FloatProperty(
        name="Damping", default=0.05, min=0.0, max=0.99, precision=3, update=_invalidate,
        description="Fraction of velocity removed each frame")
    spring_damping: FloatProperty(
        name="Stretch Damping", default=0.0, min=0.0, soft_max=0.01, precision=4, unit="TIME_ABSOLUTE",
        update=_invalidate,
        description="Seconds: each spring resists the rate of its own stretching with this times its "
                    "stiffness; calms the cloth's fast stretch vibrations without slowing its swing or "
                    "spin (fast and Newton solvers)")
    air_drag: FloatProperty(
        name="Air Drag", default=AIR_DRAG, min=0.0, soft_max=2.0, update=_invalidate,
        description="Air resistance per area and squared speed of the air relative to the cloth, "
                    "kg/m³ (half the air density times a drag coefficient); also couples the cloth to wind")
    air_lift: FloatProperty(
        name="Air Lift", default=AIR_LIFT, min=0.0, soft_max=3.0, update=_invalidate,
        description="Force across the air flow on cloth at an angle to it, as a multiple of the drag: "
                    "what makes a flag flutter instead of settling along the wind")
    pin_group: StringProperty(
        name="Pin Group", default="", update=_invalidate,
        description="Vertex group whose weights pin vertices to the object's own shape")
    pin_stiffness: FloatProperty(
        name="Pin Stiffness", default=1.0, min=0.0, max=1.0, subtype="FACTOR", update=_invalidate,
        description="How hard painted vertices are held: weight × stiffness of 1 pins rigidly, "
                    "less pulls that fraction of the way back to the pin every frame")
    collision_distance: FloatProperty(
        name="Distance", default=0.005, min=0.0, soft_max=0.1, precision=4, unit="LENGTH",
        update=_invalidate,
        description="Cloth thickness kept from colliders (added to their Outer Thickness)")
    friction: FloatProperty(
        name="Friction", default=0.3, min=0.0, soft_max=2.0, update=_invalidate,
        description="Coulomb friction coefficient against colliders")
    use_cloth_collision: BoolProperty(
        name="Cloth Objects", default=True, update=_invalidate,
        description="Collide with the other cloth objects of the scene that have it on; they are "
                    "simulated together")
    use_self_collision: BoolProperty(
        name="Self Collision", default=False, update=_invalidate,
        description="Keep cloth vertices apart from each other")
    self_distance: FloatProperty(
        name="Distance", default=0.0, min=0.0, soft_max=0.1, precision=4, unit="LENGTH",
        update=_invalidate,
        description="Gap kept between layers of cloth; 0 = automatic (half the mesh's median edge length)")
    use_tearing: BoolProperty(
        name="Tearing", default=False, update=_invalidate,
        description="Springs stretched past the tear factor break for good")
    tear_factor: FloatProperty(
        name="Tear Factor", default=1.5, min=1.001, soft_max=5.0, update=_invalidate,
        description="A spring breaks when longer than its rest length times this")
    wind: FloatVectorProperty(
        name="Wind", size=3, default=(0.0, 0.0, 0.0), subtype="VELOCITY", unit="VELOCITY",
        update=_invalidate, description="Wind velocity in world space, m/s, added to the scene's wind fields")
    frame_start: IntProperty(
        name="Start", default=1, update=_frame_range_changed,
        description="Frame where the cloth is at rest and the simulation starts")
    frame_end: IntProperty(
        name="End", default=250, update=_frame_range_changed,
        description="Last simulated and baked frame")
    bake_target: EnumProperty(
        name="Bake To", default="SHAPE_KEYS",
        items=[("SHAPE_KEYS", "Shape Keys", "One shape key per frame, keyframed 0 → 1 → 0 around it"),
               ("PC2", "PC2 Cache", "A .pc2 point-cache file played by a Mesh Cache modifier")])
    cache_directory: StringProperty(
        name="Cache Folder", default="", subtype="DIR_PATH",
        description="Where PC2 files go; empty means a cloth_cache folder next to the .blend file")
    # -- Garments and pillows (Shape, Sewing, Pressure, Property Weights sub-panels) ----------------
    use_sewing: BoolProperty(
        name="Sewing", default=False, update=_invalidate,
        description="Loose edges of the mesh pull their two vertices together until the seam closes "
                    "(off: they are rope springs)")
    sewing_force_max: FloatProperty(
        name="Max Sewing Force", default=0.0, min=0.0, soft_max=100.0, unit="NONE", update=_invalidate,
        description="Most a sewing edge pulls with, N; 0 = unlimited")
    use_pressure: BoolProperty(
        name="Pressure", default=False, update=_invalidate,
        description="Inflate a closed mesh by the pressure of the gas inside it")
    pressure: FloatProperty(
        name="Pressure", default=1000.0, soft_min=-10000.0, soft_max=10000.0, update=_invalidate,
        description="Gas pressure at the target volume, Pa (it falls as the cloth inflates past it)")
    target_volume: FloatProperty(
        name="Target Volume", default=0.0, min=0.0, soft_max=10.0, unit="VOLUME", update=_invalidate,
        description="Volume at which the gas has the given pressure, m³; 0 = the mesh's own volume")
    shrink: FloatProperty(
        name="Shrinking Factor", default=0.0, min=-1.0, max=0.99, subtype="FACTOR", update=_invalidate,
        description="Fraction by which the cloth's rest lengths shrink (negative grows)")
    shrink_group: StringProperty(
        name="Shrinking Group", default="", update=_invalidate,
        description="Vertex group whose weights scale the shrinking factor (empty: everywhere)")
    use_dynamic_mesh: BoolProperty(
        name="Dynamic Mesh", default=False, update=_invalidate,
        description="Take the rest shape from the mesh as the modifiers above the ClothSim modifier "
                    "deform it, every frame, so the cloth squashes and stretches with the character "
                    "(instead of the mesh's own shape or the Rest Shape Key); costs a rebuild of the "
                    "solver every frame")
    rest_shape_key: StringProperty(
        name="Rest Shape Key", default="", update=_invalidate,
        description="Shape key whose shape the springs rest at (empty: the mesh)")
    stretch_group: _weight_group("Stretch")
    stretch_stiffness_max: _stiffness_max("Stretch", 500.0, 100000.0)
    shear_group: _weight_group("Shear")
    shear_stiffness_max: _stiffness_max("Shear", 50.0, 20000.0)
    bend_group: _weight_group("Bending")
    bend_stiffness_max: FloatProperty(
        name="Max Bending", default=2e-3, min=0.0, soft_max=0.01, precision=6, update=_invalidate,
        description="Bending stiffness where the Bending Group's weight is 1, N·m (the Bending "
                    "setting's units)")
    mass_group: StringProperty(
        name="Mass Group", default="", update=_invalidate,
        description="Vertex group whose weight scales each vertex's mass (every vertex needs a weight > 0)")
    collision_collection: bpy.props.PointerProperty(
        name="Collision Collection", type=bpy.types.Collection, update=_invalidate,
        description="Only Collision objects in this collection collide with this cloth (empty: all)")
    # What the last bake added, as JSON, so Free Bake can remove exactly that (also after reload).
    bake_record: StringProperty(name="Bake Record", default="", options={"HIDDEN"})

    @property
    def is_baked(self) -> bool:
        return bool(self.bake_record)


CLASSES = (ClothAddonSettings,)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.cloth_addon = bpy.props.PointerProperty(type=ClothAddonSettings)


def unregister():
    del bpy.types.Object.cloth_addon
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
