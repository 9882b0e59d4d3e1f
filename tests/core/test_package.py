"""The package's shape, read from its source: core/ runs without Blender, imports inside the
package are relative, no module imports a private name of another, and no import cycle anywhere
in cloth_addon (lazy imports inside functions count: they hide a cycle, they do not remove it)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "cloth_addon"
CORE = PACKAGE / "core"
FORBIDDEN = {"bpy", "bmesh", "mathutils"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """{module: the modules of the package it imports}, from every import statement in the source
    (module level or inside a function). `from pkg import name` is an edge to the submodule
    pkg.name if there is one, else to pkg itself."""
    root = package.parent
    paths = {module_name(p, root): p for p in package.rglob("*.py")}
    graph = {}
    for module, path in paths.items():
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in paths}
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    edges.add(target if target in paths else source)
        graph[module] = (edges & set(paths)) - {module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (depth-first search)."""
    state = {}  # module -> "open" while on the current path, "done" after

    def visit(module, path):
        path = path + [module]
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target, path)):
                return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module, [])):
            return found
    return None


def test_core_imports_no_blender_module():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) >= 8
    offenders = {str(f.relative_to(CORE)): imported_roots(f) & FORBIDDEN for f in files}
    assert not {k: v for k, v in offenders.items() if v}


def test_package_uses_relative_imports_only():
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not (node.module or "").startswith("cloth_addon"), path


def test_no_import_cycle_in_the_package():
    graph = import_graph(PACKAGE)
    # the graph sees the package's imports: module level, relative, through a package's __init__
    assert "cloth_addon.blender.stage" in graph["cloth_addon.blender.bake"]
    assert "cloth_addon.core.contact" in graph["cloth_addon.core"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..a import NAME\n    return NAME\n")
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.a"}
    assert find_cycle(graph) in (["pkg.a", "pkg.sub.b", "pkg.a"], ["pkg.sub.b", "pkg.a", "pkg.sub.b"])
    (package / "sub" / "b.py").write_text("NAME = 1\n")
    assert find_cycle(import_graph(package)) is None


def test_no_module_imports_a_private_name():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                offenders += [f"{path.relative_to(PACKAGE)}: {alias.name}" for alias in node.names
                              if alias.name.startswith("_")]
    assert not offenders
