"""Everything a running API process holds: built once with the app (``control_plane.app.build_runtime``)
and reached through dependencies.

The parts come from the domains that own them, each from a module of state alone (``search.state``,
``suggestion.state``, ``access.keys``...): the functions that take the runtime live above it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import IO

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from control_plane.access.keys import KeyCache
from control_plane.analytics.query_ids import QueryIds
from control_plane.analytics.recorder import Recorder
from control_plane.hashing import PasswordHashing
from control_plane.mailer import Mailer
from control_plane.search.state import SearchRuntime
from control_plane.serving.follower import Follower
from control_plane.shard import ShardBridge
from control_plane.state import Epochs, RateLimiter, Revocations, SharedState
from control_plane.status.process import ProcessStatus
from control_plane.suggestion.state import SuggestState
from control_plane.task.runner import TaskRunner
from shared.errors import ErrorCode, ServiceError
from shared.settings import Settings


@dataclass
class Indexing:
    """What ``control_plane.lifecycle.start_indexing`` started, for its stop."""

    primary_lock: IO[bytes] | None = None
    replay_stop: threading.Event | None = None
    near: ShardBridge | None = None  # Ray mode's near replicas
    check: Callable[[], bool] | None = None  # the readiness check added


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    # what the deployment's processes share (Redis, the machine's state file, or memory) and what stands on it
    state: SharedState
    epochs: Epochs
    revocations: Revocations
    limiter: RateLimiter  # per-address route limits (moving windows)
    quotas: RateLimiter  # searches and events per second (fixed windows, counted in batches)
    attempts: RateLimiter  # counted-then-verified attempts (sign-in failures), given back on success
    mailer: Mailer
    hashing: PasswordHashing
    # this process's own state
    keys: KeyCache  # API keys by hash
    search: SearchRuntime  # answer cache, resolutions, compiled merchandising, search events
    suggestions: SuggestState
    query_ids: QueryIds
    analytics: Recorder
    status: ProcessStatus
    indexing: Indexing  # what the indexing hooks started, for their stop
    # set while the app runs (``control_plane.lifecycle``), None when stopped
    shards: ShardBridge | None = None
    task_runner: TaskRunner | None = None
    follower: Follower | None = None  # this process's replicas following the database
    readiness_checks: list[Callable[[], bool]] = field(default_factory=list)
    mcp_check: Callable[[], Awaitable[bool]] | None = None  # the MCP app lists its tools (status)

    def shard_bridge(self) -> ShardBridge:
        """The process's bridge to its shard host, opened by the app's start (``control_plane.lifecycle``)."""
        if self.shards is None:
            raise ServiceError(ErrorCode.UNAVAILABLE, "Search workers unavailable: not started")
        return self.shards

    def close(self) -> None:
        self.mailer.close()
        self.engine.dispose()
