"""Task runner heartbeats: written by the runner's claim loop, read by the status route (and the CLI)."""

from __future__ import annotations

import time

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from control_plane.status.models import TaskRunnerBeat

# A runner writes its heartbeat this often; one not heard from for LIVE_SECONDS is taken for gone.
BEAT_SECONDS = 5.0
LIVE_SECONDS = 20.0


def beat(db: Session, runner_id: str, at: float | None = None) -> None:
    row = db.get(TaskRunnerBeat, runner_id)
    at = time.time() if at is None else at
    if row is None:
        db.add(TaskRunnerBeat(id=runner_id, heartbeat_at=at))
    else:
        row.heartbeat_at = at
    # rows of runners gone for an hour (killed without stopping) are dropped by the live ones
    db.execute(delete(TaskRunnerBeat).where(TaskRunnerBeat.heartbeat_at < at - 3600))


def forget(db: Session, runner_id: str) -> None:
    db.execute(delete(TaskRunnerBeat).where(TaskRunnerBeat.id == runner_id))


def live_runners(db: Session, now: float | None = None) -> int:
    """How many runners were heard from within :data:`LIVE_SECONDS`."""
    since = (time.time() if now is None else now) - LIVE_SECONDS
    return int(db.scalar(select(func.count()).select_from(TaskRunnerBeat).where(TaskRunnerBeat.heartbeat_at >= since)) or 0)
