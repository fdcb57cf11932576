"""The JSON Schema of a mapping in the OpenAPI document (shared.mapping) says what the engine's
validate_mapping takes, mapping by mapping."""

from __future__ import annotations

import jsonschema
import pytest

from search_workers.engine.errors import MappingError
from search_workers.engine.mapping import validate_mapping
from shared.mapping import FIELD_TYPES, mapping_json_schema

VALID = [
    {},
    {"idField": "sku", "fields": {}},
    {"fields": {}, "dynamic": True},
    {"dynamic": False},
    {"fields": {"title": {"type": "text", "searchable": True, "analyzer": "plain", "suggest": True}}},
    {"fields": {"brand": {"type": "keyword", "searchable": True, "facetable": True, "sortable": True}}},
    {"fields": {"tags": {"type": "keyword[]", "facetable": True, "sortable": False}}},
    {"fields": {"price": {"type": "float", "filterable": True, "sortable": True, "analyzer": None}}},
    {"fields": {"a.b-c_d": {"type": "date", "searchable": False, "retrievable": False}}},
    {"fields": {"loc": {"type": "geopoint", "filterable": True, "sortable": True, "retrievable": True}}},
    *[{"fields": {"f": {"type": t}}} for t in FIELD_TYPES if t != "vector"],
    {"fields": {"v": {"type": "vector", "dimensions": 384}}},
    {"fields": {"v": {"type": "vector", "embed": {"from": ["name", "brand"], "model": "wordllama-256"}}}},
]
INVALID = [
    {"other": 1},
    {"dynamic": "yes"},
    {"dynamic": 1},
    {"idField": ""},
    {"idField": 5},
    {"fields": []},
    {"fields": {"1abc": {"type": "text"}}},
    {"fields": {"f": {}}},
    {"fields": {"f": {"type": "geo"}}},
    {"fields": {"f": {"type": "text", "weight": 2}}},
    {"fields": {"f": {"type": "text", "searchable": 1}}},
    {"fields": {"f": {"type": "integer", "searchable": True}}},
    {"fields": {"f": {"type": "boolean", "suggest": True}}},
    {"fields": {"f": {"type": "float", "analyzer": "en"}}},
    {"fields": {"f": {"type": "keyword[]", "sortable": True}}},
    {"fields": {"f": {"type": "geopoint", "facetable": True}}},
    {"fields": {"v": {"type": "vector"}}},
    {"fields": {"v": {"type": "vector", "dimensions": 3, "embed": {"from": ["name"]}}}},
    {"fields": {"v": {"type": "vector", "dimensions": 3, "sortable": True}}},
    {"fields": {"v": {"type": "vector", "embed": {"from": []}}}},
    {"fields": {"v": {"type": "text", "dimensions": 3}}},
    {"fields": {"f": {"type": "geopoint", "searchable": True}}},
    {"fields": {"f": {"type": "geopoint", "suggest": True}}},
    {"fields": {"f": {"type": "text", "facetable": True}}},
    {"fields": {"f": {"type": "text", "analyzer": "en"}}},
    {"fields": {"f": {"type": "text", "searchable": False, "analyzer": "en"}}},
    {"fields": {"f": {"type": "text", "searchable": True, "analyzer": "klingon"}}},
    {"fields": {"x" * 129: {"type": "text"}}},
]


def _engine_takes(mapping: dict) -> bool:
    try:
        validate_mapping(mapping, "en")
    except MappingError:
        return False
    return True


@pytest.mark.parametrize("mapping", VALID)
def test_valid_both_ways(mapping):
    jsonschema.validate(mapping, mapping_json_schema())
    assert _engine_takes(mapping)


@pytest.mark.parametrize("mapping", INVALID)
def test_invalid_both_ways(mapping):
    assert not jsonschema.Draft202012Validator(mapping_json_schema()).is_valid(mapping)
    assert not _engine_takes(mapping)


def test_the_one_rule_beyond_the_schema():
    """The id field, when mapped, is a keyword: the document lists it with the 400 of each route."""
    mapping = {"idField": "sku", "fields": {"sku": {"type": "integer"}}}
    assert jsonschema.Draft202012Validator(mapping_json_schema()).is_valid(mapping)
    assert not _engine_takes(mapping)
