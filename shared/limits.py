"""Bounds on the work one search request may ask for (docs/api.md "Search limits").

A search runs on the shards' CPU, and storefront searches come with a public key anyone can read
from a shop's pages, so every dimension of a request that multiplies engine work is capped here and
refused with 400 ``VALIDATION_ERROR`` before any engine work: each detail names the path, the limit
(``limit``) and says what was exceeded. Profile filters get the same checks at save time
(``PROFILE_INVALID``). Time is bounded separately: ``Settings.search_timeout_ms``.
"""

from __future__ import annotations

from typing import Any

from shared.errors import ErrorCode, ServiceError
from shared.geo import GEO_OPS, GEO_SCHEMAS, geo_faults

MAX_QUERY_CHARS = 512
MAX_QUERY_WORDS = 32
#: field conditions plus and/or/not nodes, over the whole filter
MAX_FILTER_CLAUSES = 64
#: values in one field condition's list, and entries in one and/or list
MAX_FILTER_VALUES = 100
#: and/or/not levels nested inside each other
MAX_FILTER_DEPTH = 6
#: characters in one filter value
MAX_FILTER_VALUE_CHARS = 256
MAX_FACETS = 20
#: page × perPage: every shard ranks and returns that many hits for the merge
MAX_RESULT_WINDOW = 1000
#: characters of a field value highlighted (the rest of a longer value is left out of the highlight)
MAX_HIGHLIGHT_CHARS = 10_000
#: queries in one multi-search (a page's widgets)
MAX_MULTI_QUERIES = 20

RANGE_OPS = frozenset({"gt", "gte", "lt", "lte"})
_SCALARS = (str, int, float, bool)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


# FILTER (CONTRACT §5) as JSON Schema: what filter_faults checks of its shape, but the depth and the
# count of conditions over the whole filter, and the fields (the mapping's, stated per operation).
FILTER_SCHEMAS: dict[str, dict[str, Any]] = {
    "Filter": {
        "type": "object",
        "description": f"Fields AND, the values of one field OR; `and`/`or` take lists of filters, `not` a filter. "
        f"Nested at most {MAX_FILTER_DEPTH} levels, at most {MAX_FILTER_CLAUSES} conditions in all.",
        "maxProperties": MAX_FILTER_CLAUSES,
        "properties": {
            "and": {"type": "array", "maxItems": MAX_FILTER_VALUES, "items": _ref("Filter")},
            "or": {"type": "array", "maxItems": MAX_FILTER_VALUES, "items": _ref("Filter")},
            "not": _ref("Filter"),
        },
        "additionalProperties": _ref("FilterCondition"),
    },
    "FilterCondition": {
        "description": "A value, a list of values (any of them), or a range",
        "anyOf": [
            _ref("FilterValue"),
            {"type": "array", "maxItems": MAX_FILTER_VALUES, "items": _ref("FilterValue")},
            _ref("FilterRange"),
            _ref("GeoFilter"),
        ],
    },
    "FilterValue": {
        "anyOf": [{"type": "string", "maxLength": MAX_FILTER_VALUE_CHARS}, {"type": "number"}, {"type": "boolean"}],
    },
    "FilterRange": {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": False,
        "properties": {op: _ref("FilterValue") for op in sorted(RANGE_OPS)},
    },
    **GEO_SCHEMAS,
}


def _fault(path: str, message: str, limit: int | None = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"path": path, "message": message}
    if limit is not None:
        detail["limit"] = limit
    return detail


def _value_fault(value: Any, path: str) -> dict[str, Any] | None:
    if not isinstance(value, _SCALARS):
        return _fault(path, "must be a string, number or boolean")
    if isinstance(value, str) and len(value) > MAX_FILTER_VALUE_CHARS:
        return _fault(path, f"at most {MAX_FILTER_VALUE_CHARS} characters", MAX_FILTER_VALUE_CHARS)
    return None


