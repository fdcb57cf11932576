"""The task domain keeps its layers: endpoints -> service -> repository -> models; the task modules
of the domains (document/tasks.py, rebuild.py, feed_sync.py) change rows only through the domains'
services and repositories (and the queue)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "control_plane" / "task"
TASK_MODULES = tuple(ROOT.parent / "document" / name for name in ("tasks.py", "rebuild.py", "feed_sync.py"))
SQL = {"select", "update", "delete", "insert", "exists"}
QUERIES = {"execute", "scalar", "scalars", "get", "expunge"}


def _tree(name: str) -> ast.Module:
    return ast.parse((ROOT / name).read_text())


def _imported(tree: ast.Module) -> dict[str, set[str]]:
    """Module -> the names imported from it ("" for ``import module``)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.setdefault(alias.name, set()).add("")
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.setdefault(node.module, set()).update(alias.name for alias in node.names)
    return out


def _session_calls(tree: ast.Module) -> set[str]:
    """The methods called on a variable named ``db`` (a session)."""
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "db"
    }


def test_service_imports_neither_the_web_framework_nor_sql():
    imported = _imported(_tree("service.py"))
    assert not {name for name in imported if name.split(".")[0] in ("fastapi", "starlette")}
    assert not {name for name in imported if name.split(".")[0] == "sqlalchemy" and name != "sqlalchemy.orm"}
    assert not _session_calls(_tree("service.py")) & QUERIES


def test_endpoints_neither_build_sql_nor_commit():
    tree = _tree("endpoints.py")
    assert not {name for name in _imported(tree) if name.split(".")[0] == "sqlalchemy"}
    calls = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    assert not calls & {"commit", "execute"}


@pytest.mark.parametrize("path", TASK_MODULES, ids=lambda p: p.name)
def test_handlers_hold_no_sql(path: Path):
    tree = ast.parse(path.read_text())
    imported = _imported(tree)
    assert not {name for name in imported if name.split(".")[0] == "sqlalchemy" and name != "sqlalchemy.orm"}
    assert imported.get("sqlalchemy.orm", set()) <= {"Session", "sessionmaker"}
    assert not {name for name in imported if name.endswith(".models") and name != "control_plane.index.models"}
    assert not _session_calls(tree) & QUERIES
    assert not any(isinstance(node, ast.Name) and node.id in SQL for node in ast.walk(tree))
