"""Mapping validation and the compiled per-field view the engine uses."""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.mapping import (
    ANALYZERS,
    FIELD_NAME_PATTERN,
    FIELD_TYPES,
    FLAGS,
    LANGUAGES,
    NUMERIC_TYPES,
    PLAIN,
    SEARCHABLE_TYPES,
)
from shared.semantic import DEFAULT_MODEL, dimensions_of, vector_spec_faults

from .errors import MappingError

__all__ = ["ANALYZERS", "FIELD_TYPES", "LANGUAGES", "NUMERIC_TYPES", "PLAIN", "SEARCHABLE_TYPES", "FieldSpec",
           "analysis_of", "compile_mapping", "validate_mapping"]

_FLAGS = FLAGS
_KNOWN_KEYS = set(_FLAGS) | {"type", "analyzer", "dimensions", "embed"}
_NAME_RE = re.compile(FIELD_NAME_PATTERN)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    searchable: bool
    filterable: bool
    facetable: bool
    sortable: bool
    retrievable: bool
    suggest: bool
    analyzer: str | None
    dimensions: int = 0  # a vector field's length
    embed_from: tuple[str, ...] = ()  # a built-in vector: the fields its text is made of
    model: str | None = None  # ... and the model computing it

    @property
    def is_numeric(self) -> bool:
        return self.type in NUMERIC_TYPES

    @property
    def needs_values(self) -> bool:
        """Whether the field needs a filter/facet/sort column."""
        return self.filterable or self.facetable or self.sortable


def analysis_of(analyzer: str | None, language: str) -> tuple[str, bool]:
    """(language, stem) of a field's analysis: its own analyzer, else the index language."""
    if analyzer == PLAIN:
        return PLAIN, False
    return analyzer or language, True


def validate_mapping(mapping: dict, language: str) -> None:
    errors: list[dict] = []
    if language not in LANGUAGES:
        errors.append({"path": "language", "message": f"unsupported language {language!r}; one of {', '.join(LANGUAGES)}"})
    if not isinstance(mapping, dict):
        raise MappingError(errors + [{"path": "mapping", "message": "mapping must be an object"}])
    for key in mapping:
        if key not in ("idField", "fields", "dynamic"):
            errors.append({"path": str(key), "message": "unknown mapping key"})
    if not isinstance(mapping.get("dynamic", False), bool):
        errors.append({"path": "dynamic", "message": "must be a boolean"})
    id_field = mapping.get("idField", "id")
    if not isinstance(id_field, str) or not id_field:
        errors.append({"path": "idField", "message": "idField must be a non-empty string"})
    fields = mapping.get("fields", {})
    if not isinstance(fields, dict):
        errors.append({"path": "fields", "message": "fields must be an object"})
        fields = {}
    for name, spec in fields.items():
        base = f"fields.{name}"
        if not isinstance(name, str) or not _NAME_RE.match(name):
            errors.append({"path": base, "message": "invalid field name"})
        if not isinstance(spec, dict):
            errors.append({"path": base, "message": "field definition must be an object"})
            continue
        ftype = spec.get("type")
        if ftype not in FIELD_TYPES:
            errors.append({"path": f"{base}.type", "message": f"type must be one of {', '.join(FIELD_TYPES)}"})
        for key in spec:
            if key not in _KNOWN_KEYS:
                errors.append({"path": f"{base}.{key}", "message": "unknown field setting"})
        for flag in _FLAGS:
            if flag in spec and not isinstance(spec[flag], bool):
                errors.append({"path": f"{base}.{flag}", "message": "must be a boolean"})
        if "analyzer" in spec and spec["analyzer"] is not None and spec["analyzer"] not in ANALYZERS:
            errors.append({"path": f"{base}.analyzer", "message": f"analyzer must be one of {', '.join(ANALYZERS)}"})
        if ftype == "vector":
            errors.extend(vector_spec_faults(spec, base))
            continue
        if "dimensions" in spec or "embed" in spec:
            errors.append({"path": base, "message": "dimensions and embed belong to vector fields"})
        if ftype in FIELD_TYPES:
            if spec.get("searchable") and ftype not in SEARCHABLE_TYPES:
                errors.append({"path": f"{base}.searchable", "message": f"a {ftype} field cannot be searchable"})
            if spec.get("sortable") and ftype in ("keyword[]",):
                errors.append({"path": f"{base}.sortable", "message": "a keyword[] field cannot be sortable"})
            if spec.get("facetable") and ftype == "text":
                errors.append({"path": f"{base}.facetable", "message": "a text field cannot be facetable; use keyword"})
            if spec.get("facetable") and ftype == "geopoint":
                errors.append({"path": f"{base}.facetable", "message": "a geopoint field cannot be facetable; "
                                                                       "filter it with around or within"})
            if spec.get("suggest") and ftype not in SEARCHABLE_TYPES:
                errors.append({"path": f"{base}.suggest", "message": f"a {ftype} field cannot feed suggestions"})
            # the analyzer governs how a field is searched: anywhere else it would do nothing
            if spec.get("analyzer") in ANALYZERS and ftype not in SEARCHABLE_TYPES:
                errors.append({"path": f"{base}.analyzer", "message": f"a {ftype} field has no analyzer"})
            elif spec.get("analyzer") in ANALYZERS and spec.get("searchable") is not True:
                errors.append({"path": f"{base}.analyzer", "message": "an analyzer needs searchable: true"})
    if isinstance(id_field, str) and id_field in fields:
        ftype = fields[id_field].get("type") if isinstance(fields[id_field], dict) else None
        if ftype not in (None, "keyword"):
            errors.append({"path": f"fields.{id_field}.type", "message": "the id field must be a keyword"})
    if errors:
        raise MappingError(errors)


def compile_mapping(mapping: dict) -> tuple[str, dict[str, FieldSpec]]:
    out: dict[str, FieldSpec] = {}
    for name, spec in mapping.get("fields", {}).items():
        if spec["type"] == "vector":  # never returned in hits unless asked: hundreds of numbers
            embed = spec.get("embed") or {}
            out[name] = FieldSpec(name=name, type="vector", searchable=False, filterable=False, facetable=False,
                                  sortable=False, retrievable=bool(spec.get("retrievable", False)), suggest=False,
                                  analyzer=None, dimensions=dimensions_of(spec), embed_from=tuple(embed.get("from", ())),
                                  model=(embed.get("model") or DEFAULT_MODEL) if embed else None)
            continue
        out[name] = FieldSpec(
            name=name,
            type=spec["type"],
            searchable=bool(spec.get("searchable", False)),
            filterable=bool(spec.get("filterable", False)),
            facetable=bool(spec.get("facetable", False)),
            sortable=bool(spec.get("sortable", False)),
            retrievable=bool(spec.get("retrievable", True)),
            suggest=bool(spec.get("suggest", False)),
            analyzer=spec.get("analyzer"),
        )
    return mapping.get("idField", "id"), out
