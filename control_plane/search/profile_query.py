"""Turns a profile plus a search request into the engine's query, and the merged result into the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from control_plane.profile.schemas import ProfileSettings
from control_plane.search.limits import MAX_QUERY_CHARS, check_request
from shared.contract import Answer, Boost, Facet, FacetRange, FieldWeight, Query, SortKey, Typo
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


def sort_spec(settings: ProfileSettings, sort_key: str | None) -> tuple[str | None, tuple[SortKey, ...]]:
    key = sort_key or settings.default_sort
    if key is None:
        return None, ()
    for option in settings.sort_options:
        if option.key == key:
            spec = []
            for item in option.sort:
                field, _, direction = item.partition(":")
                if field in ("_score", "relevance"):
                    continue
                spec.append(SortKey(field, desc=(direction or "asc") == "desc"))
            return key, tuple(spec)
    raise ServiceError(
        ErrorCode.VALIDATION_ERROR,
        "Unknown sort option",
        [{"path": "sort", "message": f"{key!r} is not one of the profile's sortOptions"}],
    )


def _facet(definition: dict[str, Any]) -> Facet:
    """An index's facet configuration (CONTRACT §3) as the engine takes it."""
    ranges = tuple(FacetRange(r.get("from"), r.get("to"), r.get("label")) for r in definition.get("ranges") or ())
    size = definition.get("size")
    return Facet(definition["field"], type=definition.get("type") or "terms", size=10 if size is None else int(size),
                 sort=definition.get("sort") or "count", ranges=ranges)


def facet_definitions(
    settings: ProfileSettings, request: SearchRequest, index_facets: list[dict[str, Any]], mapping: dict[str, Any]
) -> tuple[Facet, ...]:
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
        definition = configured.get(name)
        out.append(Facet(name) if definition is None else _facet(definition))
    return tuple(out)


@dataclass(frozen=True)
class AnswerFacts:
    """What the answer echoes of the request: paging, the sort option, the facets asked for."""

    page: int
    per_page: int
    sort: str | None
    facets: tuple[Facet, ...]


def engine_query(
    settings: ProfileSettings,
    request: SearchRequest,
    index_facets: list[dict[str, Any]],
    mapping: dict[str, Any],
    *,
    synonyms: dict[str, tuple[tuple[str, ...], ...]] | None = None,
    timeout_ms: float | None = None,
) -> tuple[Query, AnswerFacts]:
    """The engine query and the paging/sort facts the answer echoes."""
    per_page = request.per_page or settings.per_page
    sort_key, sort = sort_spec(settings, request.sort)
    facets = facet_definitions(settings, request, index_facets, mapping)
    typo = settings.typo_tolerance
    query = Query(
        q=request.q,
        fields={name: FieldWeight(float(qf.weight), qf.typo, qf.prefix) for name, qf in settings.query_fields.items()}
        or None,
        operator=settings.operator,
        typo=Typo(typo.enabled, typo.min_word_size_one_typo, typo.min_word_size_two_typos),
        filters=combined_filters(settings.filters, request.filters),
        facets=facets,
        sort=sort,
        offset=(request.page - 1) * per_page,
        limit=per_page,
        # a field the profile doesn't retrieve is not shown in highlights either
        highlight=tuple(f for f in settings.highlight or [] if settings.retrieve is None or f in settings.retrieve),
        retrieve=None if settings.retrieve is None else tuple(settings.retrieve),
        boosts=tuple(Boost(b.field, b.modifier, b.weight) for b in settings.boosts),
        synonyms=synonyms if synonyms and settings.synonyms else None,
        timeout_ms=timeout_ms,
        distinct=settings.distinct,
    )
    return query, AnswerFacts(request.page, per_page, sort_key, facets)


def format_facets(raw: dict[str, Any], facets: tuple[Facet, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for facet in facets:
        name = facet.field
        counts = raw.get(name)
        if facet.type == "range":
            values = counts if isinstance(counts, list) else [0] * len(facet.ranges)
            out[name] = [
                {"from": r.start, "to": r.end, "label": r.label, "count": int(c)}
                for r, c in zip(facet.ranges, values, strict=False)
            ]
            continue
        items = list(counts.items()) if isinstance(counts, dict) else []
        if facet.sort == "alpha":
            items.sort(key=lambda kv: str(kv[0]).lower())
        else:
            items.sort(key=lambda kv: (-int(kv[1]), str(kv[0])))
        out[name] = [{"value": v, "count": int(c)} for v, c in items[: facet.size or 10]]
    return out


def format_answer(answer: Answer, facts: AnswerFacts) -> dict[str, Any]:
    return {
        "hits": [{"id": h.id, "score": h.score, "document": h.document, "highlights": h.highlights}
                 if h.group_size is None else  # the profile's distinct is on
                 {"id": h.id, "score": h.score, "document": h.document, "highlights": h.highlights,
                  "groupSize": h.group_size}
                 for h in answer.hits],
        "total": answer.total,
        "page": facts.page,
        "perPage": facts.per_page,
        "facets": format_facets(answer.facets, facts.facets),
        "sort": facts.sort,
        "appliedRules": [],
    }
