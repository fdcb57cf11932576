"""The retention job: rows older than ``analytics_retention_days`` (and of deleted indices) go.

Registered with the task runner's maintenance jobs (``control_plane.task.handlers``); it runs in
whichever process runs a task runner, and deleting is idempotent, so several runners are harmless.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from control_plane.analytics.store import purge, today
from control_plane.runtime import Runtime
from control_plane.shard import ShardBridge
from shared.settings import get_settings

# retention of each app's database, keyed by its session factory (set when the app starts);
# a ``shopsearch worker`` process has no app and reads its settings from the environment
_RETENTION_DAYS: dict[sessionmaker[Session], int] = {}


def remember_retention(runtime: Runtime) -> None:
    _RETENTION_DAYS[runtime.sessions] = runtime.settings.analytics_retention_days


def purge_analytics(sessions: sessionmaker[Session], _bridge: ShardBridge | None = None) -> None:
    """Delete what retention no longer keeps: days before today - (retention - 1)."""
    days = _RETENTION_DAYS.get(sessions) or get_settings().analytics_retention_days
    with sessions.begin() as db:
        purge(db, today() - timedelta(days=max(1, days) - 1))
