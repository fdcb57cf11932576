"""The usage registry: which settings of which features use which mapping fields.

Features register a provider with :func:`register_usage_provider`; a provider is
``fn(db, index) -> [{field, kind, id, name, path, needs?, detailsPath?}]`` where

* ``kind`` is ``profile`` | ``rule`` | ``facet`` | ``suggestions`` | ``dataSource``;
* ``path`` is the setting inside that resource (``queryFields.title``);
* ``needs`` (optional) is the capability the use requires: ``searchable``, ``filterable``,
  ``facetable``, ``sortable``, ``suggest`` (or a list of them); without it the field only has to exist;
* ``detailsPath`` (optional) overrides the path shown in ``MAPPING_BREAKS_CONFIG`` details, which is
  otherwise ``<kinds>.<id>.<path>`` (``profiles.prf_1.queryFields.title``, ``facets.0.field``).

``GET mapping/usage`` lists the uses per field; a mapping change, reindex or replace session whose
mapping drops a used field or takes away a capability a use needs answers 409
``MAPPING_BREAKS_CONFIG`` with one detail per broken use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from shared.errors import ErrorCode, ServiceError

UsageProvider = Callable[[Session, Any], list[dict[str, Any]]]
_PROVIDERS: list[UsageProvider] = []

# uses whose meaning depends on whether the field is a geopoint (an area or a value, near or asc/desc)
_GEO_SENSITIVE = {"filterable", "facetable", "sortable"}

_KIND_PREFIX = {
    "profile": "profiles",
    "rule": "rules",
    "facet": "facets",
    "suggestions": "suggestions",
    "dataSource": "feed",
}


def register_usage_provider(fn: UsageProvider) -> UsageProvider:
    """Register ``fn`` (usable as a decorator); registering the same function twice is a no-op."""
    if fn not in _PROVIDERS:
        _PROVIDERS.append(fn)
    return fn


def collect_uses(db: Session, index: Any) -> list[dict[str, Any]]:
    uses: list[dict[str, Any]] = []
    for provider in list(_PROVIDERS):
        uses.extend(provider(db, index) or [])
    return uses


def usage_by_field(db: Session, index: Any) -> dict[str, list[dict[str, Any]]]:
    """``{FIELD: [{kind, id, name, path}]}`` (the ``GET mapping/usage`` answer's ``fields``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for use in collect_uses(db, index):
        out.setdefault(use["field"], []).append(
            {"kind": use["kind"], "id": use["id"], "name": use.get("name"), "path": use["path"]}
        )
    return out


def _needs(use: dict[str, Any]) -> list[str]:
    needs = use.get("needs")
    if needs is None:
        return []
    return [needs] if isinstance(needs, str) else list(needs)


def breaking_uses(db: Session, index: Any, mapping: dict[str, Any]) -> list[dict[str, Any]]:
    """Details of every use the ``mapping`` would break (empty when none)."""
    fields = mapping.get("fields") or {}
    current = (getattr(index, "mapping", None) or {}).get("fields") or {}
    out: list[dict[str, Any]] = []
    for use in collect_uses(db, index):
        spec = fields.get(use["field"])
        before = current.get(use["field"])
        message: str | None = None
        if not isinstance(spec, dict):
            if isinstance(before, dict) or _needs(use):
                message = f"field {use['field']!r} is not in the new mapping"
        else:
            for need in _needs(use):
                if need == "vector":
                    if spec.get("type") != "vector":
                        message = f"field {use['field']!r} would no longer be a vector field"
                        break
                    continue
                default = need == "retrievable"
                if not bool(spec.get(need, default)):
                    message = f"field {use['field']!r} would no longer be {need}"
                    break
            geo_before, geo_after = (isinstance(before, dict) and before.get("type") == "geopoint",
                                     spec.get("type") == "geopoint")
            if message is None and isinstance(before, dict) and geo_before != geo_after and _GEO_SENSITIVE & set(_needs(use)):
                message = (f"field {use['field']!r} would {'no longer be' if geo_before else 'become'} a geopoint: "
                           "its filters and sorts would mean something else")
        if message is None:
            continue
        path = use.get("detailsPath") or f"{_KIND_PREFIX.get(use['kind'], use['kind'])}.{use['id']}.{use['path']}"
        out.append({"path": path, "message": message, "kind": use["kind"], "id": use["id"], "name": use.get("name")})
    return out


def check_mapping_keeps_config(db: Session, index: Any, mapping: dict[str, Any]) -> None:
    broken = breaking_uses(db, index, mapping)
    if broken:
        raise ServiceError(
            ErrorCode.MAPPING_BREAKS_CONFIG,
            "The mapping would break settings that use these fields; change them first",
            broken,
        )


__all__ = [
    "UsageProvider",
    "breaking_uses",
    "check_mapping_keeps_config",
    "collect_uses",
    "register_usage_provider",
    "usage_by_field",
]
