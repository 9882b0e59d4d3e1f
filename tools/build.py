"""`python build.py`: build the installable extension zips into dist/, one per platform.

    requirements.txt  ->  the scipy and cholespy versions to bundle, per Python (its markers)
    pip, per platform and Python  ->  the wheel with the broadest platform tag (oldest OS), which
        must load on the minimum OS docs/INSTALL.md states; blender_manifest.toml's `wheels` is
        rewritten to those files
    wheels/  <- those wheels, downloaded once (git-ignored)
    dist/stage/<all|pythonX.Y>/cloth_addon/  <- manifest + the package's contents + the wheels
    dist/cloth_addon-<version>-<platform>.zip  <- Blender's builder, --split-platforms
    dist/cloth_addon-<version>-<platform>-blender4.2-5.0.zip, ...-blender5.1+.zip  <- with
        --per-blender: one Python's wheels each, limited to the Blender versions that embed it

Blender wants the manifest and __init__.py at the top of the zip, while the repository keeps the
manifest at its root and the package in cloth_addon/, hence the staging folder.
"""

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "blender_manifest.toml"
INSTALL_DOC = ROOT / "docs" / "INSTALL.md"
REQUIREMENTS = ROOT / "requirements.txt"
PACKAGE = ROOT / "cloth_addon"
WHEELS = ROOT / "wheels"
DIST = ROOT / "dist"

# The Pythons Blender embeds (build.py's blender_python), each with the Blender versions that embed
# it (the manifest's min and exclusive max) and the label of its `--per-blender` zips.
BLENDER_RANGES = {"3.11": ("4.2.0", "5.1.0", "blender4.2-5.0"), "3.13": ("5.1.0", None, "blender5.1+")}
PYTHONS = tuple(BLENDER_RANGES)
BUNDLED = ("scipy", "cholespy")  # never numpy: Blender ships its own

# Wheel platform tag (prefix, suffix) -> Blender platform name.
PLATFORM_TAGS = (("manylinux", "x86_64", "linux-x64"), ("win", "amd64", "windows-x64"),
                 ("macosx", "arm64", "macos-arm64"))
WHEEL_NAME = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)-cp(?P<py>\d+)-[^-]+-(?P<platform>[^-]+)\.whl")
# The legacy manylinux names and the glibc they stand for (PEP 600).
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
# How far the search for a wheel looks past the stated minimum, to say what a failing one needs.
NEWEST_OS = {"linux-x64": (2, 40), "macos-arm64": (26, 0)}


