"""Run in a fresh process: install a built zip with Blender's installer and use the add-on from it.

    python -S install_check.py <zip>     (BLENDER_USER_RESOURCES pointing to a temporary folder,
                                          PYTHONPATH to packages without scipy and cholespy)
Prints the installed module's name, where scipy and cholespy were imported from (with their
versions), each warning raised from the installed files, and "OK" when the cloth fell.

    python -S install_check.py --refused <zip>
Prints "REFUSED" when Blender's installer declined the zip (made for other Blender versions).
"""

import importlib
import importlib.metadata
import os
import sys
import warnings
from pathlib import Path

import bpy
import numpy as np


def main(zip_path: str) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                          enable_on_install=True)
        assert result == {"FINISHED"}, result
        module = importlib.import_module("bl_ext.user_default.cloth_addon")
        assert "cloth_addon" not in sys.modules, "the repository's package must not be importable here"
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, location=(0.0, 0.0, 1.0))
        obj = bpy.context.active_object
        assert bpy.ops.cloth_addon.make_cloth() == {"FINISHED"}
        assert type(obj.cloth_addon).__module__.startswith("bl_ext.user_default.cloth_addon.")
        for frame in range(2, 6):
            bpy.context.scene.frame_set(frame)
    result = obj.data.attributes["cloth_addon_result"]
    z = np.empty(len(result.data) * 3, dtype=np.float32)
    result.data.foreach_get("vector", z)
    assert z[2::3].max() < -0.05, z[2::3]
    print(module.__name__)
    for name in ("scipy", "cholespy"):
        print(name, importlib.metadata.version(name), sys.modules[name].__file__)
    installed = Path(os.environ["BLENDER_USER_RESOURCES"]).resolve()
    for warning in caught:
        if Path(warning.filename).resolve().is_relative_to(installed):
            print("warning", warning.category.__name__, warning.message)
    print("OK")


def refused(zip_path: str) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    # The installer reports an incompatible package and finishes without installing it.
    bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
    try:
        importlib.import_module("bl_ext.user_default.cloth_addon")
    except ImportError:
        print("REFUSED")


if __name__ == "__main__":
    refused(sys.argv[-1]) if "--refused" in sys.argv else main(sys.argv[-1])
    sys.stdout.flush()
    # bpy 4.2 can crash in its own shutdown after all is done; the result is printed above.
    os._exit(0)
