"""The project's one entry point.

    python build.py            build the installable extension zips into dist/
    python build.py test       set up .venv (pinned packages, real Blender as bpy), run ruff + pytest
    python build.py test --blender 4.2    the same on the newest Blender 4.2.x, in .venv-4.2
    python build.py bench      print solver benchmarks (ms/frame); `bench --vs-blender` adds Blender's cloth
    python build.py demo       build, simulate and bake the demo scene in headless Blender
    python build.py paper      reproduce the fast mass-spring paper's experiments

Every command first makes sure its virtual environment exists and holds the pinned packages of
requirements.txt, then runs the matching script in tools/ inside it. `--blender SERIES` (any
command) swaps the pinned bpy for the newest release of that series, in its own .venv-SERIES made
with the Python that series embeds: 3.11 for Blender 4.2 to 5.0, 3.13 from 5.1 on. That Python is
looked for on PATH (python3.11, python3.13), then under pyenv.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = ROOT / "requirements.txt"
COMMANDS = {"build", "test", "bench", "demo", "paper"}
BPY_PIN = re.compile(r"^bpy==(\d+)\.(\d+)\.\d+\s*$", re.MULTILINE)


def blender_python(series: tuple[int, int]) -> str:
    """The Python version a Blender series embeds (and so the only one its bpy wheel is built for)."""
    return "3.13" if series >= (5, 1) else "3.11"


def parse_series(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)\.(\d+)", text)
    if match is None:
        raise SystemExit(f"--blender takes a series such as 4.2 or 5.1, not {text!r}")
    series = int(match[1]), int(match[2])
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    oldest = tuple(int(part) for part in manifest["blender_version_min"].split(".")[:2])
    if series < oldest:
        raise SystemExit(f"the extension needs Blender {manifest['blender_version_min']} or newer, "
                         f"not {text}")
    return series


def python_version_of(executable: str) -> str | None:
    """'3.13' for a working interpreter; None for a pyenv shim that refuses, or anything broken."""
    try:
        result = subprocess.run([executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def pyenv_pythons(version: str) -> list[Path]:
    """Interpreters pyenv has installed for `version` (e.g. 3.13.0, 3.13.1), newest first."""
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        result = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        root = result.stdout.strip() if result.returncode == 0 else None
    root = Path(root) if root else Path.home() / ".pyenv"
    found = [p / "bin" / f"python{version}" for p in (root / "versions").glob(f"{version}.*")]

    def patch(path: Path) -> int:
        tail = path.parent.parent.name.split(".")[2]
        return int(tail) if tail.isdigit() else -1

    return sorted((p for p in found if p.exists()), key=patch, reverse=True)


def find_python(version: str, needed_by: str) -> str:
    """An interpreter of this version, looked for as a user's machine offers one."""
    if "{}.{}".format(*sys.version_info[:2]) == version:
        return sys.executable
    candidates = [shutil.which(f"python{version}"), *map(str, pyenv_pythons(version))]
    for candidate in filter(None, candidates):
        if python_version_of(candidate) == version:
            return candidate
    raise SystemExit(f"Python {version} is missing: {needed_by} embeds Python {version}, and its bpy wheel "
                     f"installs only there. Looked for python{version} on PATH and under pyenv "
                     f"(e.g. `pyenv install {version}`); install it and run again.")


def environment(blender: str | None) -> tuple[Path, str, str]:
    """(venv folder, interpreter to create it with, requirements text) for the default or a series."""
    requirements = REQUIREMENTS.read_text()
    if blender is None:
        pinned = BPY_PIN.search(requirements)
        folder, blender = ROOT / ".venv", f"{pinned[1]}.{pinned[2]}"
    else:
        folder = ROOT / f".venv-{blender}"
        series = parse_series(blender)
        # `==4.2.*` lets pip take the newest release of the series.
        requirements = BPY_PIN.sub(f"bpy=={series[0]}.{series[1]}.*", requirements)
    python = find_python(blender_python(parse_series(blender)), f"Blender {blender}")
    return folder, python, requirements


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(folder: Path, base_python: str, requirements: str) -> Path:
    """Create the venv and install `requirements` unless its stamp says they are current."""
    python = venv_python(folder)
    stamp = folder / ".requirements.sha256"
    wanted = hashlib.sha256(requirements.encode()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        print(f"creating virtual environment in {folder.name} with {base_python}", flush=True)
        subprocess.run([base_python, "-m", "venv", str(folder)], check=True)
    print(f"installing pinned packages into {folder.name} "
          "(first run downloads Blender as a module, ~400 MB)", flush=True)
    pinned = folder / "requirements.txt"
    pinned.write_text(requirements)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(pinned)], check=True)
    stamp.write_text(wanted)
    return python


def main(argv: list[str]) -> int:
    argv = list(argv)
    blender = None
    if "--blender" in argv:
        at = argv.index("--blender")
        if at + 1 >= len(argv):
            raise SystemExit("--blender needs a series, e.g. --blender 4.2")
        blender = argv[at + 1]
        del argv[at:at + 2]
    command = argv[0] if argv else "build"
    if command not in COMMANDS:
        print(f"unknown command {command!r}; expected one of {sorted(COMMANDS)}", file=sys.stderr)
        return 2
    python = ensure_venv(*environment(blender))
    script = ROOT / "tools" / f"{command}.py"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([str(python), str(script), *argv[1:]], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
