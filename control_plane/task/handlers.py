"""The built-in task handlers.

* ``documents.upsert`` / ``documents.delete`` / ``documents.flush``: the documents are already in
  the database (written by the request); the task brings every replica of every shard of the
  serving generation up to the index's sequence and succeeds when all reached the task's own.
* ``index.reindex`` / ``mapping.update``: a new generation is built beside the serving one from the
  stored documents, then swapped in with one update of ``indices.serving_generation``.
* ``replace.commit`` / ``feed.sync``: the same, from a replace session's staged documents; the swap
  also replaces the documents table's content, in the same transaction.

Resumption: the generation number and the sequence to build up to are stored in the task's payload
before any shard work, so a runner that takes over an expired lease continues the same build.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy.orm import Session, sessionmaker

from control_plane.analytics.maintenance import purge_analytics
from control_plane.db import isoformat, utcnow
from control_plane.document import repository as document_rows
from control_plane.document import service as documents
from control_plane.document.repository import row_source
from control_plane.index import repository as index_rows
from control_plane.index.feed_fetch import FeedError, download
from control_plane.index.models import Index
from control_plane.index.service import check_feed_url, feed_source_url
from control_plane.serving import repository as serving_rows
from control_plane.serving.follower import LEASE_S, wait_for_replicas
from control_plane.shard import ShardBridge, catch_up
from control_plane.suggestion import tasks as _suggestion_tasks  # noqa: F401 - registers suggestions.rebuild, its schedule
from control_plane.task import queue
from control_plane.task import service as tasks
from control_plane.task.queue import TaskFailed, TaskRetry
from control_plane.task.registry import TaskContext, register_maintenance, register_task_type
from shared.errors import ServiceError

log = logging.getLogger("shopsearch.tasks")

SWAP_DROP_DELAY = 3.0


def _load_index(sessions: sessionmaker[Session], index_id: str) -> Index:
    with sessions() as db:
        index = index_rows.detached_index(db, index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        return index


# --------------------------------------------------------------------------- serving sync
def _sync_serving(ctx: TaskContext, target: int, rejected: list[dict[str, Any]]) -> Index:
    """Make search reflect every change up to the index's sequence; a retry unless every shard
    reached ``target``. ``rejected`` collects the documents the engine refused (see ``catch_up``)."""
    index = _load_index(ctx.sessions, ctx.claim.index_id)
    generation = index.serving_generation
    ctx.bridge.open(index.shard_spec())

    def checkpoint(done: int, upto: int) -> None:
        ctx.checkpoint()

    low = catch_up(
        ctx.bridge, row_source(ctx.sessions, index.id), index_id=index.id, generation=generation,
        shards=index.shards, upto=max(index.seq, target), flush_seq=index.flush_seq, checkpoint=checkpoint,
        rejected=rejected,
    )
    if any(seq < target for seq in low.values()):
        raise TaskRetry(f"shards of {index.id} are behind {target}: {low}")
    _await_serving_processes(ctx, generation, target)
    return index


def _await_serving_processes(ctx: TaskContext, generation: int, seq: int) -> None:
    """A task succeeds only when every serving process's replicas reflect it (control_plane.serving)."""
    behind = wait_for_replicas(ctx.sessions, ctx.claim.index_id, generation, seq, checkpoint=ctx.checkpoint)
    if behind:
        raise TaskRetry(f"serving processes {behind} hold {ctx.claim.index_id}/g{generation} below {seq}")


def _document_task(ctx: TaskContext) -> None:
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
        index_rows.set_document_count(db, index.id, count)
    if claim.type == "documents.upsert":
        claim.details["indexed"] = claim.details.get("received", 0)
    elif claim.type == "documents.delete":
        claim.details["deleted"] = int(claim.payload.get("deleted", 0))
    elif claim.type == "documents.flush":
        claim.details["deleted"] = claim.details.get("previousDocCount", 0)


for _type in ("documents.upsert", "documents.delete", "documents.flush"):
    register_task_type(_type, _document_task)


# --------------------------------------------------------------------------- rebuilds
def _plan_build(ctx: TaskContext, session_id: str | None, mapping: dict[str, Any] | None) -> None:
    """Decide (once) the generation, the sequence to build up to and the mapping; kept in the payload."""
    payload = ctx.claim.payload
    if "generation" in payload:
        return
    with ctx.sessions.begin() as db:
        index = index_rows.locked_index(db, ctx.claim.index_id)
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
        payload["buildMapping"] = mapping if mapping is not None else index.mapping
        index_rows.start_build(db, index.id, generation, upto=upto, mapping=payload["buildMapping"],
                               session_id=session_id)
        queue.save_payload(db, ctx.claim)


