"""Tasks: enqueue (in the caller's transaction), read, list, cancel. Services flush, never commit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from control_plane.db import after_commit, utcnow
from control_plane.task import repository
from control_plane.task.models import Task
from control_plane.wire import decode_int_cursor, encode_cursor
from shared.errors import not_found, validation
from shared.ids import new_id

TASK_TYPES = (
    "documents.upsert",
    "documents.delete",
    "documents.flush",
    "replace.commit",
    "index.reindex",
    "mapping.update",
    "suggestions.rebuild",
    "feed.sync",
)
TASK_STATUSES = ("enqueued", "processing", "succeeded", "failed", "canceled")
FINAL_STATUSES = ("succeeded", "failed", "canceled")
ACTIVE_STATUSES = ("enqueued", "processing")
REBUILD_TYPES = ("index.reindex", "mapping.update")

# Called once a transaction that enqueued tasks has committed (wakes in-process runners).
_wakers: list[Callable[[], None]] = []


def add_waker(fn: Callable[[], None]) -> None:
    if fn not in _wakers:
        _wakers.append(fn)


def remove_waker(fn: Callable[[], None]) -> None:
    if fn in _wakers:
        _wakers.remove(fn)


def wake_runners() -> None:
    for fn in list(_wakers):
        with contextlib.suppress(Exception):  # a wake-up is only a hint
            fn()


def enqueue(
    db: Session,
    *,
    project_id: str,
    index_id: str,
    type: str,
    seq: int | None = None,
    payload: dict[str, Any] | None = None,
    details: dict[str, Any] | None = None,
) -> Task:
    task = Task(
        id=new_id("tsk"),
        project_id=project_id,
        index_id=index_id,
        type=type,
        status="enqueued",
        seq=seq,
        payload=payload or {},
        details=details or {},
        created_at=utcnow(),
    )
    db.add(task)
    db.flush()
    after_commit(db, wake_runners)
    return task


def get_task(db: Session, project_id: str, task_id: str, index_scope: str | None = None) -> Task:
    """The project's task; a key scoped to one index finds only that index's tasks."""
    task = repository.get_task(db, project_id, task_id)
    if task is None or (index_scope is not None and task.index_id != index_scope):
        raise not_found("Task")
    return task


def find_task_any_project(db: Session, task_id: str) -> Task | None:
    """The task with this id in whichever project holds it: an operator sees every project."""
    return repository.find_task_any_project(db, task_id)


def list_tasks(
    db: Session,
    project_id: str,
    *,
    status: list[str] | None = None,
    type: list[str] | None = None,
    index_id: str | None = None,
    index_scope: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
) -> tuple[list[Task], str | None]:
    """Newest first; ``nextCursor`` pages on."""
    for value in status or []:
        if value not in TASK_STATUSES:
            raise validation("Unknown task status", [{"path": "status", "message": f"one of {', '.join(TASK_STATUSES)}"}])
    for value in type or []:
        if value not in TASK_TYPES:
            raise validation("Unknown task type", [{"path": "type", "message": f"one of {', '.join(TASK_TYPES)}"}])
    if index_scope is not None:
        if index_id is not None and index_id != index_scope:
            return [], None
        index_id = index_scope
    rows = repository.list_tasks(
        db, project_id, index_id=index_id, statuses=status, types=type,
        before_pk=decode_int_cursor(cursor) if cursor else None, limit=limit + 1,
    )
    next_cursor = encode_cursor(str(rows[limit - 1].pk)) if len(rows) > limit else None
    return rows[:limit], next_cursor


def cancel_enqueued(db: Session, task: Task) -> bool:
    """Cancel a task that has not started; False when it already runs or ended."""
    return repository.cancel_if_enqueued(db, task)


def request_cancel(db: Session, task: Task) -> None:
    """Ask the runner holding ``task`` to stop (it checks the flag between batches)."""
    repository.request_cancel(db, task)


def task_status(db: Session, task_pk: int) -> str | None:
    return repository.task_status(db, task_pk)


def active_tasks(db: Session, index_id: str, types: tuple[str, ...] | None = None) -> list[Task]:
    """The index's enqueued and processing tasks (of ``types``), oldest first."""
    return repository.index_tasks(db, index_id, ACTIVE_STATUSES, types)


def has_active_task(db: Session, index_id: str, type: str) -> bool:
    return repository.has_index_task(db, index_id, type, ACTIVE_STATUSES)


def cancel_all_for_index(db: Session, index_id: str) -> None:
    """An index being deleted: its waiting tasks are canceled, a running one stops at its next step."""
    repository.cancel_enqueued_of_index(db, index_id, {"code": "NOT_FOUND", "message": "The index was deleted"})
    repository.request_cancel_of_index(db, index_id)


def waiting(db: Session) -> tuple[int, datetime | None]:
    """How many tasks wait to be claimed, and since when the oldest does."""
    return repository.waiting(db)


def busy_runners(db: Session) -> int:
    """Task runners holding a live lease on a task right now."""
    return repository.busy_runners(db)
