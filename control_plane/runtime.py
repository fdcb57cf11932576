"""Everything a running API process holds: built once with the app (``control_plane.app.build_runtime``)
and reached through dependencies.

The parts' types come from the domains that own them; they are imported for type checking only,
since those domains reach the runtime themselves (the app, which imports them all, builds it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from control_plane.hashing import PasswordHashing
from control_plane.mailer import Mailer
from control_plane.state import Epochs, RateLimiter, Revocations, SharedState
from shared.settings import Settings

if TYPE_CHECKING:
    from control_plane.access import KeyCache
    from control_plane.analytics.query_ids import QueryIds
    from control_plane.analytics.recorder import Recorder
    from control_plane.lifecycle import Indexing
    from control_plane.search.service import SearchRuntime
    from control_plane.serving.follower import Follower
    from control_plane.shard import ShardBridge
    from control_plane.status.service import ProcessStatus
    from control_plane.suggestion.serving import SuggestState
    from control_plane.task.runner import TaskRunner


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

    def close(self) -> None:
        self.mailer.close()
        self.engine.dispose()
