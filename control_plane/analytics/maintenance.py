"""The retention job: rows older than ``analytics_retention_days`` (and of deleted indices) go.

One of the task runner's maintenance jobs (listed in ``control_plane.wiring``); it runs in
whichever process runs a task runner, and deleting is idempotent, so several runners are harmless.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from control_plane.analytics import repository
from control_plane.analytics.store import today
from control_plane.index.service import projects_of
from control_plane.shard import ShardBridge
from control_plane.task.registry import TaskModule
from shared.settings import get_settings

# retention of each app's database, keyed by its session factory (set when the app starts);
# a ``shopsearch worker`` process has no app and reads its settings from the environment
_RETENTION_DAYS: dict[sessionmaker[Session], int] = {}


def remember_retention(sessions: sessionmaker[Session], days: int) -> None:
    _RETENTION_DAYS[sessions] = days


def purge_analytics(sessions: sessionmaker[Session], _bridge: ShardBridge | None = None) -> None:
    """Delete what retention no longer keeps: days before today - (retention - 1)."""
    days = _RETENTION_DAYS.get(sessions) or get_settings().analytics_retention_days
    with sessions.begin() as db:
        ids = repository.index_ids(db)
        gone = ids - set(projects_of(db, sorted(ids)))
        repository.purge(db, today() - timedelta(days=max(1, days) - 1), gone)


TASKS = TaskModule(maintenance=(purge_analytics,))
