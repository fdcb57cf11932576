"""Tasks: enqueue (in the caller's transaction), read, list, cancel. Services flush, never commit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from control_plane.db import after_commit, isoformat, utcnow
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


def task_view(task: Task) -> dict[str, Any]:
    return {
        "taskId": task.id,
        "projectId": task.project_id,
        "indexId": task.index_id,
        "type": task.type,
        "status": task.status,
        "createdAt": isoformat(task.created_at),
        "startedAt": isoformat(task.started_at),
        "finishedAt": isoformat(task.finished_at),
        "details": task.details or {},
        "error": task.error,
    }


def get_task(db: Session, project_id: str, task_id: str, index_scope: str | None = None) -> Task:
    task = db.scalar(select(Task).where(Task.id == task_id, Task.project_id == project_id))
    if task is None or (index_scope is not None and task.index_id != index_scope):
        raise not_found("Task")
    return task


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
    query = select(Task).where(Task.project_id == project_id)
    if index_scope is not None:
        if index_id is not None and index_id != index_scope:
            return [], None
        index_id = index_scope
    if index_id is not None:
        query = query.where(Task.index_id == index_id)
    if status:
        query = query.where(Task.status.in_(status))
    if type:
        query = query.where(Task.type.in_(type))
    if cursor:
        query = query.where(Task.pk < decode_int_cursor(cursor))
    rows = list(db.scalars(query.order_by(Task.pk.desc()).limit(limit + 1)))
    next_cursor = encode_cursor(str(rows[limit - 1].pk)) if len(rows) > limit else None
    return rows[:limit], next_cursor


def cancel_enqueued(db: Session, task: Task, reason: str = "Canceled") -> bool:
    """Cancel a task that has not started; False when it already runs or ended."""
    result = db.execute(
        update(Task)
        .where(Task.pk == task.pk, Task.status == "enqueued")
        .values(status="canceled", finished_at=utcnow(), error=None)
        .execution_options(synchronize_session=False)
    )
    db.refresh(task)
    return bool(result.rowcount)  # type: ignore[attr-defined]


def active_tasks(db: Session, index_id: str, types: tuple[str, ...] | None = None) -> list[Task]:
    query = select(Task).where(Task.index_id == index_id, Task.status.in_(ACTIVE_STATUSES))
    if types:
        query = query.where(Task.type.in_(types))
    return list(db.scalars(query.order_by(Task.pk)))


def cancel_all_for_index(db: Session, index_id: str) -> None:
    """An index being deleted: its waiting tasks are canceled, a running one stops at its next step."""
    now = utcnow()
    db.execute(
        update(Task)
        .where(Task.index_id == index_id, Task.status == "enqueued")
        .values(status="canceled", finished_at=now, error={"code": "NOT_FOUND", "message": "The index was deleted"})
        .execution_options(synchronize_session=False)
    )
    db.execute(
        update(Task)
        .where(Task.index_id == index_id, Task.status == "processing")
        .values(cancel_requested=True)
        .execution_options(synchronize_session=False)
    )
