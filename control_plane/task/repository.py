"""Task rows. Queries for a tenant's task filter by its project, so another project's id is not found;
the index-wide ones serve the index's own service and the task runner."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from control_plane.db import utcnow
from control_plane.task.models import Task


def get_task(db: Session, project_id: str, task_id: str) -> Task | None:
    return db.scalar(select(Task).where(Task.id == task_id, Task.project_id == project_id))


def find_task_any_project(db: Session, task_id: str) -> Task | None:
    """The task with this id in whichever project holds it: an operator sees every project."""
    return db.scalar(select(Task).where(Task.id == task_id))


def list_tasks(
    db: Session,
    project_id: str,
    *,
    index_id: str | None,
    statuses: list[str] | None,
    types: list[str] | None,
    before_pk: int | None,
    limit: int,
) -> list[Task]:
    """Up to ``limit`` of the project's tasks, newest first, older than ``before_pk``."""
    query = select(Task).where(Task.project_id == project_id)
    if index_id is not None:
        query = query.where(Task.index_id == index_id)
    if statuses:
        query = query.where(Task.status.in_(statuses))
    if types:
        query = query.where(Task.type.in_(types))
    if before_pk is not None:
        query = query.where(Task.pk < before_pk)
    return list(db.scalars(query.order_by(Task.pk.desc()).limit(limit)))


def index_tasks(db: Session, index_id: str, statuses: tuple[str, ...], types: tuple[str, ...] | None) -> list[Task]:
    """The index's tasks in one of ``statuses`` (and of one of ``types``), oldest first."""
    query = select(Task).where(Task.index_id == index_id, Task.status.in_(statuses))
    if types:
        query = query.where(Task.type.in_(types))
    return list(db.scalars(query.order_by(Task.pk)))


def has_index_task(db: Session, index_id: str, type: str, statuses: tuple[str, ...]) -> bool:
    return db.scalar(select(Task.id).where(Task.index_id == index_id, Task.type == type, Task.status.in_(statuses))) is not None


def cancel_if_enqueued(db: Session, task: Task) -> bool:
    """Mark ``task`` canceled unless it has left the queue; True when it was still enqueued."""
    result = db.execute(
        update(Task)
        .where(Task.pk == task.pk, Task.status == "enqueued")
        .values(status="canceled", finished_at=utcnow(), error=None)
        .execution_options(synchronize_session=False)
    )
    db.refresh(task)
    return bool(result.rowcount)  # type: ignore[attr-defined]


def request_cancel(db: Session, task: Task) -> None:
    """Ask the runner holding ``task`` to stop (it checks the flag between batches)."""
    db.execute(
        update(Task).where(Task.pk == task.pk).values(cancel_requested=True).execution_options(synchronize_session=False)
    )
    db.refresh(task)


def task_status(db: Session, task_pk: int) -> str | None:
    return db.scalar(select(Task.status).where(Task.pk == task_pk))


def cancel_enqueued_of_index(db: Session, index_id: str, error: dict[str, Any]) -> None:
    """Every enqueued task of the index ends ``canceled`` with ``error``."""
    db.execute(
        update(Task)
        .where(Task.index_id == index_id, Task.status == "enqueued")
        .values(status="canceled", finished_at=utcnow(), error=error)
        .execution_options(synchronize_session=False)
    )


def request_cancel_of_index(db: Session, index_id: str) -> None:
    """Ask the runners of the index's processing tasks to stop."""
    db.execute(
        update(Task)
        .where(Task.index_id == index_id, Task.status == "processing")
        .values(cancel_requested=True)
        .execution_options(synchronize_session=False)
    )
