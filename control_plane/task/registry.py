"""Task types: what runs a task of each type, and what undoes its partial work.

Handlers register here (``control_plane.task.handlers`` at import); the runner looks them up here.
Neither imports the other's module for it, so there is no runner <-> handlers circle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from control_plane.shard import ShardBridge
from control_plane.task import queue
from control_plane.task.queue import Claim, TaskCanceled
from shared.settings import Settings


class TaskContext:
    """What a handler gets: the claim, the database, the shards, and checkpoints."""

    def __init__(self, claim: Claim, sessions: sessionmaker[Session], bridge: ShardBridge, settings: Settings,
                 on_checkpoint: Callable[[TaskContext], None] | None = None) -> None:
        self.claim = claim
        self.sessions = sessions
        self.bridge = bridge
        self.settings = settings
        self._on_checkpoint = on_checkpoint
        self._last_renew = time.monotonic()

    @property
    def details(self) -> dict[str, Any]:
        return self.claim.details

    @property
    def payload(self) -> dict[str, Any]:
        return self.claim.payload

    def checkpoint(self, force: bool = False) -> None:
        """Renew the lease when due (raises LeaseLost) and stop if cancellation was requested."""
        now = time.monotonic()
        if not force and now - self._last_renew < min(1.0, self.claim.lease_seconds / 4):
            return
        self._last_renew = now
        if queue.renew(self.sessions, self.claim, details=dict(self.claim.details)):
            raise TaskCanceled(self.claim.id)
        if self._on_checkpoint is not None:
            self._on_checkpoint(self)

    def progress(self, done: int, total: int) -> None:
        self.claim.details["progress"] = round(min(1.0, done / total), 4) if total else 1.0
        self.checkpoint()


Handler = Callable[[TaskContext], dict[str, Any] | None]
Cleanup = Callable[[TaskContext], None]
Maintenance = Callable[[sessionmaker[Session], ShardBridge], None]


@dataclass(frozen=True)
class TaskType:
    name: str
    handler: Handler
    #: called when a task is canceled or fails, to undo partial work (drop a half-built generation)
    cleanup: Cleanup | None = None


TASK_TYPES: dict[str, TaskType] = {}
MAINTENANCE: list[Maintenance] = []


def register_task_type(name: str, handler: Handler, cleanup: Cleanup | None = None) -> None:
    TASK_TYPES[name] = TaskType(name, handler, cleanup)


def register_maintenance(fn: Maintenance) -> None:
    """A job the runner runs every ``MAINTENANCE_SECONDS`` (expired sessions, scheduled feeds)."""
    if fn not in MAINTENANCE:
        MAINTENANCE.append(fn)
