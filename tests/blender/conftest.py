"""Shared fixtures for tests in the real Blender (PyPI bpy, background mode).

bpy can be imported once per process, so the add-on is registered once per session and every
test starts from a fresh factory scene. `python build.py test --blender 4.2` runs the same suite
on another Blender series.
"""

import os
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import cloth_addon  # noqa: E402
from cloth_addon.blender import mesh_io  # noqa: E402
from cloth_addon.blender.selection import select_only  # noqa: E402

EXIT_STATUS = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"ran on Blender {bpy.app.version_string} (PyPI bpy), Python "
                                f"{platform.python_version()}, numpy {np.__version__}")


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Leave with pytest's own result once it is reported.

    bpy can crash (4.2) or hang (4.5) in its own shutdown after every test has passed; by now the
    summary is printed and the status is pytest's, so skipping the interpreter's shutdown neither
    hides a failure nor turns a pass red."""
    status = config.stash.get(EXIT_STATUS, None)
    if status is None:
        return
    config.get_terminal_writer().flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@pytest.fixture(scope="session", autouse=True)
def addon():
    cloth_addon.register()
    yield cloth_addon
    cloth_addon.unregister()


@pytest.fixture
def scene(addon):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy.context.scene


def make_grid(cuts=6, size=1.0, location=(0.0, 0.0, 1.0), rotation=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0),
              name="Cloth"):
    """A square grid of cuts x cuts vertices, selected and active, with the given transform."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=size, location=location,
                                    rotation=rotation, scale=scale)
    obj = bpy.context.active_object
    obj.name = name
    return obj


def pin(obj, indices, name="Pins"):
    group = obj.vertex_groups.new(name=name)
    group.add([int(i) for i in indices], 1.0, "REPLACE")
    obj.cloth_addon.pin_group = name
    return group


def make_cloth(obj, solver="FAST_MASS_SPRING", **settings):
    select_only(obj)
    obj.cloth_addon.solver = solver
    for field, value in settings.items():
        setattr(obj.cloth_addon, field, value)
    assert bpy.ops.cloth_addon.make_cloth() == {"FINISHED"}
    return obj


def play(scene, last, first=None):
    """Step the scene frame by frame, as playback does."""
    for frame in range(scene.frame_current + 1 if first is None else first, last + 1):
        scene.frame_set(frame)


def evaluated_local(obj) -> np.ndarray:
    """(n, 3) float64 vertex positions of the evaluated object (shape keys + modifiers), local space."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        return mesh_io.read_positions(mesh)
    finally:
        evaluated.to_mesh_clear()


def evaluated_world(obj) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    matrix = mesh_io.matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)
    return mesh_io.to_world(matrix, evaluated_local(obj))


def action_fcurves(id_data):
    """The f-curves animating `id_data`: the action's own before Blender 4.4, its channelbag since."""
    anim = id_data.animation_data
    if bpy.app.version < (4, 4, 0):
        return anim.action.fcurves
    return anim.action.layers[0].strips[0].channelbag(anim.action_slot).fcurves


def raw_key(block) -> np.ndarray:
    buffer = np.empty(len(block.data) * 3, dtype=np.float32)
    block.data.foreach_get("co", buffer)
    return buffer


def raw_vertices(mesh) -> np.ndarray:
    buffer = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", buffer)
    return buffer