def _condition_faults(cond: Any, path: str) -> list[dict[str, Any]]:
    """A field condition: a value, a list of values, a range ``{gt, gte, lt, lte}`` or a geo area."""
    if isinstance(cond, dict) and set(cond) & GEO_OPS:
        return geo_faults(cond, path)
    if isinstance(cond, dict):
        if not cond or not set(cond) <= RANGE_OPS:
            return [_fault(path, "a range takes gt, gte, lt and lte only")]
        return [f for op, v in cond.items() if (f := _value_fault(v, f"{path}.{op}")) is not None]
    if isinstance(cond, list):
        if len(cond) > MAX_FILTER_VALUES:
            return [_fault(path, f"at most {MAX_FILTER_VALUES} values", MAX_FILTER_VALUES)]
        return [f for i, v in enumerate(cond) if (f := _value_fault(v, f"{path}[{i}]")) is not None]
    fault = _value_fault(cond, path)
    return [fault] if fault is not None else []


def filter_faults(filters: Any, path: str = "filters") -> list[dict[str, Any]]:
    """Every problem of a FILTER's shape and size; never recurses past ``MAX_FILTER_DEPTH``."""
    faults: list[dict[str, Any]] = []
    clauses = 0
    # (node, path, depth): iterative, so a filter nested thousands of levels costs nothing extra
    todo: list[tuple[Any, str, int]] = [(filters, path, 0)]
    while todo:
        node, at, depth = todo.pop()
        if not isinstance(node, dict):
            faults.append(_fault(at, "must be an object"))
            continue
        for key, cond in node.items():
            clauses += 1
            if clauses > MAX_FILTER_CLAUSES:
                return [_fault(path, f"at most {MAX_FILTER_CLAUSES} conditions in all", MAX_FILTER_CLAUSES)]
            here = f"{at}.{key}"
            if key in ("and", "or", "not"):
                if depth + 1 > MAX_FILTER_DEPTH:
                    faults.append(_fault(here, f"filters nest at most {MAX_FILTER_DEPTH} levels", MAX_FILTER_DEPTH))
                    continue
                if key == "not":
                    todo.append((cond, here, depth + 1))
                elif not isinstance(cond, list):
                    faults.append(_fault(here, "must be a list of filters"))
                elif len(cond) > MAX_FILTER_VALUES:
                    faults.append(_fault(here, f"at most {MAX_FILTER_VALUES} filters", MAX_FILTER_VALUES))
                else:
                    todo.extend((sub, f"{here}[{i}]", depth + 1) for i, sub in enumerate(cond))
            else:
                faults.extend(_condition_faults(cond, here))
    return faults


def field_conditions(filters: Any, path: str = "filters") -> list[tuple[str, str, Any]]:
    """``(field, path, condition)`` of every field condition in a FILTER, through and/or/not
    (iterative; malformed parts are skipped: :func:`filter_faults` refuses them)."""
    out: list[tuple[str, str, Any]] = []
    todo: list[tuple[Any, str]] = [(filters, path)]
    while todo:
        node, at = todo.pop()
        if not isinstance(node, dict):
            continue
        for key, cond in node.items():
            here = f"{at}.{key}"
            if key == "not":
                todo.append((cond, here))
            elif key in ("and", "or") and isinstance(cond, list):
                todo.extend((sub, f"{here}[{i}]") for i, sub in enumerate(cond))
            elif key not in ("and", "or"):
                out.append((str(key), here, cond))
    return out


def request_faults(q: str, filters: Any, facets: list[str] | None, page: int, per_page: int) -> list[dict[str, Any]]:
    faults: list[dict[str, Any]] = []
    if len(q) > MAX_QUERY_CHARS:
        faults.append(_fault("q", f"at most {MAX_QUERY_CHARS} characters", MAX_QUERY_CHARS))
    elif len(q.split()) > MAX_QUERY_WORDS:
        faults.append(_fault("q", f"at most {MAX_QUERY_WORDS} words", MAX_QUERY_WORDS))
    if filters is not None:
        faults.extend(filter_faults(filters))
    if facets is not None:
        if len(facets) > MAX_FACETS:
            faults.append(_fault("facets", f"at most {MAX_FACETS} facets", MAX_FACETS))
        elif len(set(facets)) != len(facets):
            faults.append(_fault("facets", "each facet at most once"))
    if page * per_page > MAX_RESULT_WINDOW:
        faults.append(_fault("page", f"page * perPage must be at most {MAX_RESULT_WINDOW}", MAX_RESULT_WINDOW))
    return faults


def check_request(q: str, filters: Any, facets: list[str] | None, page: int, per_page: int) -> None:
    """400 ``VALIDATION_ERROR`` naming every limit the request goes past."""
    faults = request_faults(q, filters, facets, page, per_page)
    if faults:
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "The search asks for more work than allowed", faults)
