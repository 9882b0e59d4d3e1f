"""The demo's rigged character (tools/character.py): its cape never passes through its body and
its pins ride on the shoulders, in every frame."""

from tools import character


def test_the_demo_cape_stays_out_of_the_body_and_on_the_shoulders(addon):
    ours, _ = character.character_scene(character.FRAMES, blender_twin=False)
    measured = character.play_and_measure(ours, None, character.FRAMES)
    assert len(measured["ours"]) == character.FRAMES
    assert all(frame == (0, 0) for frame in measured["ours"]), measured["ours"]
    assert measured["pin_error"] < 1e-3
    _, rig, cape = ours
    # the cape moved with the turning character: its hem is far from where it hung at rest
    assert abs(rig.pose.bones["Spine"].rotation_euler.y) > 0.5
    hem = character.world_positions(cape)[-character.CAPE_COLUMNS:].mean(axis=0)
    assert abs(hem[0]) > 0.1 or abs(hem[1] - 0.2) > 0.1, hem
