"""Checks a profile against its index's mapping; every fault is a ``PROFILE_INVALID`` detail path."""

from __future__ import annotations

from typing import Any

from control_plane.profile.schemas import ProfileSettings
from shared.errors import ErrorCode, ServiceError
from shared.geo import is_geo_condition
from shared.limits import MAX_FACETS, field_conditions, filter_faults

NUMERIC = {"integer", "float"}
TEXTUAL = {"text", "keyword", "keyword[]"}


def _fields(mapping: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(mapping.get("fields") or {})


def filter_fields(filters: Any, prefix: str = "filters") -> list[tuple[str, str]]:
    """(field, path) pairs a FILTER names, ``not`` included."""
    out: list[tuple[str, str]] = []
    if not isinstance(filters, dict):
        return out
    for name, value in filters.items():
        if name == "not":
            out.extend(filter_fields(value, f"{prefix}.not"))
        else:
            out.append((name, f"{prefix}.{name}"))
    return out


def geo_filter_problems(filters: Any, fields: dict[str, dict[str, Any]], prefix: str = "filters") -> list[dict[str, Any]]:
    """A geo area on a field that is no geopoint, or a value or range on one that is."""
    out: list[dict[str, Any]] = []
    for name, here, cond in field_conditions(filters, prefix):
        if name not in fields:
            continue
        geo = fields[name].get("type") == "geopoint"
        if is_geo_condition(cond) and not geo:
            out.append({"path": here, "message": f"{name}: around and within take a geopoint field"})
        elif geo and not is_geo_condition(cond):
            out.append({"path": here, "message": f"{name}: a geopoint takes {{around: ...}} or {{within: ...}}"})
    return out


def profile_field_uses(settings: ProfileSettings) -> list[tuple[str, str, str]]:
    """(field, path, capability) for every field a profile uses — for validation and the usage registry."""
    uses: list[tuple[str, str, str]] = []
    for name in settings.query_fields:
        uses.append((name, f"queryFields.{name}", "searchable"))
    for name, path in filter_fields(settings.filters):
        if name != "id":
            uses.append((name, path, "filterable"))
    for i, name in enumerate(settings.facets or []):
        uses.append((name, f"facets.{i}", "facetable"))
    for i, name in enumerate(settings.filter_fields or []):
        uses.append((name, f"filterFields.{i}", "filterable"))
    for i, option in enumerate(settings.sort_options):
        for j, spec in enumerate(option.sort):
            name = spec.split(":", 1)[0]
            if name not in ("_score", "relevance"):
                uses.append((name, f"sortOptions.{i}.sort.{j}", "sortable"))
    for i, name in enumerate(settings.retrieve or []):
        uses.append((name, f"retrieve.{i}", "exists"))
    for i, name in enumerate(settings.highlight or []):
        uses.append((name, f"highlight.{i}", "text"))
    for i, boost in enumerate(settings.boosts):
        uses.append((boost.field, f"boosts.{i}.field", "numeric"))
    if settings.distinct is not None:  # grouping reads the value column filters and facets use
        uses.append((settings.distinct, "distinct", "filterable"))
    if settings.semantic is not None:
        uses.append((settings.semantic.field, "semantic.field", "vector"))
    return uses


def capability_problem(spec: dict[str, Any] | None, capability: str, id_field: str, name: str) -> str | None:
    """Why a mapped field cannot serve ``capability``, or None when it can."""
    if spec is None:
        return None if (capability == "exists" and name == id_field) else "unknown field"
    ftype = spec.get("type")
    if capability == "searchable" and not (ftype in TEXTUAL and spec.get("searchable")):
        return "field is not searchable"
    if capability == "filterable" and not (spec.get("filterable") or spec.get("facetable")):
        return "field is not filterable"
    if capability == "facetable" and not spec.get("facetable"):
        return "field is not facetable"
    if capability == "sortable" and not spec.get("sortable"):
        return "field is not sortable"
    if capability == "text" and ftype not in TEXTUAL:
        return "only text and keyword fields can be highlighted"
    if capability == "numeric" and ftype not in NUMERIC:
        return "boost field must be an integer or float field"
    if capability == "vector" and ftype != "vector":
        return "not a vector field"
    return None


def validate_profile(settings: ProfileSettings, mapping: dict[str, Any]) -> None:
    fields = _fields(mapping)
    id_field = str(mapping.get("idField") or "id")
    details: list[dict[str, Any]] = []
    for name, path, capability in profile_field_uses(settings):
        problem = capability_problem(fields.get(name), capability, id_field, name)
        if problem:
            details.append({"path": path, "message": f"{name}: {problem}"})
    distinct = fields.get(settings.distinct) if settings.distinct is not None else None
    if distinct is not None and distinct.get("type") != "keyword":
        details.append({"path": "distinct", "message": f"{settings.distinct}: only a keyword field can group hits"})
    for i, option in enumerate(settings.sort_options):
        for j, spec in enumerate(option.sort):
            name, _, direction = spec.partition(":")
            geo = (fields.get(name) or {}).get("type") == "geopoint"
            if geo and direction != "near":
                details.append({"path": f"sortOptions.{i}.sort.{j}",
                                "message": f"{name} is a geopoint: it sorts by distance ({name}:near)"})
            elif not geo and direction not in ("asc", "desc", ""):
                details.append({"path": f"sortOptions.{i}.sort.{j}", "message": "direction must be asc or desc"
                                + (" (near takes a geopoint field)" if direction == "near" else "")})
    details.extend(geo_filter_problems(settings.filters, fields))
    keys = [o.key for o in settings.sort_options]
    if len(set(keys)) != len(keys):
        details.append({"path": "sortOptions", "message": "sort option keys must be unique"})
    if settings.default_sort is not None and settings.default_sort not in keys:
        details.append({"path": "defaultSort", "message": "must be the key of one of sortOptions"})
    if settings.filters is not None:
        details.extend(filter_faults(settings.filters))  # the same bounds as a search's filters
    if settings.facets is not None and len(set(settings.facets)) > MAX_FACETS:
        details.append({"path": "facets", "message": f"at most {MAX_FACETS} facets", "limit": MAX_FACETS})
    tt = settings.typo_tolerance
    if tt.min_word_size_two_typos < tt.min_word_size_one_typo:
        details.append(
            {"path": "typoTolerance.minWordSizeTwoTypos", "message": "must be at least minWordSizeOneTypo"}
        )
    if details:
        raise ServiceError(ErrorCode.PROFILE_INVALID, "The search profile is invalid", details)


def default_settings(mapping: dict[str, Any], index_facets: list[dict[str, Any]] | None = None) -> ProfileSettings:
    """What a search with no profile uses: every searchable field with weight 1, the index's
    configured facets, and ``FIELD:asc`` / ``FIELD:desc`` sort options for every sortable field."""
    fields = _fields(mapping)
    query_fields = {
        name: {"weight": 1} for name, spec in fields.items() if capability_problem(spec, "searchable", "", name) is None
    }
    sort_options = [
        {"key": f"{name}:{direction}", "label": f"{name} {direction}", "sort": [f"{name}:{direction}"]}
        for name, spec in fields.items()
        if spec.get("sortable")
        for direction in (("near",) if spec.get("type") == "geopoint" else ("asc", "desc"))
    ]
    facets = [f["field"] for f in index_facets or [] if f.get("field") in fields]
    return ProfileSettings.model_validate({"queryFields": query_fields, "sortOptions": sort_options, "facets": facets})
