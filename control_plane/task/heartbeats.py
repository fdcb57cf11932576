"""Task runner heartbeats: written by the runner's claim loop, read by the status route (and the CLI).

Besides its row in ``task_runners``, a runner whose shard replicas cannot write to the disk says so
in the shared state (:func:`report_disk`, refreshed every :data:`DISK_REPORT_SECONDS` while it
lasts and expiring :data:`DISK_TTL_SECONDS` after), which the status route reads as indexing
``degraded`` whichever process computes the answer.
"""

from __future__ import annotations

import logging
import time

import orjson
from sqlalchemy.orm import Session

from control_plane.state import SharedState, SharedStateUnavailable
from control_plane.task import repository

log = logging.getLogger("shopsearch.tasks")

# A runner writes its heartbeat this often; one not heard from for LIVE_SECONDS is taken for gone.
BEAT_SECONDS = 5.0
LIVE_SECONDS = 20.0
DISK_KEY = "indexing:disk-refuses"
DISK_REPORT_SECONDS = 0.5
DISK_TTL_SECONDS = 3.0


def beat(db: Session, runner_id: str, at: float | None = None) -> None:
    repository.beat(db, runner_id, time.time() if at is None else at)


def forget(db: Session, runner_id: str) -> None:
    repository.forget_runner(db, runner_id)


def live_runners(db: Session, now: float | None = None) -> int:
    """How many runners were heard from within :data:`LIVE_SECONDS`."""
    return repository.runners_since(db, (time.time() if now is None else now) - LIVE_SECONDS)


def leader(db: Session, now: float | None = None) -> str | None:
    """The live runner that runs the watch jobs (the one whose id sorts first): those act on the
    whole cluster, and two at once would undo each other's work."""
    return repository.first_runner_since(db, (time.time() if now is None else now) - LIVE_SECONDS)


def report_disk(state: SharedState, failures: list[str]) -> None:
    """Say that these replicas' disk refuses writes (nothing when the list is empty: it expires)."""
    if not failures:
        return
    try:
        state.set(DISK_KEY, orjson.dumps(failures[:20]), DISK_TTL_SECONDS)
    except SharedStateUnavailable:
        log.debug("reporting the shards' disk failure failed", exc_info=True)


def disk_failures(state: SharedState) -> list[str]:
    """What a runner reported of replicas whose disk refuses writes, within :data:`DISK_TTL_SECONDS`."""
    raw = state.get(DISK_KEY)
    return [] if raw is None else list(orjson.loads(raw))
