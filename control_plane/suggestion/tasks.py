"""``suggestions.rebuild`` and the maintenance job that schedules rebuilds.

Rebuilds follow the catalog: once an index's documents or serving generation moved past what the
last build saw, a rebuild is enqueued, at most one per ``CATALOG_DEBOUNCE_S`` per index (a catalog
upload of many batches brings one rebuild, not one per batch). They also run every
``SCHEDULE_S`` (popular queries move with the days), and for an index never built.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import utcnow
from control_plane.index import service as indices
from control_plane.shard import ShardBridge
from control_plane.suggestion import repository
from control_plane.suggestion.build import rebuild_task
from control_plane.suggestion.service import REBUILD, settings_of
from control_plane.task import service as tasks
from control_plane.task.registry import TaskModule, TaskType

CATALOG_DEBOUNCE_S = 60.0
SCHEDULE_S = 24 * 3600.0


def schedule_rebuilds(sessions: sessionmaker[Session], _bridge: ShardBridge | None = None,
                      *, debounce_s: float = CATALOG_DEBOUNCE_S, schedule_s: float = SCHEDULE_S) -> list[str]:
    """Enqueue the rebuilds that are due; the index ids."""
    now = utcnow()
    enqueued: list[str] = []
    with sessions.begin() as db:
        for row in repository.all_configs(db):
            if not settings_of(row).enabled:
                continue
            index = indices.index_by_id(db, row.index_id)
            if index is None or tasks.has_active_task(db, index.id, REBUILD):
                continue
            built_at = row.built_at
            moved = index.seq != row.built_seq or index.serving_generation != row.built_generation
            if built_at is None:
                due = True
            elif moved:
                due = built_at + timedelta(seconds=debounce_s) <= now
            else:
                due = built_at + timedelta(seconds=schedule_s) <= now
            if due:
                tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type=REBUILD)
                enqueued.append(index.id)
    return enqueued


def _maintain(sessions: sessionmaker[Session], bridge: ShardBridge) -> None:
    schedule_rebuilds(sessions, bridge)


TASKS = TaskModule(types=(TaskType(REBUILD, rebuild_task),), maintenance=(_maintain,))
