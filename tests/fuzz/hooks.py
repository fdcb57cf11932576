"""Schemathesis hooks of the OpenAPI fuzz (tests/fuzz/runner.py loads this file).

schemathesis' ``positive_data_acceptance`` fails a schema-valid request answered 400. Some rules no
JSON Schema can state (a field of the index's mapping, a token that was issued, distinct terms):
the document lists them per operation with its 400 answer (``x-checked-beyond-schema``, see
``control_plane.openapi_checks``), and the runner lets those operations answer 400 to such a
request. This check keeps that exception narrow: each detail of such a 400 must name an input the
operation lists, so a bound the document forgot still fails the run.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis
from schemathesis.core.failures import Failure
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

EXTENSION = "x-checked-beyond-schema"


class UndocumentedRejection(Failure):
    """A schema-valid request refused for a rule the document does not list."""

    checks = ("rejections_are_documented",)
    kind_title = "Schema-valid request refused for a rule the document does not list"


def input_of(detail_path: str) -> str:
    """The input an error detail's path names (``control_plane.openapi_checks``): ``filters.brand`` →
    ``filters``, ``[3].price`` → ``[]`` (an item of a bare array)."""
    if detail_path.startswith("["):
        return "[]"
    return detail_path.split(".", 1)[0].split("[", 1)[0]


@schemathesis.check
def rejections_are_documented(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if meta is None or response.status_code != 400 or not meta.generation.mode.is_positive:
        return None
    if is_unexpected_http_status_case(case):
        return None
    answer = case.operation.definition.raw.get("responses", {}).get("400", {})
    rules: dict[str, str] = answer.get(EXTENSION) or {}
    if not rules:
        return None  # positive_data_acceptance reports it
    try:
        details = json.loads(response.content)["error"].get("details") or []
    except (ValueError, KeyError, TypeError):
        details = []
    named = [str(detail.get("path", "")) for detail in details if isinstance(detail, dict)]
    unlisted = [path for path in named if input_of(path) not in rules]
    if not named or unlisted:
        raise UndocumentedRejection(
            operation=case.operation.label,
            message=f"400 for {unlisted or 'no detail'}; the document lists only {sorted(rules)}\n"
            f"{response.content[:600]!r}",
        )
    return None
