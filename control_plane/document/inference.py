"""Mapping inference for dynamic indices (CONTRACT §3): the fields an upload's documents bring that
the mapping lacks, the values that do not fit the field they fall in, and the fields that cannot be
mapped (objects, arrays of numbers, invalid names). Pure: the caller stores the new fields.

What a first value makes of a new top-level field:

==========================  ===========  ==================================================
value                       type         settings
==========================  ===========  ==================================================
a string                    ``text``     searchable
an ISO 8601 date string     ``date``     filterable, sortable
a number                    ``float``    filterable, sortable, facetable (range facets)
a boolean                   ``boolean``  filterable, facetable
an array of strings         ``keyword[]``  searchable, filterable, facetable
==========================  ===========  ==================================================

``null`` and an empty array decide nothing (a later document's value does). Numbers are always
``float``: ``10`` then ``10.5`` is one field, not a conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from control_plane.document.value_types import expected, type_matches
from shared.geo import POINT_WORDS, point_of
from shared.mapping import FIELD_NAME_PATTERN
from shared.semantic import is_vector, vector_field_fault

# A dynamic index maps at most this many fields: a document with thousands of keys (a map of
# SKUs, say) must not turn into thousands of indexed fields.
MAX_FIELDS = 256
# Conflicts listed in a task's details (their count is always given whole).
MAX_CONFLICTS = 100

_NAME_RE = re.compile(FIELD_NAME_PATTERN)
# A date, or a date and time with an optional fraction and offset: "2024-05-01", "2024-05-01T10:00:00Z".
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$")

TEXT = {"type": "text", "searchable": True}
DATE = {"type": "date", "filterable": True, "sortable": True}
NUMBER = {"type": "float", "filterable": True, "sortable": True, "facetable": True}
BOOLEAN = {"type": "boolean", "filterable": True, "facetable": True}
STRINGS = {"type": "keyword[]", "searchable": True, "filterable": True, "facetable": True}
GEOPOINT = {"type": "geopoint", "filterable": True, "sortable": True}


@dataclass
class Inference:
    """What an upload adds to a dynamic index's mapping, and what it reports."""

    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # new fields, in order of first sight
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # at most MAX_CONFLICTS
    conflict_count: int = 0
    unmapped: list[dict[str, Any]] = field(default_factory=list)  # one entry per field

    def details(self) -> dict[str, Any]:
        """The upload task's details: ``fieldsAdded`` always, the rest when there is any."""
        out: dict[str, Any] = {"fieldsAdded": [{"field": name, "type": spec["type"]} for name, spec in self.fields.items()]}
        if self.conflict_count:
            out["conflicts"] = self.conflicts
            out["conflictCount"] = self.conflict_count
        if self.unmapped:
            out["unmapped"] = self.unmapped
        return out


def field_for(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(field, None)`` for a value that decides a field, ``(None, None)`` for one that decides
    nothing yet, ``(None, reason)`` for one no field type holds."""
    if isinstance(value, bool):
        return dict(BOOLEAN), None
    if isinstance(value, int | float):
        return dict(NUMBER), None
    if isinstance(value, str):
        return (dict(DATE) if _ISO_DATE.match(value.strip()) else dict(TEXT)), None
    if isinstance(value, list):
        items = [v for v in value if v is not None]
        if not items:
            return None, None
        if all(isinstance(v, str) for v in items):
            return dict(STRINGS), None
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in items):
            return None, ("an array of numbers: stored and returned; map it as a vector field "
                          f'({{"type": "vector", "dimensions": {len(items)}}}) to rank by it')
        return None, "an array of other values than strings: stored and returned, not searched or filtered"
    if isinstance(value, dict) and set(value) == {"lat", "lng"}:
        if point_of(value) is None:
            return None, f"a point out of bounds or not numbers ({POINT_WORDS}): stored and returned, not filtered"
        return dict(GEOPOINT), None
    if isinstance(value, dict):
        return None, ("an object: nested fields are stored and returned, not searched or filtered "
                      "(send them as top-level fields, or map them by hand)")
    return None, None


def infer(mapping: dict[str, Any], items: list[dict[str, Any]]) -> Inference:
    """Go through ``items`` (validated documents, in upload order) against ``mapping``: every new
    top-level field gets the type of its first decisive value, and every later value is checked
    against its field (one of the mapping's or one inferred earlier in the same upload)."""
    id_field = mapping.get("idField", "id")
    fields: dict[str, Any] = dict(mapping.get("fields") or {})
    out = Inference()
    unmapped: set[str] = set()
    for i, doc in enumerate(items):
        for name, value in doc.items():
            if name == id_field or value is None or name in unmapped:
                continue
            spec = fields.get(name)
            if spec is None:
                spec, reason = field_for(value)
                if reason is None and spec is not None:
                    if not _NAME_RE.match(name):
                        reason = "not a valid field name (a letter or _ first, then letters, digits, _ . -; at most 128)"
                    elif len(fields) >= MAX_FIELDS:
                        reason = f"a dynamic index maps at most {MAX_FIELDS} fields"
                if reason is not None:
                    unmapped.add(name)
                    out.unmapped.append({"field": name, "path": f"[{i}].{name}", "message": reason})
                elif spec is not None:
                    fields[name] = out.fields[name] = spec
                continue
            field_type = spec.get("type", "")
            fault = vector_field_fault(spec, value) if is_vector(spec) else (
                None if type_matches(field_type, value) else f"expected {expected(field_type)}")
            if fault is not None:
                out.conflict_count += 1
                if len(out.conflicts) < MAX_CONFLICTS:
                    out.conflicts.append({
                        "path": f"[{i}].{name}",
                        "message": f"{fault} (the field is {field_type}): the document is "
                                   "stored, this value is not indexed as one",
                        "field": name,
                        "type": field_type,
                        "id": doc.get(id_field),
                    })
    return out


def with_fields(mapping: dict[str, Any], fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``mapping`` with ``fields`` added (a new mapping; the given one is left as it was)."""
    return {**mapping, "fields": {**(mapping.get("fields") or {}), **fields}}


def swapped_mapping(session_mapping: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The index's mapping once a replace session's catalog is swapped in (and the one it is built
    with): the session's. A dynamic one keeps the fields inferred meanwhile from uploads to the
    index (``current``); those inferred while the catalog is built are rebuilt in by their own
    task, after the swap."""
    if not session_mapping.get("dynamic"):
        return session_mapping
    return with_fields(current, session_mapping.get("fields") or {}) | {
        k: v for k, v in session_mapping.items() if k != "fields"}
