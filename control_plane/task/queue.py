"""Claiming, leasing and finishing tasks (CONTRACT §4).

* One task at a time per index, in order: a task is claimable only when no earlier task of its
  index is still enqueued or processing.
* PostgreSQL: ``SELECT … FOR UPDATE OF tasks SKIP LOCKED`` so several runner processes never pick
  the same task; SQLite: one claim at a time in the process (SQLite serialises writers anyway).
* A claim takes a lease (``lease_owner``, ``lease_expires_at``) that the runner renews while it
  works; a lease that expires (the runner died) makes the task claimable again and it is resumed.
  Every state change is guarded by the lease owner, so a runner that lost its lease changes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import exists, or_, select, update
from sqlalchemy.orm import Session, aliased, sessionmaker

from control_plane.db import utcnow
from control_plane.task.models import Task
from control_plane.task.service import ACTIVE_STATUSES

_SQLITE_CLAIM_LOCK = threading.Lock()


class LeaseLost(Exception):
    """Another runner owns the task now (our lease expired); stop without writing anything."""


class TaskCanceled(Exception):
    """The task was asked to stop (reindex/cancel, index deleted)."""


class TaskFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class TaskRetry(Exception):
    """A transient failure (shards unreachable): release the task to be claimed again later."""


@dataclass
class Claim:
    pk: int
    id: str
    project_id: str
    index_id: str
    type: str
    seq: int | None
    payload: dict[str, Any]
    details: dict[str, Any]
    attempts: int
    owner: str
    lease_seconds: float
    renewed_at: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _is_postgres(sessions: sessionmaker[Session]) -> bool:
    bind = sessions.kw.get("bind")
    return bind is not None and bind.dialect.name == "postgresql"


def claim_next(
    sessions: sessionmaker[Session],
    owner: str,
    lease_seconds: float,
    exclude_indices: set[str] | None = None,
) -> Claim | None:
    if _is_postgres(sessions):
        return _claim(sessions, owner, lease_seconds, exclude_indices, postgres=True)
    with _SQLITE_CLAIM_LOCK:
        return _claim(sessions, owner, lease_seconds, exclude_indices, postgres=False)


def _claim(
    sessions: sessionmaker[Session],
    owner: str,
    lease_seconds: float,
    exclude_indices: set[str] | None,
    *,
    postgres: bool,
) -> Claim | None:
    now = utcnow()
    earlier = aliased(Task)
    blocked = exists().where(
        earlier.index_id == Task.index_id,
        earlier.status.in_(ACTIVE_STATUSES),
        earlier.pk < Task.pk,
    )
    claimable = or_(
        Task.status == "enqueued",
        Task.lease_expires_at.is_(None),
        Task.lease_expires_at < now,
    )
    query = select(Task).where(Task.status.in_(ACTIVE_STATUSES), claimable, ~blocked)
    if exclude_indices:
        query = query.where(Task.index_id.not_in(list(exclude_indices)))
    query = query.order_by(Task.pk).limit(1)
    if postgres:
        query = query.with_for_update(skip_locked=True, of=Task)
    with sessions.begin() as db:
        task = db.scalar(query)
        if task is None:
            return None
        # taken after the candidate was seen claimable, so after the previous task's finish
        started = utcnow()
        result = db.execute(
            update(Task)
            .where(Task.pk == task.pk, Task.status.in_(ACTIVE_STATUSES), claimable)
            .values(
                status="processing",
                lease_owner=owner,
                lease_expires_at=started + timedelta(seconds=lease_seconds),
                started_at=started,
                attempts=Task.attempts + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return None
        return Claim(
            pk=task.pk,
            id=task.id,
            project_id=task.project_id,
            index_id=task.index_id,
            type=task.type,
            seq=task.seq,
            payload=dict(task.payload or {}),
            details=dict(task.details or {}),
            attempts=task.attempts + 1,
            owner=owner,
            lease_seconds=lease_seconds,
        )


def renew(sessions: sessionmaker[Session], claim: Claim, details: dict[str, Any] | None = None) -> bool:
    """Extend the lease; returns whether cancellation was requested. Raises LeaseLost."""
    values: dict[str, Any] = {"lease_expires_at": utcnow() + timedelta(seconds=claim.lease_seconds)}
    if details is not None:
        values["details"] = details
    with sessions.begin() as db:
        result = db.execute(
            update(Task)
            .where(Task.pk == claim.pk, Task.lease_owner == claim.owner, Task.status == "processing")
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            raise LeaseLost(claim.id)
        return bool(db.scalar(select(Task.cancel_requested).where(Task.pk == claim.pk)))


def save_payload(db: Session, claim: Claim) -> None:
    """Store the claim's payload (resumption state) in the caller's transaction; raises LeaseLost."""
    result = db.execute(
        update(Task)
        .where(Task.pk == claim.pk, Task.lease_owner == claim.owner, Task.status == "processing")
        .values(payload=dict(claim.payload), details=dict(claim.details))
        .execution_options(synchronize_session=False)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        raise LeaseLost(claim.id)


def finish(
    db: Session,
    claim: Claim,
    status: str,
    *,
    details: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> None:
    """Record the outcome in the caller's transaction (so a swap and the success commit together).

    ``claim.extra["before_finish"]`` (set by the runner) runs first: the shards already reflect the
    task, so cached answers are retired before anyone can see the task as finished.
    """
    before_finish = claim.extra.get("before_finish")
    if before_finish is not None:
        before_finish()
    result = db.execute(
        update(Task)
        .where(Task.pk == claim.pk, Task.lease_owner == claim.owner, Task.status == "processing")
        .values(
            status=status,
            finished_at=utcnow(),
            details=details if details is not None else dict(claim.details),
            error=error,
            lease_owner=None,
            lease_expires_at=None,
        )
        .execution_options(synchronize_session=False)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        raise LeaseLost(claim.id)


def release(sessions: sessionmaker[Session], claim: Claim, retry_in: float) -> None:
    """Give the task back (transient failure); it is claimable again after ``retry_in`` seconds."""
    with sessions.begin() as db:
        db.execute(
            update(Task)
            .where(Task.pk == claim.pk, Task.lease_owner == claim.owner, Task.status == "processing")
            .values(lease_owner=None, lease_expires_at=utcnow() + timedelta(seconds=retry_in))
            .execution_options(synchronize_session=False)
        )
