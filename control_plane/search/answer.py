"""The search answer's JSON schema, for the OpenAPI document (the body is assembled as bytes in
``search.service.run_search`` for speed, so no response model validates it)."""

from __future__ import annotations

from typing import Any

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
                },
            },
        },
        "total": {"type": "integer"},
        "page": {"type": "integer"},
        "perPage": {"type": "integer"},
        "facets": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"anyOf": [_FACET_VALUE, _FACET_RANGE]}},
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
                         "limits allow (`details[].path` and `limit` name it; README \"Search limits\")"},
    503: {"description": "SEARCH_TIMEOUT: the search ran past `SHOPSEARCH_SEARCH_TIMEOUT_MS` and was stopped; "
                         "UNAVAILABLE: a dependency (the database, the search workers) is down"},
}