def _build(ctx: TaskContext, session_id: str | None) -> tuple[int, dict[str, Any]]:
    """Bring the planned generation up to the planned sequence; its number and mapping."""
    payload = ctx.claim.payload
    index = _load_index(ctx.sessions, ctx.claim.index_id)
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
    _await_serving_processes(ctx, generation, upto)
    ctx.checkpoint(force=True)
    return generation, mapping


def _swap(
    ctx: TaskContext, generation: int, mapping: dict[str, Any], session_id: str | None, upto: int
) -> dict[str, Any]:
    claim = ctx.claim
    with ctx.sessions.begin() as db:
        # take the index row's lock first: uploads (which bump its sequence) wait for the swap
        index_rows.touch_index(db, claim.index_id)
        index = index_rows.locked_index(db, claim.index_id)
        if index is None:
            raise TaskFailed("NOT_FOUND", "The index was deleted")
        old = index.serving_generation
        if session_id is not None:
            _replace_documents(db, index, session_id, upto)
            session = document_rows.session_by_id(db, session_id)
            if session is not None:
                session.status = "committed"
                session.last_activity_at = utcnow()
                if session.mapping is not None:
                    index.mapping = session.mapping
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


def _cleanup_build(ctx: TaskContext) -> None:
    payload = ctx.claim.payload
    generation = payload.get("generation")
    with ctx.sessions.begin() as db:
        index = index_rows.index_by_id(db, ctx.claim.index_id)
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


def _reindex(ctx: TaskContext) -> dict[str, Any]:
    mapping = ctx.claim.payload.get("mapping") if ctx.claim.type == "mapping.update" else None
    _plan_build(ctx, None, mapping)
    generation, build_mapping = _build(ctx, None)
    return _swap(ctx, generation, build_mapping, None, int(ctx.claim.payload["upto"]))


def _replace_commit(ctx: TaskContext) -> dict[str, Any]:
    session_id = ctx.claim.payload.get("sessionId")
    with ctx.sessions() as db:
        session = document_rows.session_by_id(db, session_id) if session_id else None
        if session is None or session.status != "committing":
            raise TaskFailed("CONFLICT", "The replace session is not being committed")
        mapping = session.mapping
    _plan_build(ctx, session_id, mapping)
    generation, build_mapping = _build(ctx, session_id)
    return _swap(ctx, generation, build_mapping, session_id, int(ctx.claim.payload["upto"]))


register_task_type("index.reindex", _reindex, _cleanup_build)
register_task_type("mapping.update", _reindex, _cleanup_build)
register_task_type("replace.commit", _replace_commit, _cleanup_build)


# --------------------------------------------------------------------------- feed sync
def _parse_feed(content: bytes, fmt: str) -> list[Any]:
    if fmt == "json":
        data = orjson.loads(content)
        if isinstance(data, dict):
            for key in ("items", "products", "documents", "data"):
                if isinstance(data.get(key), list):
                    return list(data[key])
            raise TaskFailed("VALIDATION_ERROR", "The JSON feed is not an array of documents")
        if not isinstance(data, list):
            raise TaskFailed("VALIDATION_ERROR", "The JSON feed is not an array of documents")
        return data
    if fmt == "jsonl":
        out = []
        for line in content.splitlines():
            if line.strip():
                out.append(orjson.loads(line))
        return out
    text = content.decode("utf-8-sig")
    return [dict(row) for row in csv.DictReader(io.StringIO(text))]


def _coerce_csv_value(value: Any, field_type: str | None) -> Any:
    if not isinstance(value, str) or field_type is None:
        return value
    if value == "":
        return None
    try:
        if field_type == "integer":
            return int(float(value))
        if field_type == "float":
            return float(value)
        if field_type == "boolean":
            return value.strip().lower() in ("1", "true", "yes", "y")
        if field_type == "keyword[]":
            return [v.strip() for v in value.split("|") if v.strip()]
    except ValueError:
        return value
    return value


def _apply_field_map(items: list[Any], field_map: dict[str, str], mapping: dict[str, Any], fmt: str) -> list[Any]:
    fields = mapping.get("fields") or {}
    out = []
    for item in items:
        if not isinstance(item, dict):
            out.append(item)
            continue
        doc = dict(item)
        for source, target in field_map.items():
            if source in doc:
                value = doc.pop(source)
                doc[target] = value
        if fmt == "csv":
            doc = {k: _coerce_csv_value(v, (fields.get(k) or {}).get("type")) for k, v in doc.items()}
            doc = {k: v for k, v in doc.items() if v is not None}
        out.append(doc)
    return out


