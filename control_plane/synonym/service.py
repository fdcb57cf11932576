"""Synonyms of an index: validated entries, all-or-nothing imports, exports in two forms.

Every write locks the index row (one merchandising writer per index at a time: counts against the
plan stay true under concurrent writers) and moves ``indices.merch_version``; the endpoint bumps
the index epoch after the commit, so the very next search uses the change and no cached answer
outlives it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from control_plane.db import isoformat, utcnow
from control_plane.index import repository as indices
from control_plane.index.models import Index
from control_plane.index.service import plan_limits_for_project, quota_exceeded
from control_plane.synonym import repository, solr
from control_plane.synonym.models import Synonym
from control_plane.synonym.schemas import (
    MAX_IMPORT_TERMS,
    MAX_TERM_CHARS,
    MAX_TERM_WORDS,
    MAX_TERMS,
    SynonymIn,
)
from control_plane.wire import decode_cursor, encode_cursor
from shared.errors import not_found, validation
from shared.ids import new_id
from shared.text import atoms, match_key


def to_out(row: Synonym) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.id, "type": row.type}
    if row.type == "multiway":
        out["terms"] = list(row.terms)
    else:
        out["input"] = row.input
        out["synonyms"] = list(row.synonyms)
    out.update(enabled=row.enabled, createdAt=isoformat(row.created_at), updatedAt=isoformat(row.updated_at))
    return out


def _clean(term: Any, path: str, faults: list[dict[str, Any]]) -> str | None:
    if not isinstance(term, str):
        faults.append({"path": path, "message": "must be a string"})
        return None
    text = " ".join(term.split())
    if not text:
        faults.append({"path": path, "message": "must not be empty"})
    elif len(text) > MAX_TERM_CHARS:
        faults.append({"path": path, "message": f"at most {MAX_TERM_CHARS} characters", "limit": MAX_TERM_CHARS})
    elif not atoms(text):
        faults.append({"path": path, "message": "needs at least one letter or digit"})
    elif len(atoms(text)) > MAX_TERM_WORDS:
        faults.append({"path": path, "message": f"at most {MAX_TERM_WORDS} words", "limit": MAX_TERM_WORDS})
    else:
        return text
    return None


def _terms(values: list[Any] | None, path: str, faults: list[dict[str, Any]], minimum: int) -> list[str]:
    if values is None:
        faults.append({"path": path, "message": "required"})
        return []
    cleaned = [_clean(t, f"{path}[{i}]", faults) for i, t in enumerate(values)]
    terms: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for term in cleaned:
        if term is not None and match_key(term) not in seen:  # "Phone" and "phones" are one term
            seen.add(match_key(term))
            terms.append(term)
    if len(values) > MAX_TERMS:
        faults.append({"path": path, "message": f"at most {MAX_TERMS} terms", "limit": MAX_TERMS})
    elif len(cleaned) == len([t for t in cleaned if t is not None]) and len(terms) < minimum:
        faults.append({"path": path, "message": f"needs at least {minimum} different terms"})
    return terms


def check_entry(body: SynonymIn, prefix: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The entry's stored fields and its faults (``path`` under ``prefix``)."""
    faults: list[dict[str, Any]] = []
    if body.type == "multiway":
        for name in ("input", "synonyms"):
            if getattr(body, name) is not None:
                faults.append({"path": prefix + name, "message": "only for oneway synonyms"})
        terms = _terms(body.terms, prefix + "terms", faults, 2)
        return {"type": "multiway", "terms": terms, "input": None, "synonyms": [], "enabled": body.enabled}, faults
    if body.terms is not None:
        faults.append({"path": prefix + "terms", "message": "only for multiway synonyms"})
    source = _clean(body.input, prefix + "input", faults) if body.input is not None else None
    if body.input is None:
        faults.append({"path": prefix + "input", "message": "required"})
    targets = _terms(body.synonyms, prefix + "synonyms", faults, 1)
    if source is not None and any(match_key(t) == match_key(source) for t in targets):
        faults.append({"path": prefix + "synonyms", "message": "must not repeat the input"})
    return {"type": "oneway", "terms": [], "input": source, "synonyms": targets, "enabled": body.enabled}, faults


def _checked(body: SynonymIn) -> dict[str, Any]:
    fields, faults = check_entry(body)
    if faults:
        raise validation("The synonym is invalid", faults)
    return fields


def _room(db: Session, index: Index, adding: int, replacing: bool = False) -> None:
    limit = plan_limits_for_project(db, index.project_id).max_synonyms_per_index
    total = adding + (0 if replacing else repository.count(db, index.id))
    if total > limit:
        raise quota_exceeded(f"An index holds at most {limit} synonyms on this plan ({total} asked)")


def _free(db: Session, index: Index, replacing: bool) -> int:
    """How many more synonyms the plan lets this index hold."""
    limit = plan_limits_for_project(db, index.project_id).max_synonyms_per_index
    return max(0, limit - (0 if replacing else repository.count(db, index.id)))


