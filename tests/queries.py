"""Test shorthand for the typed engine contract: ``Q({"q": "red", "sort": ["price:desc"],
"facets": ["brand"]})`` builds the :class:`~shared.contract.Query` the control plane would."""

from __future__ import annotations

from typing import Any

from shared.contract import Boost, BoostFilter, Facet, FacetRange, FieldWeight, Query, SortKey, Typo


def _sort(item: Any) -> SortKey:
    if isinstance(item, SortKey):
        return item
    if isinstance(item, str):
        field, _, direction = item.partition(":")
    else:
        field, direction = item[0], (item[1] if len(item) > 1 else "asc")
    return SortKey(field, desc=str(direction or "asc").lower() == "desc")


def _facet(item: Any) -> Facet:
    if isinstance(item, Facet):
        return item
    if isinstance(item, str):
        return Facet(item)
    ranges = tuple(FacetRange(r.get("from"), r.get("to"), r.get("label")) for r in item.get("ranges") or ())
    return Facet(item["field"], type=item.get("type", "terms"), size=item.get("size", 10),
                 sort=item.get("sort", "count"), ranges=ranges)


def Q(spec: dict[str, Any] | None = None, **more: Any) -> Query:  # noqa: N802 - reads like a literal
    d = {**(spec or {}), **more}
    kw: dict[str, Any] = {}
    for key, value in d.items():
        if value is None:
            continue
        if key == "sort":
            kw["sort"] = tuple(_sort(s) for s in value if s)
        elif key == "facets":
            kw["facets"] = tuple(_facet(f) for f in value)
        elif key == "fields":
            kw["fields"] = {n: c if isinstance(c, FieldWeight) else FieldWeight(**(c or {})) for n, c in value.items()}
        elif key == "typo":
            kw["typo"] = Typo(value.get("enabled", True), value.get("minWordSizeOneTypo", 4),
                              value.get("minWordSizeTwoTypos", 8))
        elif key == "boosts":
            kw["boosts"] = tuple(b if isinstance(b, Boost) else Boost(**b) for b in value)
        elif key == "boostFilters":
            kw["boost_filters"] = tuple(BoostFilter(b.get("filters") or {}, b.get("weight", 0)) for b in value)
        elif key == "synonyms":
            kw["synonyms"] = {w: tuple(tuple(alt) for alt in alts) for w, alts in value.items()}
        elif key in ("highlight", "excludeIds", "retrieve"):
            kw[{"excludeIds": "exclude_ids"}.get(key, key)] = tuple(value)
        elif key == "timeoutMs":
            kw["timeout_ms"] = value
        else:
            kw[key] = value
    return Query(**kw)
