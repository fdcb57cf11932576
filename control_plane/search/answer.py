"""The search answers' JSON schemas, for the OpenAPI document (the body is assembled as bytes in
``search.service.run_search`` for speed, so no response model validates it)."""

from __future__ import annotations

from typing import Any

from control_plane.search.facet_values import FACET_VALUES_ANSWER

_FACET_VALUE: dict[str, Any] = {
    "type": "object",
    "required": ["value", "count"],
    "properties": {"value": {}, "count": {"type": "integer"}},
}
_FACET_RANGE: dict[str, Any] = {
    "type": "object",
    "required": ["label", "count"],
    "properties": {
        "from": {"type": ["number", "null"]},
        "to": {"type": ["number", "null"]},
        "label": {"type": ["string", "null"]},
        "count": {"type": "integer"},
    },
}

_FACET_NODE: dict[str, Any] = {  # a category tree's node (a hierarchy facet); children are nodes too
    "type": "object",
    "required": ["value", "path", "level", "count", "children"],
    "properties": {"value": {"type": "string"}, "path": {"type": "string"}, "level": {"type": "integer"},
                   "count": {"type": "integer"}, "children": {"type": "array", "items": {"type": "object"}}},
}

SEARCH_ANSWER: dict[str, Any] = {
    "title": "SearchAnswer",
    "type": "object",
    "required": ["hits", "total", "page", "perPage", "facets", "sort", "appliedRules", "queryId", "tookMs"],
    "properties": {
        "hits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "score", "document", "highlights"],
                "properties": {
                    "id": {"type": "string"},
                    "score": {"type": ["number", "null"]},
                    "document": {"type": ["object", "null"]},
                    "highlights": {"type": "object"},
                    "groupSize": {"type": "integer"},
                    "distanceM": {"type": ["integer", "null"],
                                  "description": "Meters from `near` (a sort option `FIELD:near`); null: no point"},
                },
            },
        },
        "total": {"type": "integer"},
        "page": {"type": "integer"},
        "perPage": {"type": "integer"},
        "facets": {
            "type": "object",
            "additionalProperties": {"type": "array",
                                     "items": {"anyOf": [_FACET_NODE, _FACET_VALUE, _FACET_RANGE]}},
        },
        "sort": {"type": ["string", "null"]},
        "appliedRules": {"type": "array", "items": {"type": "string"}},
        "queryId": {"type": "string"},
        "tookMs": {"type": "number"},
    },
}

SEARCH_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Search answer: hits, total, page, perPage, facets, sort, appliedRules, queryId, tookMs",
        "content": {"application/json": {"schema": SEARCH_ANSWER}},
    },
    400: {"description": "VALIDATION_ERROR: a malformed request, or one asking for more work than the search "
                         "limits allow (`details[].path` and `limit` name it; docs/api.md \"Search limits\")"},
    503: {"description": "SEARCH_TIMEOUT: the search ran past `SHOPSEARCH_SEARCH_TIMEOUT_MS` and was stopped; "
                         "UNAVAILABLE: a dependency (the database, the search workers) is down"},
}

MULTI_SEARCH_RESPONSES: dict[int | str, dict[str, Any]] = {
    **SEARCH_RESPONSES,
    200: {
        "description": "Each query's answer, in the order of the queries: exactly what the single route answers",
        "content": {"application/json": {"schema": {
            "title": "MultiSearchAnswer", "type": "object", "required": ["results"],
            "properties": {"results": {"type": "array", "items": {"anyOf": [SEARCH_ANSWER, FACET_VALUES_ANSWER]}}},
        }}},
    },
}

FACET_VALUES_RESPONSES: dict[int | str, dict[str, Any]] = {
    **SEARCH_RESPONSES,
    200: {
        "description": "The facet's values matching `q` (prefix or one typo), by count over the search, highlighted",
        "content": {"application/json": {"schema": FACET_VALUES_ANSWER}},
    },
}