def get(db: Session, project_id: str, index_id: str, synonym_id: str) -> Synonym:
    row = repository.get(db, project_id, index_id, synonym_id)
    if row is None:
        raise not_found("Synonym")
    return row


def _row(index: Index, fields: dict[str, Any]) -> Synonym:
    return Synonym(id=new_id("syn"), project_id=index.project_id, index_id=index.id, **fields)


def create(db: Session, index: Index, body: SynonymIn) -> Synonym:
    fields = _checked(body)
    _room(db, index, 1)
    row = _row(index, fields)
    db.add(row)
    indices.touch_merch(db, index.id)
    db.flush()
    return row


def update(db: Session, index: Index, synonym_id: str, body: SynonymIn) -> Synonym:
    row = get(db, index.project_id, index.id, synonym_id)
    for name, value in _checked(body).items():
        setattr(row, name, value)
    row.updated_at = utcnow()
    indices.touch_merch(db, index.id)
    db.flush()
    return row


def delete(db: Session, index: Index, synonym_id: str) -> None:
    db.delete(get(db, index.project_id, index.id, synonym_id))
    indices.touch_merch(db, index.id)
    db.flush()


def _terms_sent(item: SynonymIn) -> int:
    return len(item.terms or ()) + len(item.synonyms or ()) + (item.input is not None)


def _parsed_items(items: list[SynonymIn]) -> list[dict[str, Any]]:
    """The entries' stored fields (each entry's shape was checked with the body)."""
    if sum(_terms_sent(item) for item in items) > MAX_IMPORT_TERMS:  # counted before any is checked
        raise validation(f"At most {MAX_IMPORT_TERMS} terms in one import: nothing was imported",
                         [{"path": "items", "message": f"at most {MAX_IMPORT_TERMS} terms in all",
                           "limit": MAX_IMPORT_TERMS}])
    out: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    for i, body in enumerate(items):
        fields, item_faults = check_entry(body, f"items[{i}].")
        faults.extend(item_faults)
        out.append(fields)
    if faults:
        raise validation("Some synonyms are invalid: nothing was imported", faults[:100])
    return out


def _parsed_solr(text: str, room: int) -> list[dict[str, Any]]:
    try:
        entries = solr.parse(text, max_terms=MAX_TERMS, max_chars=MAX_TERM_CHARS, max_entries=room,
                             max_total_terms=MAX_IMPORT_TERMS)
    except solr.SolrLineError as exc:
        raise validation(f"Malformed Solr synonyms at line {exc.line}: nothing was imported",
                         [{"path": "solr", "line": exc.line, "message": exc.message}]) from exc
    except solr.TooManyEntries as exc:
        raise quota_exceeded(f"The index has room for {room} more synonyms on this plan (the text holds more):"
                             " nothing was imported") from exc
    out: list[dict[str, Any]] = []
    for line, entry in entries:
        try:
            fields, faults = check_entry(SynonymIn.model_validate(entry))
        except ValidationError as exc:
            faults = [{"path": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        if faults:
            fault = faults[0]
            raise validation(f"Invalid synonym at line {line}: nothing was imported",
                             [{"path": "solr", "line": line, "message": f"{fault['path']}: {fault['message']}"}])
        out.append(fields)
    return out


def import_entries(db: Session, index: Index, *, items: list[SynonymIn] | None, text: str | None,
                   mode: str) -> tuple[int, int]:
    """All or nothing: every entry is checked before anything is written. ``(imported, total)``."""
    if (items is None) == (text is None):
        raise validation("Send either items or solr", [{"path": "items", "message": "exactly one of items, solr"}])
    room = _free(db, index, replacing=mode == "replace")
    if items is not None and len(items) > room:  # before a single item is read
        raise quota_exceeded(f"The index has room for {room} more synonyms on this plan ({len(items)} sent):"
                             " nothing was imported")
    entries = _parsed_items(items) if items is not None else _parsed_solr(text or "", room)
    _room(db, index, len(entries), replacing=mode == "replace")
    if mode == "replace":
        repository.delete_all(db, index.id)
    db.add_all([_row(index, fields) for fields in entries])
    indices.touch_merch(db, index.id)
    db.flush()
    return len(entries), repository.count(db, index.id)


def export(db: Session, index: Index, fmt: str) -> dict[str, Any]:
    items = [to_out(row) for row in repository.list_for_index(db, index.project_id, index.id, None, None)]
    if fmt == "solr":
        return {"solr": solr.render(items)}
    return {"items": items, "nextCursor": None}


def list_page(db: Session, project_id: str, index_id: str, limit: int, cursor: str | None) -> tuple[list[Synonym], str | None]:
    """One page of the index's Synonym rows, and the cursor of the next page."""
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_for_index(db, project_id, index_id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor
