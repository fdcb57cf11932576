"""The engine package stands alone: it imports nothing of the control plane or the hosts (only the
typed contract, settings, query-word helpers, mapping rules, geo shapes and vector rules of
``shared``), no Ray/FastAPI/SQLAlchemy, and its modules import each
other without a circle, all at module top."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import search_workers.engine

ENGINE = Path(search_workers.engine.__file__).parent
ALLOWED_SHARED = {"shared.contract", "shared.settings", "shared.text", "shared.mapping", "shared.geo",
                  "shared.semantic"}
FORBIDDEN_ROOTS = {"control_plane", "search_workers", "cli", "ray", "fastapi", "starlette", "sqlalchemy"}


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(ENGINE.glob("*.py"))}


def test_engine_imports_only_the_contract_from_the_rest_of_the_project():
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                root = target.split(".")[0]
                assert root not in FORBIDDEN_ROOTS, (name, target)
                assert root != "shared" or target in ALLOWED_SHARED, (name, target)


def test_engine_modules_import_each_other_at_top_without_a_circle():
    graph: dict[str, set[str]] = {}
    for name, tree in _modules().items():
        deps = graph.setdefault(name, set())
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
        nested = [n for top in tree.body if isinstance(top, (ast.FunctionDef, ast.ClassDef))
                  for n in ast.walk(top) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not nested, (name, [ast.unparse(n) for n in nested])
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as e:  # pragma: no cover - the failure message
        raise AssertionError(f"import circle: {e.args[1]}") from e
