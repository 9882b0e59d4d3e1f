"""Bakes: shape keys with 0 -> 1 -> 0 keyframes, PC2 + Mesh Cache, and freeing them exactly."""

import os

import bpy
import numpy as np
import pytest
from conftest import (
    action_fcurves,
    evaluated_local,
    make_cloth,
    make_grid,
    pin,
    play,
    raw_key,
    raw_vertices,
    select_only,
)

from cloth_addon.blender import bake, ids, stage
from cloth_addon.core.pc2 import read_pc2

FIRST, LAST = 1, 8
# m: a float32 coordinate's spacing at a few metres (2^-22 at 2-4 m), the most a key mix rounds off
FLOAT32_STEP = 2.0**-22


@pytest.fixture
def cloth(scene):
    obj = make_grid(cuts=6)
    pin(obj, [0, 5])
    make_cloth(obj, frame_start=FIRST, frame_end=LAST)
    return obj


def live_frames(scene, obj):
    """Evaluated local positions of every frame, played live."""
    frames = {}
    for frame in range(FIRST, LAST + 1):
        scene.frame_set(frame)
        frames[frame] = evaluated_local(obj)
    return frames


def snapshot(obj):
    """Everything a bake may touch, to compare before and after."""
    keys = obj.data.shape_keys
    anim = keys.animation_data if keys else None
    blocks = keys.key_blocks if keys else ()
    return {"keys": [(b.name, b.value, b.mute, raw_key(b).tobytes()) for b in blocks],
            "action": anim.action.name if anim and anim.action else None,
            "anim_data": anim is not None,
            "actions": sorted(a.name for a in bpy.data.actions),
            "modifiers": [(m.name, m.type) for m in obj.modifiers],
            "shape": evaluated_local(obj).tobytes()}


def keyframes(obj, name):
    fcurves = action_fcurves(obj.data.shape_keys)
    curve = fcurves.find(f'key_blocks["{name}"].value', index=0)
    points = np.empty(len(curve.keyframe_points) * 2, dtype=np.float32)
    curve.keyframe_points.foreach_get("co", points)
    return points.reshape(-1, 2), [p.interpolation for p in curve.keyframe_points]


def test_bake_to_shape_keys_matches_live_playback(scene, cloth):
    live = live_frames(scene, cloth)
    scene.frame_set(3)
    vertices = raw_vertices(cloth.data)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    assert scene.frame_current == 3
    names = [b.name for b in cloth.data.shape_keys.key_blocks if b.name.startswith(ids.BAKE_KEY_PREFIX)]
    assert names == [f"{ids.BAKE_KEY_PREFIX}.{f:04d}" for f in range(FIRST, LAST + 1)]
    for frame, name in zip(range(FIRST, LAST + 1), names, strict=True):
        points, interpolation = keyframes(cloth, name)
        assert points.tolist() == [[frame - 1, 0.0], [frame, 1.0], [frame + 1, 0.0]]
        assert interpolation == ["LINEAR"] * 3
    for frame in (LAST, FIRST, 5, 2):  # out of order: the bake does not depend on playback
        scene.frame_set(frame)
        # the keys hold the shown float32 coordinates; Blender mixes a relative key as
        # basis + value (key - basis) in float32, which can land one float32 step off the key
        np.testing.assert_allclose(evaluated_local(cloth), live[frame], rtol=0, atol=FLOAT32_STEP,
                                   err_msg=f"frame {frame}")
    # the Basis the bake added is the mesh, which is untouched
    assert np.array_equal(raw_key(cloth.data.shape_keys.reference_key), vertices)
    assert np.array_equal(raw_vertices(cloth.data), vertices)


def test_bake_to_pc2_plays_the_same_positions(scene, cloth, tmp_path):
    cloth.cloth_addon.bake_target = "PC2"
    cloth.cloth_addon.cache_directory = str(tmp_path)
    live = live_frames(scene, cloth)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    path = tmp_path / "Cloth.pc2"
    samples = read_pc2(str(path))
    assert samples.shape == (LAST - FIRST + 1, len(cloth.data.vertices), 3)
    assert [m.name for m in cloth.modifiers] == [stage.MODIFIER, ids.CACHE_MODIFIER]
    modifier = cloth.modifiers[1]
    assert modifier.type == "MESH_CACHE" and modifier.cache_format == "PC2"
    for frame in (LAST, FIRST, 4):
        scene.frame_set(frame)
        # live frames and the PC2 file hold the same float32 result
        np.testing.assert_allclose(evaluated_local(cloth), live[frame], rtol=0, atol=1e-6, err_msg=str(frame))
        np.testing.assert_allclose(samples[frame - FIRST], live[frame], rtol=0, atol=1e-6)


@pytest.mark.parametrize("target", ["SHAPE_KEYS", "PC2"])
def test_free_bake_restores_the_object_exactly(scene, cloth, tmp_path, target):
    cloth.cloth_addon.bake_target = target
    cloth.cloth_addon.cache_directory = str(tmp_path)
    play(scene, 4)
    before = snapshot(cloth)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    assert cloth.cloth_addon.is_baked
    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    assert snapshot(cloth) == before
    assert not cloth.cloth_addon.is_baked
    assert os.listdir(tmp_path) == []


def test_free_bake_keeps_the_users_own_shape_key_animation(scene, cloth):
    smile = cloth.shape_key_add(name="Smile", from_mix=False)
    smile.value = 0.25
    smile.keyframe_insert("value", frame=1)
    before = snapshot(cloth)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    assert cloth.data.shape_keys.animation_data.action.name == before["action"]
    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    assert snapshot(cloth) == before
    assert keyframes(cloth, "Smile")[0].tolist() == [[1.0, 0.25]]


def test_cancelled_bake_leaves_the_object_as_before(scene, cloth):
    play(scene, 2)
    before = snapshot(cloth)
    baker = bake.Baker(bpy.context, [cloth])
    for _ in range(4):
        baker.step()
    baker.cancel()
    assert scene.frame_current == 2
    assert snapshot(cloth) == before


def test_baked_file_reloads_and_frees(scene, cloth, tmp_path):
    live = live_frames(scene, cloth)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Cloth"]
    bpy.context.scene.frame_set(6)
    np.testing.assert_allclose(evaluated_local(obj), live[6], rtol=0, atol=FLOAT32_STEP)
    select_only(obj)
    assert bpy.ops.cloth_addon.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None, "the Basis the bake added went with it"
    play(bpy.context.scene, 8, first=1)  # the live simulation is rebuilt after the load
    assert np.allclose(evaluated_local(obj), live[8], atol=1e-6)
    assert stage.RESULT_ATTRIBUTE in obj.data.attributes


def test_invoked_bake_runs_synchronously_in_background(scene, cloth):
    assert bpy.app.background
    assert bpy.ops.cloth_addon.bake("INVOKE_DEFAULT") == {"FINISHED"}
    assert cloth.cloth_addon.is_baked
    baked = [b for b in cloth.data.shape_keys.key_blocks if b.name.startswith(ids.BAKE_KEY_PREFIX)]
    assert len(baked) == LAST - FIRST + 1
