"""Task types: what runs a task of each type, and what undoes its partial work.

Each domain's task module (``document/tasks.py``, ``suggestion/tasks.py`` …) describes its types
and maintenance jobs as a :class:`TaskModule`; :mod:`control_plane.wiring` names those modules in
one list and installs them here before a runner starts, and the runner looks them up here. Nothing
registers itself on import, and ``task/`` imports no domain.
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


@dataclass(frozen=True)
class TaskModule:
    """What one domain's task module runs: its task types and the maintenance jobs it schedules."""

    types: tuple[TaskType, ...] = ()
    #: jobs the runner runs every ``MAINTENANCE_SECONDS`` (expired sessions, scheduled feeds)
    maintenance: tuple[Maintenance, ...] = ()
    #: jobs the runner runs every ``WATCH_SECONDS`` on a thread of their own (cheap unless what they
    #: watch changed: the nodes replicas are placed on)
    watches: tuple[Maintenance, ...] = ()


TASK_TYPES: dict[str, TaskType] = {}
MAINTENANCE: list[Maintenance] = []
WATCHES: list[Maintenance] = []


def install(modules: tuple[TaskModule, ...]) -> None:
    """Add ``modules``' types and jobs to what runners run, in that order. Installing again changes
    nothing (nothing is removed meanwhile: runners of other apps in the process may be reading)."""
    for module in modules:
        TASK_TYPES.update((task_type.name, task_type) for task_type in module.types)
        MAINTENANCE.extend(fn for fn in module.maintenance if fn not in MAINTENANCE)
        WATCHES.extend(fn for fn in module.watches if fn not in WATCHES)
