"""The serving processes' part in tasks: a task waits until every live serving process reflects it,
and a maintenance job forgets the processes gone for good."""

from __future__ import annotations

import time

from sqlalchemy.orm import Session, sessionmaker

from control_plane.serving import repository
from control_plane.serving.follower import LEASE_S, wait_for_replicas
from control_plane.shard import ShardBridge
from control_plane.task.queue import TaskRetry
from control_plane.task.registry import TaskContext, TaskModule


def await_serving_processes(ctx: TaskContext, generation: int, seq: int) -> None:
    """A task succeeds only when every serving process's replicas hold ``generation`` of its index
    up to ``seq`` (:mod:`.follower`); a retry otherwise."""
    behind = wait_for_replicas(ctx.sessions, ctx.claim.index_id, generation, seq, checkpoint=ctx.checkpoint)
    if behind:
        raise TaskRetry(f"serving processes {behind} hold {ctx.claim.index_id}/g{generation} below {seq}")


def forget_gone_processes(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    with sessions.begin() as db:
        repository.forget_silent(db, time.time() - 100 * LEASE_S)


TASKS = TaskModule(maintenance=(forget_gone_processes,))
