"""The index and document domains keep their layers: endpoints -> service -> repository -> models."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "control_plane"
DOMAINS = ("index", "document")


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _calls(path: Path, attribute: str) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
        for node in ast.walk(ast.parse(path.read_text()))
    )


@pytest.mark.parametrize("domain", DOMAINS)
def test_services_do_not_import_the_web_framework(domain):
    web = {name for name in _imported(ROOT / domain / "service.py") if name.split(".")[0] in ("fastapi", "starlette")}
    assert not web


@pytest.mark.parametrize("domain", DOMAINS)
def test_endpoints_neither_build_sql_nor_commit(domain):
    endpoints = ROOT / domain / "endpoints.py"
    assert not {name for name in _imported(endpoints) if name.split(".")[0] == "sqlalchemy"}
    assert not _calls(endpoints, "commit")
    assert not _calls(endpoints, "execute")
