"""The built zips: which wheels they bundle, and that the linux zip installs with Blender's own
installer and runs from bl_ext on the bundled scipy and cholespy."""

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PYTHON = "{}.{}".format(*sys.version_info[:2])


def load_build_tool():
    spec = importlib.util.spec_from_file_location("cloth_addon_build_tool", ROOT / "tools" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_tool = load_build_tool()


def test_the_manifests_wheels_load_on_the_minimum_os_the_readme_states():
    stated = build_tool.stated_minimums()
    assert stated["linux-x64"] == (2, 28) and stated["macos-arm64"] == (12, 0)
    wheels = build_tool.manifest_wheels()
    assert build_tool.os_problems(wheels) == []
    for name in wheels:
        needs = build_tool.wheel_minimum_os(name)
        platform = build_tool.wheel_platform(name)
        assert needs is None if platform == "windows-x64" else needs <= stated[platform], name


def test_wheel_tags_give_the_oldest_os_they_load_on():
    assert build_tool.wheel_minimum_os("scipy-1.15.3-cp311-cp311-macosx_14_0_arm64.whl") == (14, 0)
    assert build_tool.wheel_minimum_os(
        "scipy-1.15.3-cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64.whl") == (2, 17)
    assert build_tool.wheel_minimum_os(
        "cholespy-2.2.0-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl") == (2, 27)
    assert build_tool.wheel_minimum_os("scipy-1.17.1-cp313-cp313-win_amd64.whl") is None
    # A wheel that needs macOS 14 breaks a README that states 12.
    assert build_tool.os_problems(["scipy-1.15.3-cp311-cp311-macosx_14_0_arm64.whl"]) != []


def test_each_python_bundles_what_the_requirements_pin_for_it():
    wheels = build_tool.manifest_wheels()
    for python in build_tool.PYTHONS:
        for name, version in build_tool.bundle_pins(python):
            for platform in ("linux-x64", "windows-x64", "macos-arm64"):
                serving = [w for w in wheels if w.startswith(f"{name}-{version}-") and
                           build_tool.wheel_platform(w) == platform and serves(w, python)]
                assert len(serving) == 1, (name, version, python, platform, serving)


def serves(wheel: str, python: str) -> bool:
    """Whether Blender's Python `python` can load this CPython wheel (exact, or abi3 from its tag on)."""
    interpreter, abi = wheel.split("-")[2:4]
    wanted = "cp" + python.replace(".", "")
    return interpreter == wanted or (abi == "abi3" and int(interpreter[2:]) <= int(wanted[2:]))


def test_a_wheel_too_new_for_the_stated_minimum_fails_the_build_saying_what_it_needs():
    # scipy has no Apple-silicon wheel for macOS 11: asking for one must fail, not pick 12 quietly.
    with pytest.raises(SystemExit, match=r"no wheel loads on macOS 11\.0.*oldest needs macOS 12\.0"):
        build_tool.choose_wheel("scipy", "1.15.3", "3.11", "macos-arm64", (11, 0))


def packages_without(hidden: tuple[str, ...], folder: Path) -> Path:
    """This environment's packages minus `hidden`, as in a Blender that does not ship them."""
    folder.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.split("-")[0].split(".")[0].lower() not in hidden:
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="installs the linux-x64 zip")
def test_built_zip_installs_and_runs_from_bl_ext_on_its_bundled_wheels(tmp_path):
    zips = build_tool.build(tmp_path / "dist", ["linux-x64"], update_manifest=False)
    assert [z.name for z in zips] == [zips[0].name] and zips[0].name.endswith("linux_x64.zip")
    user = tmp_path / "user"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["BLENDER_USER_RESOURCES"] = str(user)
    # Blender appends the extensions' site-packages after the interpreter's own, so the check runs
    # without the site (-S) and on packages without scipy and cholespy: only the bundled ones exist.
    env["PYTHONPATH"] = str(packages_without(("scipy", "cholespy"), tmp_path / "packages"))
    # bpy can be imported once per process, and the installed add-on must not see the repository.
    result = subprocess.run([sys.executable, "-S", str(HERE / "install_check.py"), str(zips[0])],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "OK", result.stdout[-3000:]
    assert "bl_ext.user_default.cloth_addon" in lines
    assert (user / "extensions" / "user_default" / "cloth_addon" / "core").is_dir()
    # Blender unpacked this Python's wheels into the extensions' site-packages, and the add-on ran on them.
    site = (user / "extensions" / ".local" / "lib" / f"python{PYTHON}" / "site-packages").resolve()
    pins = dict(build_tool.bundle_pins(PYTHON))
    for name in ("scipy", "cholespy"):
        (line,) = [line for line in lines if line.startswith(f"{name} ")]
        _, version, path = line.split(" ", 2)
        assert version == pins[name], line
        assert Path(path).resolve().is_relative_to(site), line
    assert [line for line in lines if line.startswith("warning ")] == []
