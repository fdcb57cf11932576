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

from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import utcnow
from control_plane.task import owners, repository
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
    with sessions.begin() as db:
        task = repository.next_claimable(db, ACTIVE_STATUSES, now, exclude_indices, lock=postgres)
        if task is None:
            return None
        # taken after the candidate was seen claimable, so after the previous task's finish
        started = utcnow()
        if not repository.take_lease(db, task.pk, ACTIVE_STATUSES, now, owner=owner, started=started,
                                     expires=started + timedelta(seconds=lease_seconds)):
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


def free_dead_leases(sessions: sessionmaker[Session]) -> list[str]:
    """End the leases held by runners of this machine whose process is gone (a crash): their tasks
    are claimable at once instead of when the lease expires (:mod:`.owners`). The runners freed."""
    with sessions() as db:
        held = repository.lease_owners(db)
    dead = [owner for owner in held if owners.gone(owner)]
    if dead:
        with sessions.begin() as db:
            for owner in dead:
                repository.expire_leases(db, owner)
    return dead


def renew(sessions: sessionmaker[Session], claim: Claim, details: dict[str, Any] | None = None) -> bool:
    """Extend the lease; returns whether cancellation was requested. Raises LeaseLost."""
    values: dict[str, Any] = {"lease_expires_at": utcnow() + timedelta(seconds=claim.lease_seconds)}
    if details is not None:
        values["details"] = details
    with sessions.begin() as db:
        if not repository.update_leased(db, claim.pk, claim.owner, **values):
            raise LeaseLost(claim.id)
        return repository.cancel_requested(db, claim.pk)


def save_payload(db: Session, claim: Claim) -> None:
    """Store the claim's payload (resumption state) in the caller's transaction; raises LeaseLost."""
    if not repository.update_leased(db, claim.pk, claim.owner, payload=dict(claim.payload),
                                    details=dict(claim.details)):
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
    if not repository.update_leased(
        db, claim.pk, claim.owner,
        status=status,
        finished_at=utcnow(),
        details=details if details is not None else dict(claim.details),
        error=error,
        lease_owner=None,
        lease_expires_at=None,
    ):
        raise LeaseLost(claim.id)


def release(sessions: sessionmaker[Session], claim: Claim, retry_in: float) -> None:
    """Give the task back (transient failure); it is claimable again after ``retry_in`` seconds."""
    with sessions.begin() as db:
        repository.update_leased(db, claim.pk, claim.owner, lease_owner=None,
                                 lease_expires_at=utcnow() + timedelta(seconds=retry_in))
