"""Task rows. Queries for a tenant's task filter by its project, so another project's id is not found;
the index-wide ones serve the index's own service and the task runner."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, delete, distinct, exists, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from control_plane.db import utcnow
from control_plane.task.models import Task, TaskRunnerBeat


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


def task_exists(db: Session, project_id: str, index_id: str | None, task_id: str) -> bool:
    """The project's task (``index_id``: an index-scoped key sees only that index's tasks)."""
    task_index = db.scalar(select(Task.index_id).where(Task.id == task_id, Task.project_id == project_id))
    return task_index is not None and index_id in (None, task_index)


def waiting(db: Session) -> tuple[int, datetime | None]:
    """How many tasks are enqueued, and when the oldest of them was."""
    count, oldest = db.execute(select(func.count(), func.min(Task.created_at)).where(Task.status == "enqueued")).one()
    return int(count), oldest


def busy_runners(db: Session) -> int:
    """Task runners holding a live lease on a task right now."""
    return int(db.scalar(select(func.count(distinct(Task.lease_owner)))
                         .where(Task.status == "processing", Task.lease_expires_at > utcnow())) or 0)


# --------------------------------------------------------------------------- runner heartbeats
def beat(db: Session, runner_id: str, at: float) -> None:
    """Record that the runner is alive at ``at``; rows of runners gone for an hour (killed without
    stopping) are dropped meanwhile."""
    row = db.get(TaskRunnerBeat, runner_id)
    if row is None:
        db.add(TaskRunnerBeat(id=runner_id, heartbeat_at=at))
    else:
        row.heartbeat_at = at
    db.execute(delete(TaskRunnerBeat).where(TaskRunnerBeat.heartbeat_at < at - 3600))


def forget_runner(db: Session, runner_id: str) -> None:
    db.execute(delete(TaskRunnerBeat).where(TaskRunnerBeat.id == runner_id))


def runners_since(db: Session, since: float) -> int:
    """How many runners were heard from at or after ``since``."""
    return int(db.scalar(select(func.count()).select_from(TaskRunnerBeat).where(TaskRunnerBeat.heartbeat_at >= since)) or 0)


def first_runner_since(db: Session, since: float) -> str | None:
    """The id that sorts first among the runners heard from at or after ``since``."""
    return db.scalar(select(func.min(TaskRunnerBeat.id)).where(TaskRunnerBeat.heartbeat_at >= since))


# --------------------------------------------------------------------------- the queue's claims and leases
def _claimable(now: datetime) -> ColumnElement[bool]:
    """Waiting, or leased by a runner whose lease ran out."""
    return or_(Task.status == "enqueued", Task.lease_expires_at.is_(None), Task.lease_expires_at < now)


def next_claimable(db: Session, active: Sequence[str], now: datetime, exclude_indices: set[str] | None, *,
                   lock: bool) -> Task | None:
    """The oldest claimable task whose index has no earlier active task; ``lock`` (PostgreSQL): the
    row is locked, and rows other runners hold are skipped."""
    params: dict[str, Any] = {"active": list(active), "now": now}
    if exclude_indices:
        params["exclude"] = list(exclude_indices)
    return db.scalar(_claimable_query(lock, bool(exclude_indices)), params)


@cache
def _claimable_query(lock: bool, excluding: bool) -> Select[Any]:
    """Built once per shape, its values bound at each call: an idle runner asks ten times a second,
    and building the statement (an alias, its cache key) was most of an empty poll's 1.5 ms."""
    active: Any = bindparam("active", expanding=True)
    earlier = aliased(Task)
    blocked = exists().where(earlier.index_id == Task.index_id, earlier.status.in_(active), earlier.pk < Task.pk)
    query = select(Task).where(Task.status.in_(active), _claimable(bindparam("now")), ~blocked)  # type: ignore[arg-type]
    if excluding:
        query = query.where(Task.index_id.not_in(bindparam("exclude", expanding=True)))
    query = query.order_by(Task.pk).limit(1)
    if lock:
        query = query.with_for_update(skip_locked=True, of=Task)
    return query


def take_lease(db: Session, pk: int, active: Sequence[str], now: datetime, *, owner: str, started: datetime,
               expires: datetime) -> bool:
    """Mark the task processing under ``owner``'s lease, if it is still claimable; whether it was."""
    result = db.execute(
        update(Task)
        .where(Task.pk == pk, Task.status.in_(active), _claimable(now))
        .values(status="processing", lease_owner=owner, lease_expires_at=expires, started_at=started,
                attempts=Task.attempts + 1)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def update_leased(db: Session, pk: int, owner: str, **values: Any) -> bool:
    """Set ``values`` on the processing task if ``owner`` still holds its lease; whether it did."""
    result = db.execute(
        update(Task)
        .where(Task.pk == pk, Task.lease_owner == owner, Task.status == "processing")
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def cancel_requested(db: Session, pk: int) -> bool:
    return bool(db.scalar(select(Task.cancel_requested).where(Task.pk == pk)))


def lease_owners(db: Session) -> list[str]:
    """The runners holding a lease of a task being processed."""
    return [o for o in db.scalars(select(Task.lease_owner).distinct().where(
        Task.status == "processing", Task.lease_owner.is_not(None))) if o]


def expire_leases(db: Session, owner: str) -> int:
    """End the leases ``owner`` holds (its tasks are claimable at once); how many."""
    result = db.execute(
        update(Task)
        .where(Task.status == "processing", Task.lease_owner == owner)
        .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
