"""Document tasks: ``documents.upsert`` / ``documents.delete`` / ``documents.flush``, and the job that
expires idle replace sessions.

The documents are already in the database (written by the request); the task brings every replica
of every shard of the serving generation up to the index's sequence and succeeds when all reached
the task's own.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from control_plane.document import service as documents
from control_plane.index import service as indices
from control_plane.index.models import Index
from control_plane.serving.tasks import await_serving_processes
from control_plane.shard import ShardBridge, catch_up
from control_plane.task.queue import TaskFailed, TaskRetry
from control_plane.task.registry import TaskContext, TaskModule, TaskType


def load_index(sessions: sessionmaker[Session], index_id: str) -> Index:
    """The task's index, detached; the task fails when it was deleted."""
    with sessions() as db:
        index = indices.detached_index(db, index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        return index


def _sync_serving(ctx: TaskContext, target: int, rejected: list[dict[str, Any]]) -> Index:
    """Make search reflect every change up to the index's sequence; a retry unless every shard
    reached ``target``. ``rejected`` collects the documents the engine refused (see ``catch_up``)."""
    index = load_index(ctx.sessions, ctx.claim.index_id)
    generation = index.serving_generation
    ctx.bridge.open(index.shard_spec())

    def checkpoint(done: int, upto: int) -> None:
        ctx.checkpoint()

    with documents.serving_feed(ctx.sessions, index.id) as feed:  # one moment: see Feed
        if feed is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        low = catch_up(
            ctx.bridge, feed.rows, index_id=index.id, generation=generation, shards=index.shards,
            upto=feed.seq, flush_seq=feed.flush_seq, checkpoint=checkpoint, rejected=rejected,
        )
    if any(seq < target for seq in low.values()):
        raise TaskRetry(f"shards of {index.id} are behind {target}: {low}")
    await_serving_processes(ctx, generation, target)
    return index


def run_document_task(ctx: TaskContext) -> None:
    claim = ctx.claim
    rejected: list[dict[str, Any]] = []
    index = _sync_serving(ctx, claim.seq or 0, rejected)
    own = [r for r in rejected if int(claim.payload.get("fromSeq", 0)) <= r["seq"] <= (claim.seq or 0)]
    if own:
        ids = ", ".join(repr(r["id"]) for r in own[:10])
        raise TaskFailed("VALIDATION_ERROR", f"The search engine refused {len(own)} document(s) ({ids}; "
                         f"{own[0]['error']}): they are stored but not searchable; fix or delete them")
    with ctx.sessions.begin() as db:
        count = documents.live_count(db, index.id)
        indices.set_document_count(db, index.id, count)
    if claim.type == "documents.upsert":
        claim.details["indexed"] = claim.details.get("received", 0)
    elif claim.type == "documents.delete":
        claim.details["deleted"] = int(claim.payload.get("deleted", 0))
    elif claim.type == "documents.flush":
        claim.details["deleted"] = claim.details.get("previousDocCount", 0)


def recount_after_failure(ctx: TaskContext) -> None:
    """A document task that failed (or was canceled) still leaves the index's ``documentCount``
    counted afresh from the stored documents (its rows are stored whatever search holds)."""
    with ctx.sessions.begin() as db:
        if indices.index_by_id(db, ctx.claim.index_id) is not None:
            indices.set_document_count(db, ctx.claim.index_id, documents.recount(db, ctx.claim.index_id))


def expire_sessions(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    with sessions.begin() as db:
        documents.expire_idle_sessions(db)
        documents.purge_idempotency(db)


TASKS = TaskModule(
    types=tuple(TaskType(name, run_document_task, recount_after_failure)
                for name in ("documents.upsert", "documents.delete", "documents.flush")),
    maintenance=(expire_sessions,),
)
