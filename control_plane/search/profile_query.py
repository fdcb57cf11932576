"""Turns a profile plus a search request into the engine's query, and the merged result into the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import Field

from control_plane.profile.schemas import ProfileSettings
from control_plane.search.facet_values import FacetValuesAsk
from control_plane.wire import Filter, RequestModel, documented_as
from shared.contract import Answer, Boost, Facet, FacetRange, FieldWeight, Hit, Query, SortKey, Typo
from shared.errors import ErrorCode, ServiceError
from shared.limits import (
    MAX_FACETS,
    MAX_MULTI_QUERIES,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_RESULT_WINDOW,
    check_request,
)
from shared.semantic import MAX_DIMENSIONS

FacetType = Literal["terms", "range", "hierarchy", "values"]
# An inline profile stays a dict until the search validates it (PROFILE_INVALID, paths relative to it).
InlineProfileBody = Annotated[dict[str, Any], documented_as("InlineProfile", {"type": "object"})]



class NearPoint(RequestModel):
    """The point a ``FIELD:near`` sort option measures distances from."""

    lat: float = Field(ge=-90, le=90, allow_inf_nan=False)
    lng: float = Field(ge=-180, le=180, allow_inf_nan=False)


class StorefrontSearchRequest(RequestModel):
    """The body of a storefront search: its profile is the path's."""

    q: str = Field("", max_length=MAX_QUERY_CHARS, description=f"Plain text, at most {MAX_QUERY_WORDS} words")
    filters: Filter | None = None
    # bounds checked by limits.check_request (a detail naming the limit), stated here
    facets: list[str] | None = Field(None, json_schema_extra={"maxItems": MAX_FACETS, "uniqueItems": True},
                                     description="Fields of the profile's facets to count")
    sort: str | None = Field(None, max_length=100, description="The `key` of one of the profile's `sortOptions`")
    page: int = Field(1, ge=1, le=MAX_RESULT_WINDOW, description=f"1-based; `page` × `perPage` at most "
                          f"{MAX_RESULT_WINDOW}")
    per_page: int | None = Field(None, ge=0, le=100,
                                 description="Left out: the profile's; 0: facets and total only, no hits")
    user_token: str | None = Field(None, max_length=200)
    near: NearPoint | None = Field(None, description="The point a sort option `FIELD:near` (a geopoint field) "
                                                     "orders by distance from; each hit then has `distanceM`")
    vector: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        None, min_length=1, max_length=MAX_DIMENSIONS,
        description="The query's own vector, for a profile whose `semantic.field` holds shop-supplied vectors")
    similar_to: str | None = Field(None, min_length=1, max_length=512,
                                   description="Rank by this document's vector (the profile's `semantic.field`, "
                                               "else the index's only vector field); it is left out of the hits. "
                                               "404 when the index has no such document")

    def for_search(self) -> SearchRequest:
        return SearchRequest.model_construct(self.model_fields_set, **self.__dict__)  # validated: as it is

    def page_size(self, settings: ProfileSettings) -> int:
        return settings.per_page if self.per_page is None else self.per_page


class SearchRequest(StorefrontSearchRequest):
    """The body of the secret search: a saved profile by `profileKey`, an inline `profile`, or neither
    (the index's default settings)."""

    profile_key: str | None = Field(None, max_length=100)
    profile: InlineProfileBody | None = None


class MultiQuery(StorefrontSearchRequest):
    """One query of a multi-search: a storefront search body naming its profile, or a facet value
    search (``facetValues``) over that search."""

    profile_key: str = Field(min_length=1, max_length=100)
    facet_values: FacetValuesAsk | None = Field(
        None, description="A facet value search: the facet's values matching `facetValues.q`, counted over `q` "
                          "and `filters`")

    def search_request(self) -> SearchRequest:
        fields = {name: getattr(self, name) for name in StorefrontSearchRequest.model_fields}
        if self.facet_values is not None:
            fields.update(per_page=0, facets=[self.facet_values.field])
        return SearchRequest.model_construct(**fields)


class MultiSearchRequest(RequestModel):
    queries: list[MultiQuery] = Field(min_length=1, max_length=MAX_MULTI_QUERIES)


def check_limits(settings: ProfileSettings, request: SearchRequest) -> None:
    """400 when the request asks for more work than :mod:`shared.limits` allows."""
    check_request(request.q, request.filters, request.facets, request.page, request.page_size(settings))


