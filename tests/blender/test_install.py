"""The built linux zip installs with Blender's own installer and runs from bl_ext."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def load_build_tool():
    spec = importlib.util.spec_from_file_location("cloth_addon_build_tool", ROOT / "tools" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="installs the linux-x64 zip")
def test_built_zip_installs_and_make_cloth_runs_from_bl_ext(tmp_path):
    zips = load_build_tool().build(tmp_path / "dist", ["linux-x64"])
    assert [z.name for z in zips] == [zips[0].name] and zips[0].name.endswith("linux_x64.zip")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["BLENDER_USER_RESOURCES"] = str(tmp_path / "user")
    # bpy can be imported once per process, and the installed add-on must not see the repository.
    result = subprocess.run([sys.executable, str(HERE / "install_check.py"), str(zips[0])], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.split()
    assert lines[-2:] == ["bl_ext.user_default.cloth_addon", "OK"]
    assert (tmp_path / "user" / "extensions" / "user_default" / "cloth_addon" / "core").is_dir()
    # Blender unpacked the bundled wheels for this Python into the extensions' site-packages.
    python = "python{}.{}".format(*sys.version_info[:2])
    site = tmp_path / "user" / "extensions" / ".local" / "lib" / python / "site-packages"
    assert {"scipy", "cholespy"} <= {p.name for p in site.iterdir()}
