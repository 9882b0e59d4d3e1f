"""core/ must run without Blender: no bpy, bmesh or mathutils import anywhere in it."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "cloth_addon" / "core"
FORBIDDEN = {"bpy", "bmesh", "mathutils"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_imports_no_blender_module():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) >= 8
    offenders = {str(f.relative_to(CORE)): imported_roots(f) & FORBIDDEN for f in files}
    assert not {k: v for k, v in offenders.items() if v}


def test_core_uses_relative_imports_only():
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not (node.module or "").startswith("cloth_addon"), path
