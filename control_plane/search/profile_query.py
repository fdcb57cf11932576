"""Turns a profile plus a search request into the engine's query, and the merged result into the answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.profile.schemas import ProfileSettings
from control_plane.search.limits import MAX_QUERY_CHARS, check_request
from shared.errors import ErrorCode, ServiceError


class SearchRequest(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    q: str = Field("", max_length=MAX_QUERY_CHARS)
    filters: dict[str, Any] | None = None
    facets: list[str] | None = None
    sort: str | None = Field(None, max_length=100)
    page: int = Field(1, ge=1, le=1000)
    per_page: int | None = Field(None, ge=1, le=100)
    profile_key: str | None = Field(None, max_length=100)
    profile: dict[str, Any] | None = None
    user_token: str | None = Field(None, max_length=200)


def check_limits(settings: ProfileSettings, request: SearchRequest) -> None:
    """400 when the request asks for more work than :mod:`control_plane.search.limits` allows."""
    check_request(request.q, request.filters, request.facets, request.page, request.per_page or settings.per_page)


def combined_filters(profile_filters: dict[str, Any] | None, request_filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """Request filters AND the profile's. The profile's go in an ``and`` clause: a fixed constraint,
    so they also narrow the disjunctive facet counts of their own fields."""
    if not profile_filters:
        return request_filters or None
    merged = dict(request_filters or {})
    merged["and"] = [*merged.get("and", []), profile_filters]
    return merged


def sort_spec(settings: ProfileSettings, sort_key: str | None) -> tuple[str | None, list[list[str]]]:
    key = sort_key or settings.default_sort
    if key is None:
        return None, []
    for option in settings.sort_options:
        if option.key == key:
            spec = []
            for item in option.sort:
                field, _, direction = item.partition(":")
                if field in ("_score", "relevance"):
                    continue
                spec.append([field, direction or "asc"])
            return key, spec
    raise ServiceError(
        ErrorCode.VALIDATION_ERROR,
        "Unknown sort option",
        [{"path": "sort", "message": f"{key!r} is not one of the profile's sortOptions"}],
    )


def facet_definitions(
    settings: ProfileSettings, request: SearchRequest, index_facets: list[dict[str, Any]], mapping: dict[str, Any]
) -> list[dict[str, Any]]:
    wanted = request.facets if request.facets is not None else (settings.facets or [])
    configured = {f["field"]: f for f in index_facets}
    fields = mapping.get("fields") or {}
    out = []
    for i, name in enumerate(wanted):
        spec = fields.get(name)
        if spec is None or not spec.get("facetable"):
            raise ServiceError(
                ErrorCode.VALIDATION_ERROR,
                "Facet field is not facetable",
                [{"path": f"facets.{i}", "message": f"{name}: field is not facetable"}],
            )
        definition = configured.get(name, {"field": name, "type": "terms", "size": 10, "sort": "count"})
        out.append(definition)
    return out


def engine_query(
    settings: ProfileSettings,
    request: SearchRequest,
    index_facets: list[dict[str, Any]],
    mapping: dict[str, Any],
    *,
    synonyms: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine query and the paging/sort facts the answer echoes."""
    per_page = request.per_page or settings.per_page
    sort_key, sort = sort_spec(settings, request.sort)
    facets = facet_definitions(settings, request, index_facets, mapping)
    query: dict[str, Any] = {
        "q": request.q,
        "fields": {name: qf.model_dump() for name, qf in settings.query_fields.items()} or None,
        "operator": settings.operator,
        "typo": settings.typo_tolerance.model_dump(by_alias=True),
        "filters": combined_filters(settings.filters, request.filters),
        "facets": facets,
        "sort": sort,
        "offset": (request.page - 1) * per_page,
        "limit": per_page,
        # a field the profile doesn't retrieve is not shown in highlights either
        "highlight": [f for f in settings.highlight or [] if settings.retrieve is None or f in settings.retrieve],
        "retrieve": settings.retrieve,
        "boosts": [b.model_dump() for b in settings.boosts],
    }
    if synonyms and settings.synonyms:
        query["synonyms"] = synonyms
    return query, {"page": request.page, "perPage": per_page, "sort": sort_key, "facetDefs": facets}


def format_facets(raw: dict[str, Any], facet_defs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for definition in facet_defs:
        name = definition["field"]
        counts = raw.get(name)
        if definition.get("type") == "range":
            ranges = definition.get("ranges") or []
            values = counts if isinstance(counts, list) else [0] * len(ranges)
            out[name] = [
                {"from": r.get("from"), "to": r.get("to"), "label": r.get("label"), "count": int(c)}
                for r, c in zip(ranges, values, strict=False)
            ]
            continue
        items = list((counts or {}).items()) if isinstance(counts, dict) else list(counts or [])
        if definition.get("sort") == "alpha":
            items.sort(key=lambda kv: str(kv[0]).lower())
        else:
            items.sort(key=lambda kv: (-int(kv[1]), str(kv[0])))
        out[name] = [{"value": v, "count": int(c)} for v, c in items[: int(definition.get("size") or 10)]]
    return out


def format_answer(result: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "hits": [
            {"id": h["id"], "score": h.get("score"), "document": h.get("document"), "highlights": h.get("highlights") or {}}
            for h in result.get("hits", [])
        ],
        "total": int(result.get("total", 0)),
        "page": facts["page"],
        "perPage": facts["perPage"],
        "facets": format_facets(result.get("facets") or {}, facts["facetDefs"]),
        "sort": facts["sort"],
        "appliedRules": [],
    }