def blender_ext() -> Path:
    """Blender's own extension builder/validator, shipped inside the bpy wheel."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None:
        raise SystemExit("bpy is not installed: run `python build.py test` once to create .venv")
    found = sorted(Path(spec.origin).parent.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        raise SystemExit("blender_ext.py not found inside the bpy package")
    return found[-1]


def wheel_platform(filename: str) -> str:
    match = WHEEL_NAME.fullmatch(filename)
    if match is None:
        raise ValueError(f"not a CPython wheel name: {filename}")
    tag = match["platform"].split(".")[0]
    for prefix, suffix, platform in PLATFORM_TAGS:
        if tag.startswith(prefix) and tag.endswith(suffix):
            return platform
    raise ValueError(f"wheel {filename} is for no platform this extension supports")


def manifest_wheels() -> list[str]:
    return [Path(path).name for path in tomllib.loads(MANIFEST.read_text())["wheels"]]


def tag_minimum_os(tag: str) -> tuple[int, int] | None:
    """(major, minor) of the oldest glibc or macOS a wheel platform tag loads on; None for Windows,
    whose tags name no version."""
    if tag.startswith("win"):
        return None
    if tag.split("_")[0] in LEGACY_MANYLINUX:
        return LEGACY_MANYLINUX[tag.split("_")[0]]
    match = re.fullmatch(r"(?:manylinux|macosx)_(\d+)_(\d+)_.+", tag)
    if match is None:
        raise ValueError(f"unknown platform tag {tag}")
    return int(match[1]), int(match[2])


def wheel_minimum_os(filename: str) -> tuple[int, int] | None:
    """The oldest OS a wheel loads on: the broadest tag of its compressed tag set."""
    match = WHEEL_NAME.fullmatch(filename)
    if match is None:
        raise ValueError(f"not a CPython wheel name: {filename}")
    versions = [tag_minimum_os(tag) for tag in match["platform"].split(".")]
    return None if None in versions else min(versions)


def describe_os(platform: str, version: tuple[int, int] | None) -> str:
    if version is None:
        return "any Windows Blender runs on"
    return ("glibc {}.{}" if platform == "linux-x64" else "macOS {}.{}").format(*version)


def stated_minimums() -> dict[str, tuple[int, int] | None]:
    """The minimum OS per platform from docs/INSTALL.md's table, e.g.
    `| ... (`macos-arm64`) | macOS 12.0 |`."""
    rows = re.findall(r"^\|[^|\n]*`(linux-x64|macos-arm64|windows-x64)`[^|\n]*\|\s*(glibc|macOS|Windows)"
                      r"\s*([\d.]*)", INSTALL_DOC.read_text(), re.MULTILINE)
    stated = {platform: None if system == "Windows" else tuple(int(v) for v in version.split("."))
              for platform, system, version in rows}
    missing = set(tomllib.loads(MANIFEST.read_text())["platforms"]) - set(stated)
    if missing:
        raise SystemExit(f"docs/INSTALL.md states no minimum OS for {sorted(missing)}")
    return stated


def os_problems(names: list[str]) -> list[str]:
    """Wheels that need a newer OS than docs/INSTALL.md states for their platform."""
    stated = stated_minimums()
    problems = []
    for name in names:
        platform, needs = wheel_platform(name), wheel_minimum_os(name)
        if needs is not None and needs > stated[platform]:
            problems.append(f"{name} needs {describe_os(platform, needs)}, docs/INSTALL.md states "
                            f"{describe_os(platform, stated[platform])}")
    return problems


def platform_ladder(platform: str, newest: tuple[int, int] | None) -> list[str]:
    """The platform's wheel tags from the oldest OS up to `newest`, oldest first (pip prefers the
    first --platform it is given, so this asks for the broadest wheel)."""
    if platform == "linux-x64":
        return [f"manylinux_2_{minor}_x86_64" for minor in range(5, newest[1] + 1)]
    if platform == "macos-arm64":
        return [f"macosx_{major}_0_arm64" for major in range(11, newest[0] + 1)]
    return ["win_amd64"]


def bundle_pins(python: str) -> list[tuple[str, str]]:
    """(name, version) of each bundled package pinned in requirements.txt for this Python."""
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        requirement = Requirement(line) if line else None
        if requirement is None or requirement.name not in BUNDLED:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"python_version": python}):
            pins[requirement.name] = next(iter(requirement.specifier)).version
    if set(pins) != set(BUNDLED):
        raise SystemExit(f"requirements.txt pins no {sorted(set(BUNDLED) - set(pins))} for Python {python}")
    return [(name, pins[name]) for name in BUNDLED]


def pip_pick(name: str, version: str, python: str, tags: list[str]) -> str | None:
    """The file pip would install for this Python and these platform tags (first preferred)."""
    with tempfile.TemporaryDirectory() as target:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", "--no-deps",
             "--ignore-installed", "--ignore-requires-python", "--only-binary=:all:",
             "--disable-pip-version-check", "--target", target, "--python-version", python,
             *[arg for tag in tags for arg in ("--platform", tag)], f"{name}=={version}"],
            capture_output=True, text=True)
    if result.returncode:
        if "No matching distribution" in result.stderr:
            return None
        raise SystemExit(f"pip could not look up {name} {version}:\n{result.stderr}")
    url = json.loads(result.stdout)["install"][0]["download_info"]["url"]
    return url.rsplit("/", 1)[-1].split("#")[0]


def choose_wheel(name: str, version: str, python: str, platform: str, minimum: tuple[int, int] | None) -> str:
    """The broadest wheel that loads on the stated minimum OS, or a clear failure."""
    found = pip_pick(name, version, python, platform_ladder(platform, minimum))
    if found is not None:
        return found
    oldest = pip_pick(name, version, python, platform_ladder(platform, NEWEST_OS.get(platform)))
    needs = (f"its oldest needs {describe_os(platform, wheel_minimum_os(oldest))}" if oldest
             else "it has no wheel for this platform")
    raise SystemExit(f"{name} {version} for Python {python} on {platform}: no wheel loads on "
                     f"{describe_os(platform, minimum)}, the minimum docs/INSTALL.md states ({needs}). "
                     f"Pin another {name} in requirements.txt, or raise the minimum in docs/INSTALL.md "
                     "and say why.")


def choose_wheels(platforms: list[str]) -> list[str]:
    stated = stated_minimums()
    asks = [(name, version, python, platform, stated[platform])
            for platform in platforms for python in PYTHONS for name, version in bundle_pins(python)]
    # Each look-up waits on the index, not the CPU.
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda ask: choose_wheel(*ask), asks))


def sync_manifest(chosen: list[str], platforms: list[str], write: bool) -> None:
    """Make blender_manifest.toml's `wheels` list the chosen files (for these platforms)."""
    current = manifest_wheels()
    order = tomllib.loads(MANIFEST.read_text())["platforms"]
    wanted = sorted([n for n in current if wheel_platform(n) not in platforms] + chosen,
                    key=lambda n: (BUNDLED.index(WHEEL_NAME.fullmatch(n)["name"]),
                                   order.index(wheel_platform(n)), int(WHEEL_NAME.fullmatch(n)["py"])))
    if wanted == current:
        return
    if not write:
        raise SystemExit("blender_manifest.toml's wheels are not the ones requirements.txt and "
                         f"docs/INSTALL.md's minimum OS give ({sorted(set(wanted) ^ set(current))}): "
                         "run `python build.py`")
    block = "wheels = [\n" + "".join(f'  "./wheels/{n}",\n' for n in wanted) + "]"
    MANIFEST.write_text(re.sub(r"^wheels = \[\n.*?^\]", lambda _: block, MANIFEST.read_text(),
                               flags=re.MULTILINE | re.DOTALL))
    print(f"blender_manifest.toml: wheels updated ({len(wanted)} files)", flush=True)


