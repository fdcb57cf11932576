"""What a mapping may hold (CONTRACT §3), for the engine that enforces it and the OpenAPI document
that states it: the field types, languages and analyzers, the field name rule, and the JSON Schema
of a mapping (:func:`mapping_json_schema`), which says all of ``validate_mapping`` but one rule
(the id field, when mapped, is a keyword: it names a field by value)."""

from __future__ import annotations

from typing import Any

from shared.semantic import vector_json_schema

LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv")
FIELD_TYPES = ("text", "keyword", "integer", "float", "boolean", "date", "keyword[]", "geopoint", "vector")
NUMERIC_TYPES = ("integer", "float", "date")
SEARCHABLE_TYPES = ("text", "keyword", "keyword[]")
FLAGS = ("searchable", "filterable", "facetable", "sortable", "retrievable", "suggest")
# A field's analyzer overrides the index language for that field, when indexing and querying:
# one of the languages (that language's stemmer) or PLAIN (words case- and accent-folded, never
# stemmed: brand names, codes, a field in several languages).
PLAIN = "plain"
ANALYZERS = LANGUAGES + (PLAIN,)
FIELD_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$"


def _never(flag: str) -> dict[str, Any]:
    return {"properties": {flag: {"const": False}}}


def mapping_json_schema() -> dict[str, Any]:
    """The JSON Schema of a mapping ``{idField?, fields?: {NAME: FIELD}}``."""
    unsearchable = [t for t in FIELD_TYPES if t not in SEARCHABLE_TYPES]
    field = {
        "type": "object",
        "required": ["type"],
        "additionalProperties": False,
        "properties": {
            "type": {"enum": list(FIELD_TYPES)},
            **{flag: {"type": "boolean"} for flag in FLAGS},
            "analyzer": {
                "enum": [*ANALYZERS, None],
                "description": "A language (its stemmer) or `plain` (folded, never stemmed); needs `searchable: true`",
            },
            **vector_json_schema(),
        },
        "allOf": [
            {  # numbers, dates and booleans are not searched as words
                "if": {"properties": {"type": {"enum": unsearchable}}},
                "then": {"properties": {"searchable": {"const": False}, "suggest": {"const": False},
                                        "analyzer": {"type": "null"}}},
            },
            {"if": {"properties": {"type": {"const": "keyword[]"}}}, "then": _never("sortable")},
            {"if": {"properties": {"type": {"const": "text"}}}, "then": _never("facetable")},
            {"if": {"properties": {"type": {"const": "geopoint"}}}, "then": _never("facetable")},
            {  # a vector field: its dimensions or its embed, searched by a profile's semantic setting only
                "if": {"properties": {"type": {"const": "vector"}}},
                "then": {"properties": {flag: {"const": False} for flag in ("filterable", "facetable", "sortable")},
                         "oneOf": [{"required": ["dimensions"]}, {"required": ["embed"]}]},
                "else": {"not": {"anyOf": [{"required": ["dimensions"]}, {"required": ["embed"]}]}},
            },
            {
                "if": {"required": ["analyzer"], "properties": {"analyzer": {"type": "string"}}},
                "then": {"required": ["searchable"], "properties": {"searchable": {"const": True}}},
            },
        ],
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "Fields not in the mapping are stored and returned, not searched. The `idField`, when "
        "mapped, is a `keyword`.",
        "properties": {
            "idField": {"type": "string", "minLength": 1, "default": "id"},
            "dynamic": {
                "type": "boolean",
                "default": False,
                "description": "Infer a field for every new top-level field of uploaded documents (strings text and "
                "searchable, numbers float, booleans boolean, arrays of strings keyword[]). An index created without "
                "a mapping is dynamic.",
            },
            "fields": {
                "type": "object",
                "propertyNames": {"pattern": FIELD_NAME_PATTERN},
                "additionalProperties": field,
            },
        },
    }
