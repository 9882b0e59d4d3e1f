"""The headless bake command (`blender -b shot.blend -c cloth_addon bake ...`), called as Blender
calls it: with the arguments after the command id."""

import os

import bpy
import numpy as np
import pytest
from conftest import make_cloth, make_grid, pin, raw_key, select_only

from cloth_addon.blender import bake, cli, ids
from cloth_addon.core.pc2 import read_pc2


@pytest.fixture
def shot(scene, tmp_path):
    """A saved .blend with one pinned cloth (frames 1-8) and a plain mesh; returns its path."""
    obj = make_grid(cuts=6)
    pin(obj, [0, 5])
    make_cloth(obj, frame_start=1, frame_end=8)
    make_grid(cuts=3, name="Prop", location=(3.0, 0.0, 0.0))
    path = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


def reopen(path):
    bpy.ops.wm.open_mainfile(filepath=path)
    return bpy.data.objects["Cloth"]


def baked_keys(obj):
    blocks = obj.data.shape_keys.key_blocks
    return {b.name: raw_key(b) for b in blocks if b.name.startswith(ids.BAKE_KEY_PREFIX)}


def test_command_bakes_shape_keys_identical_to_the_bake_operator(shot, capsys):
    obj = reopen(shot)
    select_only(obj)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    expected = baked_keys(obj)
    assert len(expected) == 8
    obj = reopen(shot)
    assert cli.execute(["bake"]) == 0
    got = baked_keys(obj)
    assert list(got) == list(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])
    out = capsys.readouterr().out
    assert "frame 1 (1/8)" in out and "frame 8 (8/8)" in out and "baked Cloth to 8 shape keys" in out


def test_command_bakes_pc2_identical_to_the_bake_operator_and_saves(shot):
    obj = reopen(shot)
    obj.cloth_addon.bake_target = "PC2"
    select_only(obj)
    assert bpy.ops.cloth_addon.bake() == {"FINISHED"}
    path = bake.cache_path(obj)
    expected = read_pc2(path).copy()
    obj = reopen(shot)
    os.remove(path)
    assert cli.execute(["bake", "--objects", "Cloth", "--target", "pc2", "--frames", "1", "8", "--save"]) == 0
    np.testing.assert_array_equal(read_pc2(path), expected)
    obj = reopen(shot)  # saved: the bake is in the file
    assert obj.cloth_addon.is_baked and obj.modifiers.get(ids.CACHE_MODIFIER) is not None


def test_command_frames_and_rebake(shot):
    obj = reopen(shot)
    assert cli.execute(["bake", "--frames", "2", "4"]) == 0
    assert sorted(baked_keys(obj)) == [f"{ids.BAKE_KEY_PREFIX}.{f:04d}" for f in (2, 3, 4)]
    assert cli.execute(["bake"]) == 1  # already baked
    assert cli.execute(["bake", "--rebake", "--frames", "1", "3"]) == 0
    assert sorted(baked_keys(obj)) == [f"{ids.BAKE_KEY_PREFIX}.{f:04d}" for f in (1, 2, 3)]


@pytest.mark.parametrize("argv, message", [
    (["bake", "--objects", "Nobody"], "no object named 'Nobody'"),
    (["bake", "--objects", "Prop"], "'Prop' is not cloth"),
    (["bake", "--frames", "9", "3"], "--frames END (3) is before START (9)"),
    (["bake", "--target", "ALEMBIC"], "invalid choice: 'ALEMBIC'"),
    (["bake", "--frames", "1"], "expected 2 arguments"),
    (["render"], "invalid choice: 'render'"),
    ([], "expected a command: bake"),
])
def test_bad_input_fails_with_a_message_and_exit_code_1(shot, capsys, argv, message):
    obj = reopen(shot)
    assert cli.execute(argv) == 1
    assert message in capsys.readouterr().err
    assert not obj.cloth_addon.is_baked


def test_no_cloth_and_unsaved_files_fail_with_a_message(scene, capsys):
    make_grid(name="Plain")
    assert cli.execute(["bake"]) == 1
    assert "has no cloth objects" in capsys.readouterr().err
    obj = make_cloth(make_grid(cuts=4), frame_start=1, frame_end=3)
    obj.cloth_addon.bake_target = "PC2"
    assert cli.execute(["bake"]) == 1
    assert "save the .blend file or choose a Cache Folder" in capsys.readouterr().err
    assert cli.execute(["bake", "--target", "SHAPE_KEYS", "--save"]) == 1
    assert "--save needs a saved .blend file" in capsys.readouterr().err
    assert not obj.cloth_addon.is_baked


def test_the_command_is_registered_with_blender(capfd):
    """Blender knows the command `-c cloth_addon`: registering that name again is a duplicate."""
    capfd.readouterr()
    handle = bpy.utils.register_cli_command(cli.COMMAND, lambda argv: 0)
    try:
        assert f'duplicate command "{cli.COMMAND}"' in "".join(capfd.readouterr())
    finally:
        bpy.utils.unregister_cli_command(handle)
