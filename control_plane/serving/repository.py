"""Rows of the serving-process registry (no tenant: processes are the operator's)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from control_plane.serving.models import ServingProcess


def report(db: Session, process_id: str, at: float, replicas: dict[str, Any] | None) -> None:
    """Record that ``process_id`` is alive at ``at``, and (when given) what its replicas hold."""
    row = db.get(ServingProcess, process_id)
    if row is None:
        db.add(ServingProcess(id=process_id, heartbeat_at=at, replicas=replicas or {}))
        return
    row.heartbeat_at = at
    if replicas is not None:
        row.replicas = replicas


def live(db: Session, since: float) -> list[ServingProcess]:
    """Processes heard from at or after ``since``."""
    return list(db.scalars(select(ServingProcess).where(ServingProcess.heartbeat_at >= since)))


def forget(db: Session, process_id: str) -> None:
    db.execute(delete(ServingProcess).where(ServingProcess.id == process_id))


def forget_silent(db: Session, before: float) -> None:
    """Drop rows of processes not heard from since ``before`` (gone for good)."""
    db.execute(delete(ServingProcess).where(ServingProcess.heartbeat_at < before))
