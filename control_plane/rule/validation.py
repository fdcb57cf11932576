"""Checks a rule against its index's mapping; every fault is a ``VALIDATION_ERROR`` detail path."""

from __future__ import annotations

import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from control_plane.profile.validation import capability_problem, geo_filter_problems
from control_plane.rule.schemas import MAX_USER_DATA_BYTES, RuleIn
from shared.errors import validation
from shared.jsonvalue import json_problem
from shared.limits import filter_faults
from shared.text import atoms

MAX_USER_DATA_DEPTH = 32  # containers in a rule's userData (orjson stops at 255)


def _plain(text: str, space: bool = False) -> bool:
    """No whitespace, control characters or backslashes: browsers drop or rewrite them in URLs
    (``/\\evil.example`` and ``/<tab>/evil.example`` both lead to another site)."""
    return not any((c.isspace() and not (space and c == " ")) or c == "\\" or unicodedata.category(c) in ("Cc", "Cf")
                   for c in text)


def safe_redirect(url: str) -> bool:
    """A redirect a shop page can follow without leaving for a site the merchant did not name: an
    absolute http(s) URL with a host and no user part, or a path of the shop's own site; checked
    as written and percent-decoded (``/%09/evil.example``)."""
    decoded = unquote(url)
    if not (_plain(url) and _plain(decoded, space=True)):  # (an encoded space is a space in a name)
        return False
    if url.startswith("/"):
        return not (url.startswith("//") or decoded.startswith("//"))
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc


def filter_fields(filters: Any, path: str) -> list[tuple[str, str]]:
    """``(field, path)`` pairs a FILTER names, inside ``and``, ``or`` and ``not`` too."""
    out: list[tuple[str, str]] = []
    if not isinstance(filters, dict):
        return out
    for name, value in filters.items():
        if name == "not":
            out += filter_fields(value, f"{path}.not")
        elif name in ("and", "or"):
            for i, sub in enumerate(value if isinstance(value, list) else []):
                out += filter_fields(sub, f"{path}.{name}[{i}]")
        else:
            out.append((name, f"{path}.{name}"))
    return out


def rule_filter_uses(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, path)`` for every field a stored rule body filters on (validation, usage registry)."""
    uses = filter_fields(body.get("filters"), "filters")
    consequence = body.get("consequence") or {}
    uses += filter_fields(consequence.get("addFilters"), "consequence.addFilters")
    for kind in ("boost", "bury"):
        for i, item in enumerate(consequence.get(kind) or []):
            uses += filter_fields(item.get("filters"), f"consequence.{kind}[{i}].filters")
    return uses


def _filter_structure(filters: dict[str, Any] | None, path: str) -> list[dict[str, Any]]:
    return [] if filters is None else filter_faults(filters, path)


def validate_rule(body: RuleIn, stored: dict[str, Any], mapping: dict[str, Any]) -> None:
    faults: list[dict[str, Any]] = []
    for i, condition in enumerate(body.conditions):
        if not atoms(condition.pattern):
            faults.append({"path": f"conditions[{i}].pattern", "message": "needs at least one letter or digit"})
    if body.filters is not None:
        for name, value in body.filters.items():
            if name in ("not", "and", "or") or isinstance(value, dict) and not set(value) <= {"gt", "gte", "lt", "lte"}:
                faults.append({"path": f"filters.{name}", "message": "a rule's filter condition takes field values only"})
    consequence = body.consequence
    faults += _filter_structure(body.filters, "filters")
    faults += _filter_structure(consequence.add_filters, "consequence.addFilters")
    weighted: list[tuple[str, list[dict[str, Any]]]] = [
        ("boost", [b.filters for b in consequence.boost]), ("bury", [b.filters for b in consequence.bury])]
    for kind, items in weighted:
        for i, item_filters in enumerate(items):
            faults += _filter_structure(item_filters, f"consequence.{kind}[{i}].filters")
            if not item_filters:
                faults.append({"path": f"consequence.{kind}[{i}].filters", "message": "must name at least one field"})
    fields = mapping.get("fields") or {}
    id_field = str(mapping.get("idField") or "id")
    faults += geo_filter_problems(body.filters, fields, "filters")
    faults += geo_filter_problems(consequence.add_filters, fields, "consequence.addFilters")
    for kind, items in weighted:
        for i, item_filters in enumerate(items):
            faults += geo_filter_problems(item_filters, fields, f"consequence.{kind}[{i}].filters")
    for name, path in rule_filter_uses(stored):
        if name == id_field:
            continue
        problem = capability_problem(fields.get(name), "filterable", id_field, name)
        if problem:
            faults.append({"path": path, "message": f"{name}: {problem}"})
    for i, window in enumerate(body.validity):
        if window.from_ is not None and window.until is not None and window.from_ >= window.until:
            faults.append({"path": f"validity[{i}]", "message": "from must be before until"})
    positions = [p.position for p in consequence.pin]
    if len(set(positions)) != len(positions):
        faults.append({"path": "consequence.pin", "message": "two pins at the same position"})
    if len({p.id for p in consequence.pin}) != len(consequence.pin):
        faults.append({"path": "consequence.pin", "message": "a document is pinned twice"})
    if consequence.replace_query is not None and not consequence.replace_query.strip():
        faults.append({"path": "consequence.replaceQuery", "message": "must not be empty"})
    if consequence.redirect is not None and not safe_redirect(consequence.redirect):
        faults.append({"path": "consequence.redirect",
                       "message": "an http(s) URL, or a path of this site starting with a single /"})
    if consequence.user_data is not None:
        # what orjson cannot encode (integers beyond 64 bits, deep nesting) is refused before it is sized
        unstorable = json_problem(consequence.user_data, MAX_USER_DATA_DEPTH, "consequence.userData")
        if unstorable is not None:
            faults.append(unstorable)
        elif len(orjson.dumps(consequence.user_data)) > MAX_USER_DATA_BYTES:
            faults.append({"path": "consequence.userData", "message": f"at most {MAX_USER_DATA_BYTES} bytes of JSON"})
    c = consequence
    if not (c.pin or c.hide or c.boost or c.bury or c.add_filters or c.replace_query or c.redirect
            or c.user_data is not None):
        faults.append({"path": "consequence", "message": "a rule needs at least one consequence"})
    if faults:
        raise validation("The rule is invalid", faults)