def download_wheels(names: list[str]) -> None:
    """pip-download any wheel the manifest names that wheels/ does not hold yet."""
    WHEELS.mkdir(exist_ok=True)
    for name in names:
        if (WHEELS / name).exists():
            continue
        match = WHEEL_NAME.fullmatch(name)
        if match["name"].lower() == "numpy":
            raise SystemExit("numpy must never be bundled: Blender ships its own")
        py = match["py"]
        print(f"downloading {name}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                        "--only-binary=:all:", "--no-deps", "--python-version", f"{py[0]}.{py[1:]}",
                        "--platform", match["platform"].split(".")[0],
                        f"{match['name']}=={match['version']}", "-d", str(WHEELS)], check=True)
        if not (WHEELS / name).exists():
            raise SystemExit(f"pip did not produce {name}; update blender_manifest.toml's wheels")


def serves(wheel: str, python: str) -> bool:
    """Whether Python `python` loads this CPython wheel (its own tag, or abi3 from an older one)."""
    interpreter, abi = wheel.split("-")[2:4]
    wanted = int(python.replace(".", ""))
    return int(interpreter[2:]) == wanted or (abi == "abi3" and int(interpreter[2:]) <= wanted)


def selected(name: str, platforms: list[str], python: str | None) -> bool:
    """Whether a zip for these platforms (and only this Python, if one is given) bundles the wheel."""
    return wheel_platform(name) in platforms and (python is None or serves(name, python))


def stage_manifest(platforms: list[str], python: str | None = None) -> str:
    """The manifest restricted to some platforms (their wheels only), and to the Blender versions
    that embed `python` if one is given."""
    lines = []
    for line in MANIFEST.read_text().splitlines():
        wheel = re.search(r'"\./wheels/([^"]+)"', line)
        if wheel and not selected(wheel[1], platforms, python):
            continue
        if line.startswith("platforms ="):
            line = "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]"
        if line.startswith("blender_version_min =") and python is not None:
            low, high, _ = BLENDER_RANGES[python]
            line = f'blender_version_min = "{low}"' + (f'\nblender_version_max = "{high}"' if high else "")
        lines.append(line)
    return "\n".join(lines) + "\n"


