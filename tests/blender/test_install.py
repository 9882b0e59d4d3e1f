"""The built zips: which wheels they bundle, and that the linux zip installs with Blender's own
installer and runs from bl_ext on the bundled scipy and cholespy."""

import importlib.util
import os
import subprocess
import sys
import sysconfig
import zipfile
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


def test_the_manifests_wheels_load_on_the_minimum_os_the_install_page_states():
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
    # A wheel that needs macOS 14 breaks an install page that states 12.
    assert build_tool.os_problems(["scipy-1.15.3-cp311-cp311-macosx_14_0_arm64.whl"]) != []


def test_each_python_bundles_what_the_requirements_pin_for_it():
    wheels = build_tool.manifest_wheels()
    for python in build_tool.PYTHONS:
        for name, version in build_tool.bundle_pins(python):
            for platform in ("linux-x64", "windows-x64", "macos-arm64"):
                serving = [w for w in wheels if w.startswith(f"{name}-{version}-") and
                           build_tool.selected(w, [platform], python)]
                assert len(serving) == 1, (name, version, python, platform, serving)


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


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The linux zips, by name: the one for every Blender, and one per Python (per_blender)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("installs the linux-x64 zips")
    output = tmp_path_factory.mktemp("dist")
    zips = build_tool.build(output, ["linux-x64"], update_manifest=False, per_blender=True)
    return {z.name: z for z in zips}


def install_check(zip_path: Path, tmp_path: Path, *flags: str) -> list[str]:
    """install_check.py's output lines, from a fresh Blender with no scipy or cholespy of its own."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["BLENDER_USER_RESOURCES"] = str(tmp_path / "user")
    # Blender appends the extensions' site-packages after the interpreter's own, so the check runs
    # without the site (-S) and on packages without scipy and cholespy: only the bundled ones exist.
    env["PYTHONPATH"] = str(packages_without(("scipy", "cholespy"), tmp_path / "packages"))
    # bpy can be imported once per process, and the installed add-on must not see the repository.
    result = subprocess.run([sys.executable, "-S", str(HERE / "install_check.py"), *flags, str(zip_path)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout.splitlines()


@pytest.mark.parametrize("label", ["", "-" + build_tool.BLENDER_RANGES[PYTHON][2]], ids=["all", "own"])
def test_built_zip_installs_and_runs_from_bl_ext_on_its_bundled_wheels(built, tmp_path, label):
    (name,) = [n for n in built if n.endswith(f"linux_x64{label}.zip")]
    lines = install_check(built[name], tmp_path)
    assert lines[-1] == "OK", lines[-20:]
    assert "bl_ext.user_default.cloth_addon" in lines
    user = tmp_path / "user"
    assert (user / "extensions" / "user_default" / "cloth_addon" / "core").is_dir()
    # Blender unpacked this Python's wheels into the extensions' site-packages, and the add-on ran on them.
    site = (user / "extensions" / ".local" / "lib" / f"python{PYTHON}" / "site-packages").resolve()
    pins = dict(build_tool.bundle_pins(PYTHON))
    for package in ("scipy", "cholespy"):
        (line,) = [line for line in lines if line.startswith(f"{package} ")]
        _, version, path = line.split(" ", 2)
        assert version == pins[package], line
        assert Path(path).resolve().is_relative_to(site), line
    assert [line for line in lines if line.startswith("warning ")] == []


def test_the_zip_for_the_other_python_is_refused_by_this_blender(built, tmp_path):
    (other,) = [python for python in build_tool.PYTHONS if python != PYTHON]
    (name,) = [n for n in built if n.endswith(build_tool.BLENDER_RANGES[other][2] + ".zip")]
    with zipfile.ZipFile(built[name]) as archive:
        wheels = [Path(n).name for n in archive.namelist() if n.endswith(".whl")]
    assert wheels and all(build_tool.serves(w, other) and not build_tool.serves(w, PYTHON) for w in wheels)
    assert install_check(built[name], tmp_path, "--refused")[-1] == "REFUSED"
    assert not (tmp_path / "user" / "extensions" / "user_default" / "cloth_addon").exists()