def _feed_sync(ctx: TaskContext) -> dict[str, Any]:
    claim = ctx.claim
    session_id = claim.payload.get("sessionId")
    if session_id is None:
        index = _load_index(ctx.sessions, claim.index_id)
        feed = index.feed
        if not feed:
            raise TaskFailed("CONFLICT", "No data source is configured")
        if index.integration:
            raise TaskFailed("INDEX_HAS_INTEGRATION", "An integration is connected to this index")
        try:
            url = feed_source_url(feed, ctx.settings)
            check_feed_url(url, ctx.settings)
        except ServiceError as exc:
            raise TaskFailed(str(exc.code), exc.message) from exc
        try:
            content = download(url, ctx.settings.feed_allow_private_hosts)
        except FeedError as exc:
            raise TaskFailed(exc.code, exc.message) from exc
        ctx.checkpoint(force=True)
        try:
            items = _parse_feed(content, feed.get("format", "json"))
        except (orjson.JSONDecodeError, UnicodeDecodeError, csv.Error) as exc:
            raise TaskFailed("VALIDATION_ERROR", f"The feed could not be parsed: {exc}") from exc
        items = _apply_field_map(items, feed.get("fieldMap") or {}, index.mapping, feed.get("format", "json"))
        valid: list[tuple[str, dict[str, Any]]] = []
        errors: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            try:
                valid.extend(documents.validate_documents([item], index.mapping, max_bytes=ctx.settings.max_document_bytes))
            except ServiceError as exc:
                for detail in exc.details or []:
                    if len(errors) < 20:
                        errors.append({"path": f"[{i}]{detail['path'][3:]}", "message": detail["message"]})
        claim.details.update({"received": len(items), "skipped": len(items) - len(valid)})
        if errors:
            claim.details["errors"] = errors
        with ctx.sessions.begin() as db:
            index_row = index_rows.index_by_id(db, claim.index_id)
            if index_row is None:
                raise TaskFailed("NOT_FOUND", "The index was deleted")
            session = documents.create_session(db, index_row, None, source="feed")
            session.status = "committing"
            session.task_id = claim.id
            for start in range(0, len(valid), 1000):
                documents.stage_documents(db, index_row, session, valid[start : start + 1000])
            session.document_count = len({doc_id for doc_id, _ in valid})
            claim.payload["sessionId"] = session.id
            queue.save_payload(db, claim)
        session_id = claim.payload["sessionId"]
    _plan_build(ctx, session_id, None)
    generation, build_mapping = _build(ctx, session_id)
    result = _swap(ctx, generation, build_mapping, session_id, int(claim.payload["upto"]))
    with ctx.sessions.begin() as db:
        index_row = index_rows.index_by_id(db, claim.index_id)
        if index_row is not None and index_row.feed:
            feed = dict(index_row.feed)
            feed["lastSyncAt"] = isoformat(utcnow())
            feed["lastTaskId"] = claim.id
            index_row.feed = feed
    return result


register_task_type("feed.sync", _feed_sync, _cleanup_build)


# --------------------------------------------------------------------------- maintenance
def _expire_sessions(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    with sessions.begin() as db:
        documents.expire_idle_sessions(db)
        documents.purge_idempotency(db)


def _schedule_feeds(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    now = utcnow()
    with sessions.begin() as db:
        for index in index_rows.indices_with_feed(db):
            feed = index.feed or {}
            every = {"hourly": timedelta(hours=1), "daily": timedelta(days=1)}.get(feed.get("schedule", "manual"))
            if every is None or index.integration:
                continue
            # the first scheduled sync comes one interval after the feed was configured
            last = feed.get("lastSyncAt") or feed.get("configuredAt")
            if last and datetime.fromisoformat(last.replace("Z", "+00:00")) + every > now:
                continue
            if tasks.has_active_task(db, index.id, "feed.sync"):
                continue
            task = tasks.enqueue(db, project_id=index.project_id, index_id=index.id, type="feed.sync")
            feed = dict(feed)
            feed["lastSyncAt"] = isoformat(now)
            feed["lastTaskId"] = task.id
            index.feed = feed


def _forget_gone_serving_processes(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    with sessions.begin() as db:
        serving_rows.forget_silent(db, time.time() - 100 * LEASE_S)


register_maintenance(_expire_sessions)
register_maintenance(_schedule_feeds)
register_maintenance(_forget_gone_serving_processes)
register_maintenance(purge_analytics)
