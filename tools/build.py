"""`python build.py`: build the installable extension zips into dist/, one per platform.

    wheels/  <- scipy wheels named in blender_manifest.toml, downloaded once (git-ignored)
    dist/stage/cloth_addon/  <- manifest + the package's contents + the wheels
    dist/cloth_addon-<version>-<platform>.zip  <- Blender's builder, --split-platforms

Blender wants the manifest and __init__.py at the top of the zip, while the repository keeps the
manifest at its root and the package in cloth_addon/, hence the staging folder.
"""

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "blender_manifest.toml"
PACKAGE = ROOT / "cloth_addon"
WHEELS = ROOT / "wheels"
DIST = ROOT / "dist"

# Wheel platform tag (prefix, suffix) -> Blender platform name.
PLATFORM_TAGS = (("manylinux", "x86_64", "linux-x64"), ("win", "amd64", "windows-x64"),
                 ("macosx", "arm64", "macos-arm64"))
WHEEL_NAME = re.compile(r"(?P<name>[^-]+)-(?P<version>[^-]+)-cp(?P<py>\d+)-[^-]+-(?P<platform>[^-]+)\.whl")


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


def stage_manifest(platforms: list[str]) -> str:
    """The manifest restricted to some platforms (their wheels only)."""
    lines = []
    for line in MANIFEST.read_text().splitlines():
        wheel = re.search(r'"\./wheels/([^"]+)"', line)
        if wheel and wheel_platform(wheel[1]) not in platforms:
            continue
        if line.startswith("platforms ="):
            line = "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]"
        lines.append(line)
    return "\n".join(lines) + "\n"


def stage(folder: Path, platforms: list[str]) -> None:
    """Lay out the extension as Blender expects it: manifest and __init__.py at the top."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(PACKAGE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (folder / "blender_manifest.toml").write_text(stage_manifest(platforms))
    (folder / "wheels").mkdir()
    for name in manifest_wheels():
        if wheel_platform(name) in platforms:
            shutil.copy2(WHEELS / name, folder / "wheels" / name)


def run_ext(*args: str) -> None:
    subprocess.run([sys.executable, str(blender_ext()), *args], check=True)


def check_zip(path: Path, platform: str) -> None:
    """Blender's validator accepts it, it holds this platform's wheels and no numpy or tests."""
    run_ext("validate", str(path))
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    wheels = [Path(n).name for n in names if n.endswith(".whl")]
    expected = sorted(n for n in manifest_wheels() if wheel_platform(n) == platform)
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


def build(output: Path = DIST, platforms: list[str] | None = None) -> list[Path]:
    """Build one validated zip per platform into `output`; returns their paths."""
    all_platforms = tomllib.loads(MANIFEST.read_text())["platforms"]
    platforms = list(platforms or all_platforms)
    download_wheels([n for n in manifest_wheels() if wheel_platform(n) in platforms])
    output.mkdir(parents=True, exist_ok=True)
    folder = output / "stage" / "cloth_addon"
    stage(folder, platforms)
    run_ext("validate", str(folder))
    run_ext("build", "--source-dir", str(folder), "--output-dir", str(output), "--split-platforms")
    version = tomllib.loads(MANIFEST.read_text())["version"]
    zips = []
    for platform in platforms:
        path = output / f"cloth_addon-{version}-{platform.replace('-', '_')}.zip"
        check_zip(path, platform)
        zips.append(path)
    shutil.rmtree(output / "stage")
    return zips


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", help="build only this platform (repeatable)")
    parser.add_argument("--output", type=Path, default=DIST, help="output folder (default dist/)")
    args = parser.parse_args(argv)
    for path in build(args.output, args.platform):
        print(f"built {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
              f"({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
