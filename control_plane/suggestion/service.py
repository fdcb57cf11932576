"""Autocomplete settings and custom suggestions of an index, validated against its mapping.

A change to the settings or to the custom suggestions enqueues a rebuild (one waiting rebuild
at most); until it has run, disabled sources and deleted custom suggestions are already left out
of answers (the serving side filters the built suggestions by the current settings).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from control_plane.db import isoformat
from control_plane.index.models import Index
from control_plane.profile import repository as profiles
from control_plane.suggestion import repository
from control_plane.suggestion.matcher import words_of
from control_plane.suggestion.models import CustomSuggestion, SuggestionConfig
from control_plane.suggestion.schemas import CustomSuggestionIn, SuggestionSettings
from control_plane.task import repository as task_rows
from control_plane.task import service as tasks
from control_plane.task.models import Task
from control_plane.usage import register_usage_provider
from control_plane.wire import decode_cursor, encode_cursor
from shared.errors import not_found, validation
from shared.ids import new_handle, new_id

REBUILD = "suggestions.rebuild"


def _fields(mapping: dict[str, Any] | None) -> dict[str, Any]:
    return dict((mapping or {}).get("fields") or {})


def default_settings(mapping: dict[str, Any] | None) -> SuggestionSettings:
    """Every field the mapping marks ``suggest``, weight 1; popular queries on; no products."""
    sources = [{"field": name, "weight": 1} for name, spec in _fields(mapping).items()
               if isinstance(spec, dict) and spec.get("suggest")]
    return SuggestionSettings.model_validate({"sources": sources})


def settings_of(row: SuggestionConfig) -> SuggestionSettings:
    return SuggestionSettings.model_validate(row.settings)


def validate(db: Session, index: Index, settings: SuggestionSettings) -> None:
    """400 ``VALIDATION_ERROR`` naming each faulty setting (``sources.0.field``, ``products.profileKey``)."""
    fields = _fields(index.mapping)
    details: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, source in enumerate(settings.sources):
        spec = fields.get(source.field)
        if not isinstance(spec, dict):
            details.append({"path": f"sources.{i}.field", "message": f"{source.field}: no such field in the mapping"})
        elif not spec.get("suggest"):
            details.append({"path": f"sources.{i}.field",
                            "message": f"{source.field}: the mapping does not mark this field `suggest`"})
        elif source.field in seen:
            details.append({"path": f"sources.{i}.field", "message": f"{source.field}: listed twice"})
        seen.add(source.field)
    key = settings.products.profile_key
    if key is not None and profiles.by_key(db, key, index_id=index.id) is None:
        details.append({"path": "products.profileKey", "message": "no profile of this index has this profileKey"})
    if details:
        raise validation("Invalid suggestion settings", details)


def _stored(settings: SuggestionSettings) -> dict[str, Any]:
    return settings.model_dump(by_alias=True, mode="json")


def config_row(db: Session, index: Index) -> SuggestionConfig:
    """The index's settings row, made with the defaults (and a new suggestKey) on first use."""
    row = repository.config_of(db, index.project_id, index.id)
    if row is not None:
        return row
    row = SuggestionConfig(index_id=index.id, project_id=index.project_id, suggest_key=new_handle("sk"),
                           settings=_stored(default_settings(index.mapping)), built_version=0, built_count=0,
                           built_seq=-1, built_generation=-1)
    try:
        with db.begin_nested():
            db.add(row)
    except IntegrityError:  # made meanwhile by another request
        row = repository.config_of(db, index.project_id, index.id)  # type: ignore[assignment]
        if row is None:
            raise
    return row


def to_out(row: SuggestionConfig) -> dict[str, Any]:
    out = _stored(settings_of(row))
    out.pop("suggestKey", None)
    out["suggestKey"] = row.suggest_key
    out["builtAt"] = isoformat(row.built_at)
    out["builtCount"] = row.built_count
    return out


def put(db: Session, index: Index, settings: SuggestionSettings) -> SuggestionConfig:
    validate(db, index, settings)
    row = config_row(db, index)
    row.settings = _stored(settings)
    db.flush()
    request_rebuild(db, index, coalesce=True)
    return row


def request_rebuild(db: Session, index: Index, *, coalesce: bool) -> Task | None:
    """Enqueue a rebuild; with ``coalesce`` none when one is already waiting (it will see this change)."""
    if coalesce and task_rows.has_index_task(db, index.id, REBUILD, ("enqueued",)):
        return None
    config_row(db, index)
    return tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type=REBUILD)


# --------------------------------------------------------------------------- custom suggestions
def custom_out(row: CustomSuggestion) -> dict[str, Any]:
    return {"id": row.id, "text": row.text, "weight": row.weight, "createdAt": isoformat(row.created_at)}


def add_custom(db: Session, index: Index, body: CustomSuggestionIn) -> CustomSuggestion:
    text = " ".join(body.text.split())
    if not words_of(text):  # nothing a shopper could type would reach it
        raise validation("Invalid custom suggestion", [{"path": "text", "message": "needs a letter or a digit"}])
    row = CustomSuggestion(id=new_id("sug"), project_id=index.project_id, index_id=index.id, text=text,
                           weight=body.weight)
    db.add(row)
    db.flush()
    request_rebuild(db, index, coalesce=True)
    return row


def delete_custom(db: Session, index: Index, suggestion_id: str) -> None:
    row = repository.get_custom(db, index.project_id, index.id, suggestion_id)
    if row is None:
        raise not_found("Custom suggestion")
    db.delete(row)
    db.flush()


# --------------------------------------------------------------------------- usage registry
@register_usage_provider
def suggestion_uses(db: Session, index: Any) -> list[dict[str, Any]]:
    """The fields autocomplete reads (kind ``suggestions``): each needs to stay ``suggest``."""
    row = repository.config_by_index(db, index.id)
    if row is None:
        return []
    return [
        {"field": source.field, "kind": "suggestions", "id": index.id, "name": "autocomplete",
         "path": f"sources.{i}.field", "needs": "suggest", "detailsPath": f"suggestions.sources.{i}.field"}
        for i, source in enumerate(settings_of(row).sources)
    ]


def list_custom_page(db: Session, project_id: str, index_id: str, limit: int, cursor: str | None) -> tuple[list[CustomSuggestion], str | None]:
    """One page of the index's CustomSuggestion rows, and the cursor of the next page."""
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_custom(db, project_id, index_id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return rows[:limit], next_cursor
