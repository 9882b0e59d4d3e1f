"""Cloth driven by the deformers before its stage (an Armature here), shown once, after them."""

import bpy
import numpy as np
import rigs
from conftest import evaluated_world, play, raw_key, raw_vertices, select_only

from cloth_addon.blender import ids, mesh_io, stage, store
from cloth_addon.core.pc2 import read_pc2

COLUMNS, ROWS = 20, 24
LAST = 30


def hanging_sheet(name: str, x: float):
    """The 1 x 1.2 m sheet (20 x 24 vertices, vertical, top row at z = 2) on its own one-bone rig
    at world x, every vertex weighted 1; the bone slides 1 m along +X over frames 1 to 25 (24 fps).
    Its top row is in the vertex group "Pins". Returns (sheet, rig)."""
    rig = rigs.one_bone_rig(f"{name}Rig", head=(x, 0.0, 0.8), tail=(x, 0.0, 2.0))
    rigs.slide_bone(rig, 1.0, 1, 25)
    sheet = rigs.grid_mesh(name, COLUMNS, ROWS, 1.0, 1.2, 2.0)
    sheet.location.x = x
    rigs.skin(sheet, rig)
    sheet.vertex_groups.new(name="Pins").add(list(range(COLUMNS)), 1.0, "REPLACE")
    return sheet, rig


def make_addon_cloth(obj, **settings):
    select_only(obj)
    props = obj.cloth_addon
    props.pin_group, props.frame_start, props.frame_end = "Pins", 1, LAST
    for field, value in settings.items():
        setattr(props, field, value)
    assert bpy.ops.cloth_addon.make_cloth() == {"FINISHED"}
    return obj


def bottom_lag(obj, rig) -> float:
    """m: how far the bottom row's mean x is behind the bone (negative: ahead)."""
    rest = mesh_io.read_positions(obj.data)[-COLUMNS:, 0].mean()
    moved = evaluated_world(obj)[-COLUMNS:, 0].mean() - mesh_io.to_world(
        mesh_io.matrix_to_numpy(obj.matrix_world), np.array([[rest, 0.0, 0.0]]))[0, 0]
    return float(rigs.bone_offset(rig)[0] - moved)


def test_the_sheet_on_the_bone_swings_like_blenders_cloth_and_is_shown_once(scene):
    scene.render.fps = 24
    ours, our_rig = hanging_sheet("Ours", 0.0)
    theirs, their_rig = hanging_sheet("Blender", 4.0)
    theirs.modifiers.new("Cloth", "CLOTH").settings.vertex_group_mass = "Pins"  # after the Armature
    scene.frame_set(1)
    make_addon_cloth(ours)
    assert [m.name for m in ours.modifiers] == ["Armature", stage.MODIFIER]
    rest = mesh_io.to_world(mesh_io.matrix_to_numpy(ours.matrix_world), mesh_io.read_positions(ours.data))
    lag, blender_lag = {}, {}
    for frame in range(1, LAST + 1):
        scene.frame_set(frame)
        world = evaluated_world(ours)
        # the pins ride on the deformed mesh: the rest top row carried by the bone
        pins = rest[:COLUMNS] + rigs.bone_offset(our_rig)
        assert np.abs(world[:COLUMNS] - pins).max() < 1e-3, frame
        # what is shown is the simulation itself, not moved by the Armature again
        simulated = store.find(ours.session_uid).cache[frame]
        assert np.abs(world - simulated).max() < 1e-5, frame
        lag[frame], blender_lag[frame] = bottom_lag(ours, our_rig), bottom_lag(theirs, their_rig)
    print("lag by frame, ours / Blender's (m):",
          {frame: (round(lag[frame], 4), round(blender_lag[frame], 4)) for frame in (6, 12, 24, 30)})
    assert lag[6] > 0.005 and blender_lag[6] > 0.0, "the bottom row lags the bone, as in Blender"
    assert min(lag.values()) < 0.0 < max(lag.values()), "it swings past the bone and back"
    largest, blenders = max(lag.values()), max(blender_lag.values())
    assert 0.5 * blenders <= largest <= 2.0 * blenders, (largest, blenders)


def test_modifiers_below_the_stage_apply_to_the_result(scene):
    sheet, rig = hanging_sheet("Sheet", 0.0)
    subdivision = sheet.modifiers.new("Subdivision", "SUBSURF")
    make_addon_cloth(sheet)
    assert [m.name for m in sheet.modifiers] == ["Armature", stage.MODIFIER, "Subdivision"]
    play(scene, 12, first=1)
    simulated = store.find(sheet.session_uid).cache[12]
    pins = mesh_io.to_world(mesh_io.matrix_to_numpy(sheet.matrix_world),
                            mesh_io.read_positions(sheet.data)[:COLUMNS]) + rigs.bone_offset(rig)
    assert np.abs(simulated[:COLUMNS] - pins).max() < 1e-3
    smooth = evaluated_world(sheet)
    assert len(smooth) > len(simulated), "the Subdivision below the stage still subdivides"
    subdivision.show_viewport = False
    np.testing.assert_allclose(evaluated_world(sheet), simulated, rtol=0, atol=1e-5)
    # the subdivided surface wraps the simulated one, not the Armature's pose
    assert np.abs(smooth.mean(axis=0) - simulated.mean(axis=0)).max() < 0.01


def test_the_stage_moved_above_the_armature_simulates_the_rest_pose(scene):
    sheet, rig = hanging_sheet("Sheet", 0.0)
    make_addon_cloth(sheet)
    sheet.modifiers.move(1, 0)  # the user drags the stage to the top, as Blender's Cloth
    assert [m.name for m in sheet.modifiers] == [stage.MODIFIER, "Armature"]
    play(scene, 12, first=1)
    simulated = store.find(sheet.session_uid).cache[12]
    rest = mesh_io.to_world(mesh_io.matrix_to_numpy(sheet.matrix_world), mesh_io.read_positions(sheet.data))
    assert np.abs(simulated[:COLUMNS] - rest[:COLUMNS]).max() < 1e-6, "nothing above the stage moves the pins"
    # the Armature below carries the simulated (hanging, unmoved) sheet along with the bone
    np.testing.assert_allclose(evaluated_world(sheet), simulated + rigs.bone_offset(rig), rtol=0, atol=1e-5)


def stack(obj) -> dict:
    """Everything of the stack a bake may touch: modifiers with their switches, shape keys with
    their mute flags and values, the Basis and the mesh."""
    keys = obj.data.shape_keys
    return {"modifiers": [(m.name, m.type, m.show_viewport, m.show_render) for m in obj.modifiers],
            "keys": keys and [(b.name, b.mute, b.value, raw_key(b).tobytes()) for b in keys.key_blocks],
            "vertices": raw_vertices(obj.data).tobytes(),
            "attributes": sorted(a.name for a in obj.data.attributes if not a.name.startswith("."))}


def test_bakes_of_the_rigged_sheet_play_back_as_live_without_the_addon(scene, tmp_path, addon):
    sheet, rig = hanging_sheet("Sheet", 0.0)
    # one of the user's own animated keys (a shape key drives the cloth too): the bake must not
    # add it to the baked shapes a second time
    sheet.shape_key_add(name="Basis", from_mix=False)
    bulge = sheet.shape_key_add(name="Bulge", from_mix=False)
    co = raw_key(bulge).reshape(-1, 3)
    co[:, 1] += 0.1 * np.sin(np.pi * np.linspace(0, 1, len(co)))
    bulge.data.foreach_set("co", co.ravel())
    bulge.value = 0.0
    bulge.keyframe_insert("value", frame=1)
    bulge.value = 1.0
    bulge.keyframe_insert("value", frame=LAST)
    sheet.modifiers.new("Subdivision", "SUBSURF").levels = 1
    make_addon_cloth(sheet, cache_directory=str(tmp_path))
    live = {}
    for frame in range(1, LAST + 1):
        scene.frame_set(frame)
        live[frame] = evaluated_world(sheet)
    before = stack(sheet)
    worst = {}
    for target in ("SHAPE_KEYS", "PC2"):
        sheet.cloth_addon.bake_target = target
        select_only(sheet)
        assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
        if target == "PC2":
            assert [m.name for m in sheet.modifiers] == ["Armature", stage.MODIFIER, ids.CACHE_MODIFIER,
                                                        "Subdivision"]
            assert read_pc2(str(tmp_path / "Sheet.pc2")).shape == (LAST, COLUMNS * ROWS, 3)
        else:
            armature = sheet.modifiers["Armature"]
            assert not (armature.show_viewport or armature.show_render), "the bake replaces the Armature"
            assert sheet.data.shape_keys.key_blocks["Bulge"].mute
        addon.unregister()  # a baked character plays back in Blender alone
        try:
            for frame in range(LAST, 0, -1):  # every frame, backwards: no playback order needed
                scene.frame_set(frame)
                error = np.abs(evaluated_world(sheet) - live[frame]).max()
                worst[target] = max(worst.get(target, 0.0), error)
                assert error < 1e-4, (target, frame, error)
        finally:
            addon.register()
        select_only(sheet)
        assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
        scene.frame_set(LAST)  # where `before` was taken: the Bulge's value is animated
        assert stack(sheet) == before, target
    print("baked playback's largest distance from live (m):", worst)
    scene.frame_set(1)
    play(scene, 6)
    np.testing.assert_allclose(evaluated_world(sheet), live[6], rtol=0, atol=1e-6)


def test_dynamic_mesh_rests_in_the_deformed_shape(scene):
    """A free sheet, no gravity, whose bone scales the mesh 1.5 times: the cloth keeps its own size
    unless Dynamic Mesh makes the deformed mesh its rest shape. Its springs resist being short as
    much as being long (Compression 1): growing, a sheet is pushed out by springs shorter than
    their new rest length, and cloth's soft compression (0.3) lets it wrinkle instead, slowly."""
    scene.use_gravity = False
    sizes = {}
    for dynamic in (False, True):
        x = 4.0 * dynamic
        rig = rigs.one_bone_rig(f"Rig{dynamic}", head=(x, 0.0, 0.8), tail=(x, 0.0, 2.0))
        pose = rig.pose.bones["Bone"]
        pose.keyframe_insert("scale", frame=1)
        pose.scale = (1.5, 1.5, 1.5)
        pose.keyframe_insert("scale", frame=10)
        sheet = rigs.grid_mesh(f"Sheet{dynamic}", 8, 8, 0.6, 0.6, 1.6)
        sheet.location.x = x
        rigs.skin(sheet, rig)
        make_addon_cloth(sheet, pin_group="", use_dynamic_mesh=dynamic, compression=1.0)
        sizes[dynamic] = sheet
    play(scene, LAST, first=1)
    extent = {dynamic: np.ptp(evaluated_world(sheet)[:, [0, 2]], axis=0) for dynamic, sheet in sizes.items()}
    np.testing.assert_allclose(extent[False], 0.6, rtol=0.03)
    np.testing.assert_allclose(extent[True], 0.9, rtol=0.05)


def test_frames_jumped_over_are_played_again_from_the_start(scene):
    """A jump forward cannot follow the bone between the two frames (its pins move in a straight
    line); back at the start those frames are dropped, so playing shows the bone's own path."""
    sheet, _ = hanging_sheet("Sheet", 0.0)
    make_addon_cloth(sheet)
    play(scene, 20, first=1)
    stepped = evaluated_world(sheet)
    select_only(sheet)
    assert bpy.ops.cloth_addon.reset() == {"FINISHED"}
    scene.frame_set(20)  # a jump: 19 frames with straight-line pins
    assert np.abs(evaluated_world(sheet) - stepped).max() > 1e-3
    play(scene, 20, first=1)
    np.testing.assert_allclose(evaluated_world(sheet), stepped, rtol=0, atol=1e-6)


def test_a_subdivision_above_the_stage_is_reported(scene):
    sheet, _ = hanging_sheet("Sheet", 0.0)
    make_addon_cloth(sheet)
    sheet.modifiers.new("Subdivision", "SUBSURF")
    sheet.modifiers.move(2, 0)  # above the stage: the cloth would see other vertices than its own
    scene.frame_set(2)
    assert "changes the vertices in a way the cloth cannot follow" in store.errors[sheet.session_uid]
    sheet.modifiers.move(0, 2)  # below it again: fine
    scene.frame_set(1)
    scene.frame_set(2)
    assert sheet.session_uid not in store.errors
