"""What a storefront request made with a public key may touch (docs/api.md "Storefront exposure").

A public key is in every shop page, so a shopper can send any filter or facet. A field the profile
doesn't show must not be narrowed down by filtering or counted by faceting (a hidden ``cost``
would leak). A public-key request may:

* filter on the profile's ``facets`` and ``filterFields``; without ``filterFields``, on the fields
  the profile retrieves (``retrieve``, or every retrievable field when it is unset) instead;
* facet on the profile's ``facets``; without ``facets``, on the retrieved facetable fields;
* sort by the profile's ``sortOptions`` only (already so for every caller).

Everything else answers 400 ``VALIDATION_ERROR`` naming each path (``filters.cost``,
``facets.0``). Secret keys, and inline profiles on the secret route, are not restricted.
"""

from __future__ import annotations

from typing import Any

from control_plane.profile.schemas import ProfileSettings
from control_plane.search.profile_query import SearchRequest
from shared.errors import ErrorCode, ServiceError
from shared.limits import field_conditions


def shown_fields(settings: ProfileSettings, mapping: dict[str, Any]) -> set[str]:
    """The fields hits carry: ``retrieve`` (or every mapped field), minus unretrievable ones, plus the id."""
    fields: dict[str, Any] = mapping.get("fields") or {}
    names = set(settings.retrieve) if settings.retrieve is not None else set(fields)
    shown = {name for name in names if (fields.get(name) or {}).get("retrievable", True)}
    return shown | {str(mapping.get("idField") or "id")}


def filter_field_paths(filters: Any, path: str = "filters") -> list[tuple[str, str]]:
    """(field, path) of every field condition in a FILTER, in path order."""
    return sorted(((name, at) for name, at, _ in field_conditions(filters, path)), key=lambda item: item[1])


def allowed_fields(settings: ProfileSettings, mapping: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(filterable, facetable) fields for public-key requests."""
    fields: dict[str, Any] = mapping.get("fields") or {}
    shown = shown_fields(settings, mapping)
    if settings.facets is not None:
        facets = set(settings.facets)
    else:
        facets = {name for name in shown if (fields.get(name) or {}).get("facetable")}
    filters = set(settings.filter_fields) if settings.filter_fields is not None else shown
    return filters | facets, facets


def check_public_request(settings: ProfileSettings, request: SearchRequest, mapping: dict[str, Any]) -> None:
    """400 naming every filter and facet of ``request`` the profile doesn't expose."""
    filterable, facetable = allowed_fields(settings, mapping)
    details = [
        {"path": path, "message": f"{name}: the profile does not allow storefront filters on this field"}
        for name, path in filter_field_paths(request.filters)
        if name not in filterable
    ]
    details += [
        {"path": f"facets.{i}", "message": f"{name}: the profile does not allow storefront facets on this field"}
        for i, name in enumerate(request.facets or [])
        if name not in facetable
    ]
    if details:
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "The search uses fields this profile does not expose", details)
