"""`python build.py test`: lint with ruff, then run the whole pytest suite (core and Blender)."""

import subprocess
import sys


def main(argv: list[str]) -> int:
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "."])
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", *argv])
    if lint.returncode:
        print("ruff found problems (see above)", file=sys.stderr)
    return lint.returncode or tests.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
