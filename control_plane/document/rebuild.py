"""Rebuilds: ``index.reindex`` / ``mapping.update`` build a new generation beside the serving one from
the stored documents; ``replace.commit`` (and ``feed.sync``, :mod:`.feed_sync`) from a replace
session's staged documents. Either is then swapped in with one update of
``indices.serving_generation``; a replace session's swap also replaces the documents table's
content, in the same transaction.

Resumption: the generation number and the sequence to build up to are stored in the task's payload
before any shard work, so a runner that takes over an expired lease continues the same build.

Before the swap the new generation is caught up with every change after the build's sequence (the
documents table's rows with a later sequence: an update made while the build ran rewrote its row
under a later sequence, so the build never saw the document at all): first without a lock, for as
long as that gap shrinks, then, for what is left, under the index row's lock that the swap holds
(uploads wait). So the generation swapped in holds every write committed before the swap, and no
acknowledged write goes missing from search when the task succeeds. Serving processes that follow
the database catch the new generation up as soon as they see the swap, and hold searches of it
until then (:meth:`control_plane.serving.follower.Follower.searchable`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from control_plane.db import utcnow
from control_plane.document import repository as document_rows
from control_plane.document import service as documents
from control_plane.document.inference import swapped_mapping
from control_plane.document.repository import row_source
from control_plane.document.tasks import load_index
from control_plane.index import service as indices
from control_plane.index.models import Index
from control_plane.serving.tasks import await_serving_processes
from control_plane.shard import catch_up
from control_plane.task import queue
from control_plane.task.queue import TaskFailed, TaskRetry
from control_plane.task.registry import TaskContext, TaskModule, TaskType

SWAP_DROP_DELAY = 3.0
#: catch-up rounds outside the lock before the swap (each one for the changes the one before let in)
SETTLE_ROUNDS = 3


def plan_build(ctx: TaskContext, session_id: str | None, mapping: dict[str, Any] | None) -> None:
    """Decide (once) the generation, the sequence to build up to and the mapping; kept in the payload."""
    payload = ctx.claim.payload
    if "generation" in payload:
        return
    with ctx.sessions.begin() as db:
        index = indices.locked_index(db, ctx.claim.index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        generation = max(index.serving_generation, index.building_generation or 0) + 1
        if "upto" in payload:
            upto = int(payload["upto"])  # reserved when the commit was requested
        elif session_id is not None:
            upto = documents.reserve_seqs(db, index.id, 1)
        else:
            upto = index.seq
        payload["generation"] = generation
        payload["upto"] = upto
        build_mapping = mapping if mapping is not None else index.mapping
        if session_id is not None and build_mapping.get("dynamic"):
            build_mapping = swapped_mapping(build_mapping, index.mapping)
        payload["buildMapping"] = build_mapping
        indices.start_build(db, index.id, generation, upto=upto, mapping=payload["buildMapping"],
                               session_id=session_id)
        queue.save_payload(db, ctx.claim)


def build(ctx: TaskContext, session_id: str | None) -> tuple[int, dict[str, Any]]:
    """Bring the planned generation up to the planned sequence; its number and mapping."""
    payload = ctx.claim.payload
    index = load_index(ctx.sessions, ctx.claim.index_id)
    generation = int(payload["generation"])
    mapping = payload["buildMapping"]
    upto = int(payload["upto"])
    ctx.bridge.open(index.shard_spec(generation, mapping))

    def checkpoint(done: int, total: int) -> None:
        ctx.progress(done, total)

    low = catch_up(
        ctx.bridge, row_source(ctx.sessions, index.id, session_id), index_id=index.id, generation=generation,
        shards=index.shards, upto=upto, checkpoint=checkpoint,
    )
    if any(seq < upto for seq in low.values()):
        raise TaskRetry(f"generation {generation} of {index.id} is behind {upto}: {low}")
    await_serving_processes(ctx, generation, upto)
    ctx.checkpoint(force=True)
    return generation, mapping


def _catch_up_new(ctx: TaskContext, generation: int, reached: int, latest: int, flush_seq: int) -> int:
    """Feed the new generation the documents table's changes in ``(reached, latest]``; the sequence
    every shard reached (a retry when a shard stayed behind)."""
    if latest <= reached:
        return reached
    index_id = ctx.claim.index_id
    shards = load_index(ctx.sessions, index_id).shards
    low = catch_up(ctx.bridge, row_source(ctx.sessions, index_id), index_id=index_id, generation=generation,
                   shards=shards, upto=latest, flush_seq=flush_seq)
    if any(seq < latest for seq in low.values()):
        raise TaskRetry(f"generation {generation} of {index_id} is behind {latest}: {low}")
    return latest


def settle(ctx: TaskContext, generation: int, upto: int) -> int:
    """Catch the new generation up with the changes made since ``upto`` while they keep coming, at
    most :data:`SETTLE_ROUNDS` times (the rest is fed under the swap's lock); the sequence reached."""
    reached = upto
    for _ in range(SETTLE_ROUNDS):
        with ctx.sessions() as db:
            index = indices.detached_index(db, ctx.claim.index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        if index.seq <= reached:
            break
        reached = _catch_up_new(ctx, generation, reached, index.seq, index.flush_seq)
        ctx.checkpoint()
    return reached


def swap(
    ctx: TaskContext, generation: int, mapping: dict[str, Any], session_id: str | None, upto: int
) -> dict[str, Any]:
    claim = ctx.claim
    reached = settle(ctx, generation, upto)
    with ctx.sessions.begin() as db:
        # take the index row's lock first: uploads (which bump its sequence) wait for the swap
        indices.touch_index(db, claim.index_id)
        index = indices.locked_index(db, claim.index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        # the changes committed since the settling: no other can come in until this commits
        _catch_up_new(ctx, generation, reached, index.seq, index.flush_seq)
        old = index.serving_generation
        if session_id is not None:
            _replace_documents(db, index, session_id, upto)
            session = document_rows.session_by_id(db, session_id)
            if session is not None:
                session.status = "committed"
                session.last_activity_at = utcnow()
                if session.mapping is not None:
                    index.mapping = swapped_mapping(session.mapping, index.mapping)
            document_rows.delete_staged(db, session_id)
        index.serving_generation = generation
        index.serving_mapping = mapping
        index.building_generation = None
        index.build = None
        index.status = "ready"
        index.document_count = documents.recount(db, index.id)
        db.flush()
        details = dict(claim.details)
        details.pop("progress", None)  # re-inserted below, so it follows the other keys
        details["progress"] = 1.0
        details["indexed"] = index.document_count
        queue.finish(db, claim, "succeeded", details=details)
    if old != generation:
        ctx.bridge.drop(claim.index_id, old, delay=SWAP_DROP_DELAY)
    return {"status": "succeeded"}


def _replace_documents(db: Session, index: Index, session_id: str, upto: int) -> None:
    """The documents table takes the staged catalog; changes made after the commit (seq > upto) stay."""
    document_rows.delete_documents_before(db, index.id, upto)
    if index.flush_seq > upto:
        return  # flushed after the commit: the new catalog is gone too
    document_rows.insert_staged_documents(db, index.id, session_id)


def cleanup_build(ctx: TaskContext) -> None:
    payload = ctx.claim.payload
    generation = payload.get("generation")
    with ctx.sessions.begin() as db:
        index = indices.index_by_id(db, ctx.claim.index_id)
        if index is not None:
            if generation is not None and index.building_generation == generation:
                index.building_generation = None
                index.build = None
            index.status = "ready"
            if ctx.claim.type == "mapping.update":
                index.mapping = index.serving_mapping
        session_id = payload.get("sessionId")
        if session_id:
            session = document_rows.session_by_id(db, session_id)
            if session is not None and session.status == "committing":
                session.status = "failed"
            document_rows.delete_staged(db, session_id)
    if generation is not None:
        ctx.bridge.drop(ctx.claim.index_id, int(generation))


def reindex(ctx: TaskContext) -> dict[str, Any]:
    mapping = ctx.claim.payload.get("mapping") if ctx.claim.type == "mapping.update" else None
    plan_build(ctx, None, mapping)
    generation, build_mapping = build(ctx, None)
    return swap(ctx, generation, build_mapping, None, int(ctx.claim.payload["upto"]))


def replace_commit(ctx: TaskContext) -> dict[str, Any]:
    session_id = ctx.claim.payload.get("sessionId")
    with ctx.sessions() as db:
        session = document_rows.session_by_id(db, session_id) if session_id else None
        if session is None or session.status != "committing":
            raise TaskFailed("CONFLICT", "The replace session is not being committed")
        mapping = session.mapping
    plan_build(ctx, session_id, mapping)
    generation, build_mapping = build(ctx, session_id)
    return swap(ctx, generation, build_mapping, session_id, int(ctx.claim.payload["upto"]))


TASKS = TaskModule(types=(
    TaskType("index.reindex", reindex, cleanup_build),
    TaskType("mapping.update", reindex, cleanup_build),
    TaskType("replace.commit", replace_commit, cleanup_build),
))