def combined_filters(profile_filters: dict[str, Any] | None, request_filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """Request filters AND the profile's. The profile's go in an ``and`` clause: a fixed constraint,
    so they also narrow the disjunctive facet counts of their own fields."""
    if not profile_filters:
        return request_filters or None
    merged = dict(request_filters or {})
    merged["and"] = [*merged.get("and", []), profile_filters]
    return merged


def sort_spec(settings: ProfileSettings, sort_key: str | None,
              near: NearPoint | None = None) -> tuple[str | None, tuple[SortKey, ...]]:
    """The sort option asked for (or the profile's default) as the engine's keys. A sort by distance
    needs ``near``: asked for without it, 400; the default without it, relevance (a facet value
    search, autocomplete's products, a shopper who shared no location)."""
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
                if direction == "near":
                    if near is None and sort_key is None:
                        return None, ()  # the profile's default, and no point to measure from: relevance
                    if near is None:
                        raise ServiceError(ErrorCode.VALIDATION_ERROR, "This sort orders by distance: send near",
                                           [{"path": "near", "message": f"the sort option {key!r} orders by the "
                                                                        f"distance from near: {{lat, lng}}"}])
                    spec.append(SortKey(field, near=(near.lat, near.lng)))
                    continue
                spec.append(SortKey(field, desc=(direction or "asc") == "desc"))
            return key, tuple(spec)
    raise ServiceError(
        ErrorCode.VALIDATION_ERROR,
        "Unknown sort option",
        [{"path": "sort", "message": f"{key!r} is not one of the profile's sortOptions"}],
    )


def _facet(definition: dict[str, Any], filters: dict[str, Any] | None) -> Facet:
    """An index's facet configuration (CONTRACT §3) as the engine takes it. A category tree counts
    level 0 and the children of every path the search filters the field on, down to it."""
    ranges = tuple(FacetRange(r.get("from"), r.get("to"), r.get("label")) for r in definition.get("ranges") or ())
    size = definition.get("size")
    kind = definition.get("type") or "terms"
    expand: tuple[str, ...] = ()
    separator = definition.get("separator") or " > "
    if kind == "hierarchy":
        refined = (filters or {}).get(definition["field"])
        paths = [v for v in (refined if isinstance(refined, list) else [refined]) if isinstance(v, str)]
        expand = tuple(sorted({separator.join(p.split(separator)[: i + 1]) for p in paths
                               for i in range(p.count(separator) + 1)}))
    return Facet(definition["field"], type=cast(FacetType, kind), size=10 if size is None else int(size),
                 sort=definition.get("sort") or "count", ranges=ranges, separator=separator, expand=expand)


def hierarchies(index_facets: list[dict[str, Any]]) -> dict[str, str] | None:
    """The index's fields of paths (field -> separator): their filters match a path and below."""
    found = {f["field"]: f.get("separator") or " > " for f in index_facets if f.get("type") == "hierarchy"}
    return found or None


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
        out.append(Facet(name) if definition is None else _facet(definition, request.filters))
    return tuple(out)


@dataclass(frozen=True)
class AnswerFacts:
    """What the answer echoes of the request: paging, the sort option, the facets asked for."""

    page: int
    per_page: int
    sort: str | None
    facets: tuple[Facet, ...]
    distance_at: int | None = None  # the engine sort key measuring distance: each hit gets distanceM


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
    per_page = request.page_size(settings)
    sort_key, sort = sort_spec(settings, request.sort, request.near)
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
        hierarchies=hierarchies(index_facets),
    )
    distance_at = next((i for i, key in enumerate(sort) if key.near is not None), None)
    return query, AnswerFacts(request.page, per_page, sort_key, facets, distance_at)


def format_facets(raw: dict[str, Any], facets: tuple[Facet, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for facet in facets:
        name = facet.field
        counts = raw.get(name)
        if facet.type == "hierarchy":
            out[name] = tree(counts if isinstance(counts, dict) else {}, facet)
            continue
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


def _ordered(items: list[tuple[str, int]], facet: Facet, keep: set[str] | frozenset[str] = frozenset()
             ) -> list[tuple[str, int]]:
    """``size`` values in the facet's order, and any of ``keep`` (a refined path) even past it."""
    if facet.sort == "alpha":
        items.sort(key=lambda kv: str(kv[0]).lower())
    else:
        items.sort(key=lambda kv: (-int(kv[1]), str(kv[0])))
    size = facet.size or 10
    return items[:size] + [kv for kv in items[size:] if kv[0] in keep]


def tree(counts: dict[str, int], facet: Facet) -> list[dict[str, Any]]:
    """``{path: count}`` as nodes ``{value, path, level, count, children}``: level 0, and below every
    path of ``facet.expand`` its children (``size`` and ``sort`` apply per level)."""
    sep = facet.separator
    children: dict[str, list[tuple[str, int]]] = {}
    for path, count in counts.items():
        children.setdefault(path.rpartition(sep)[0] if sep in path else "", []).append((path, count))
    expanded = set(facet.expand)

    def nodes(parent: str, level: int) -> list[dict[str, Any]]:
        return [{"value": path.rpartition(sep)[2] if sep in path else path, "path": path, "level": level,
                 "count": int(count), "children": nodes(path, level + 1) if path in expanded else []}
                for path, count in _ordered(children.get(parent, []), facet, expanded)]

    return nodes("", 0)


def _hit(h: Hit, distance_at: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": h.id, "score": h.score, "document": h.document, "highlights": h.highlights}
    if h.group_size is not None:  # the profile's distinct is on
        out["groupSize"] = h.group_size
    if distance_at is not None:  # meters, whole; None: the document has no point
        meters = h.sort_values[distance_at] if distance_at < len(h.sort_values) else None
        out["distanceM"] = None if meters is None else round(meters)
    return out


def format_answer(answer: Answer, facts: AnswerFacts) -> dict[str, Any]:
    return {
        "hits": [_hit(h, facts.distance_at) for h in answer.hits],
        "total": answer.total,
        "page": facts.page,
        "perPage": facts.per_page,
        "facets": format_facets(answer.facets, facts.facets),
        "sort": facts.sort,
        "appliedRules": [],
    }
