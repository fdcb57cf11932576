"""The layering of ARCHITECTURE.md, checked on the source: ``shared`` stands alone, only
``control_plane/shard`` reaches ``search_workers``, no module import circle, imports at module top
(except the ones documented as lazy)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "control_plane", "search_workers", "cli")
# (module, imported): documented lazy imports (``make_host`` does not import Ray unless asked)
LAZY = {("search_workers.host", "search_workers.local"), ("search_workers.host", "search_workers.actors.ray_host")}


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = (path, ast.parse(path.read_text(), str(path)))
    return out


MODULES = _modules()


def _imports(name: str, path: Path, nodes: list[ast.stmt] | ast.Module) -> list[str]:
    """Absolute names imported by ``nodes``; ``from . import x`` counts as the submodule ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in nodes.body if isinstance(nodes, ast.Module) else nodes:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
            out += subs or [base]
    return out


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    return [n for n in tree.body if not (isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n.test))]


def test_shared_imports_none_of_the_other_packages_nor_frameworks():
    forbidden = {"control_plane", "search_workers", "cli", "fastapi", "starlette", "sqlalchemy", "ray"}
    for name, (path, tree) in MODULES.items():
        if name.startswith("shared"):
            for target in _imports(name, path, tree):
                assert target.split(".")[0] not in forbidden, (name, target)


def test_only_the_shard_package_reaches_the_search_workers():
    for name, (path, tree) in MODULES.items():
        if name.startswith(("control_plane", "cli")) and not name.startswith("control_plane.shard"):
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    for target in _imports(name, path, [node]):
                        assert not target.startswith("search_workers"), (name, target)


def test_no_import_circle_and_imports_at_module_top():
    graph: dict[str, set[str]] = {}
    for name, (path, tree) in MODULES.items():
        graph[name] = {t for t in _imports(name, path, _top_level(tree)) if t in MODULES and t != name}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        for target in _imports(name, path, [inner]):
                            assert (name, target) in LAZY, f"{name} imports {target} inside {node.name}()"
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {exc.args[1]}") from exc
