"""The project's one entry point.

    python build.py            build the installable extension zips into dist/
    python build.py test       set up .venv (pinned packages, real Blender as bpy), run ruff + pytest
    python build.py bench      print solver benchmarks (ms/frame); `bench --vs-blender` adds Blender's cloth
    python build.py demo       build, simulate and bake the demo scene in headless Blender
    python build.py paper      reproduce the fast mass-spring paper's experiments

Every command first makes sure the virtual environment in .venv exists and holds the
pinned packages of requirements.txt, then runs the matching script in tools/ inside it.
Needs only Python 3.11 on the machine.
"""

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements.txt"
COMMANDS = {"build", "test", "bench", "demo", "paper"}


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    """Create .venv and install requirements.txt unless the stamp says they are current."""
    python = venv_python()
    stamp = VENV / ".requirements.sha256"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("installing pinned packages (first run downloads Blender as a module, ~400 MB)", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return python


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "build"
    if command not in COMMANDS:
        print(f"unknown command {command!r}; expected one of {sorted(COMMANDS)}", file=sys.stderr)
        return 2
    python = ensure_venv()
    script = ROOT / "tools" / f"{command}.py"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([str(python), str(script), *argv[1:]], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