def stage(folder: Path, platforms: list[str], python: str | None = None) -> None:
    """Lay out the extension as Blender expects it: manifest and __init__.py at the top."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(PACKAGE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (folder / "blender_manifest.toml").write_text(stage_manifest(platforms, python))
    (folder / "wheels").mkdir()
    for name in manifest_wheels():
        if selected(name, platforms, python):
            shutil.copy2(WHEELS / name, folder / "wheels" / name)


def run_ext(*args: str) -> None:
    subprocess.run([sys.executable, str(blender_ext()), *args], check=True)


def check_zip(path: Path, platform: str, python: str | None = None) -> None:
    """Blender's validator accepts it, it holds this platform's wheels (for `python`, if given)
    and no numpy or tests."""
    run_ext("validate", str(path))
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    wheels = [Path(n).name for n in names if n.endswith(".whl")]
    expected = sorted(n for n in manifest_wheels() if selected(n, [platform], python))
    problems = []
    if sorted(wheels) != expected:
        problems.append(f"wheels {wheels}, expected {expected}")
    if any(Path(n).name.startswith("numpy") for n in names):
        problems.append("bundles numpy")
    if any(n.startswith(("tests/", "tools/")) or "__pycache__" in n for n in names):
        problems.append("ships tests, tools or caches")
    if "__init__.py" not in names or "blender_manifest.toml" not in names:
        problems.append("no __init__.py or manifest at the top")
    if problems:
        raise SystemExit(f"{path.name}: " + "; ".join(problems))


def build(output: Path = DIST, platforms: list[str] | None = None, update_manifest: bool = True,
          per_blender: bool = False) -> list[Path]:
    """Build one validated zip per platform into `output`; returns their paths.

    The manifest's wheels for these platforms are chosen afresh; with update_manifest=False a
    manifest that lists other files fails the build instead of being rewritten. per_blender adds,
    per platform, one zip per Python with only its wheels, limited to the Blender versions that
    embed it."""
    all_platforms = tomllib.loads(MANIFEST.read_text())["platforms"]
    platforms = list(platforms or all_platforms)
    sync_manifest(choose_wheels(platforms), platforms, write=update_manifest)
    problems = os_problems(manifest_wheels())
    if problems:
        raise SystemExit("bundled wheels need a newer OS than docs/INSTALL.md states:\n  "
                         + "\n  ".join(problems))
    download_wheels([n for n in manifest_wheels() if wheel_platform(n) in platforms])
    output.mkdir(parents=True, exist_ok=True)
    zips = build_zips(output, platforms, None)
    for python in PYTHONS if per_blender else ():
        zips += build_zips(output, platforms, python)
    shutil.rmtree(output / "stage")
    return zips


def build_zips(output: Path, platforms: list[str], python: str | None) -> list[Path]:
    """Stage, build with Blender's builder (one zip per platform) and check; named
    cloth_addon-<version>-<platform>[-<Blender range>].zip."""
    part = output / "stage" / ("all" if python is None else f"python{python}")
    folder = part / "cloth_addon"
    stage(folder, platforms, python)
    run_ext("validate", str(folder))
    run_ext("build", "--source-dir", str(folder), "--output-dir", str(part), "--split-platforms")
    version = tomllib.loads(MANIFEST.read_text())["version"]
    label = "" if python is None else "-" + BLENDER_RANGES[python][2]
    zips = []
    for platform in platforms:
        name = f"cloth_addon-{version}-{platform.replace('-', '_')}"
        path = (part / f"{name}.zip").replace(output / f"{name}{label}.zip")
        check_zip(path, platform, python)
        zips.append(path)
    return zips


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", help="build only this platform (repeatable)")
    parser.add_argument("--output", type=Path, default=DIST, help="output folder (default dist/)")
    parser.add_argument("--per-blender", action="store_true",
                        help="also one zip per platform and Python, for the Blender versions that embed it")
    args = parser.parse_args(argv)
    for path in build(args.output, args.platform, per_blender=args.per_blender):
        print(f"built {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
              f"({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
