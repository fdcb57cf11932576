"""Feed syncs: ``feed.sync`` fetches the index's data source, validates and stages its documents in a
replace session of its own, and builds and swaps them in as a replace commit does
(:mod:`.rebuild`); a maintenance job enqueues the syncs that are due on the feed's schedule.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import isoformat, utcnow
from control_plane.document import repository as document_rows
from control_plane.document import service as documents
from control_plane.document.inference import infer, with_fields
from control_plane.document.rebuild import build, cleanup_build, plan_build, swap
from control_plane.document.tasks import load_index
from control_plane.index import service as indices
from control_plane.index.feed_fetch import FeedError, download
from control_plane.shard import ShardBridge
from control_plane.task import queue
from control_plane.task import service as tasks
from control_plane.task.queue import TaskFailed
from control_plane.task.registry import TaskContext, TaskModule, TaskType
from shared.errors import ServiceError


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
        if field_type == "geopoint":  # "lat lng", "lat;lng" or a quoted "lat,lng"
            lat, lng = (float(part) for part in re.split(r"[\s,;]+", value.strip()))
            return {"lat": lat, "lng": lng}
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


def feed_sync(ctx: TaskContext) -> dict[str, Any]:
    claim = ctx.claim
    session_id = claim.payload.get("sessionId")
    if session_id is None:
        index = load_index(ctx.sessions, claim.index_id)
        feed = index.feed
        if not feed:
            raise TaskFailed("CONFLICT", "No data source is configured")
        if index.integration:
            raise TaskFailed("INDEX_HAS_INTEGRATION", "An integration is connected to this index")
        try:
            url = indices.feed_source_url(feed, ctx.settings)
            indices.check_feed_url(url, ctx.settings)
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
        dynamic = bool(index.mapping.get("dynamic"))
        valid: list[tuple[str, dict[str, Any]]] = []
        errors: list[dict[str, Any]] = []
        kept: list[dict[str, Any]] = []  # by position: the valid items, {} for the others
        for i, item in enumerate(items):
            try:
                valid.extend(documents.validate_documents([item], index.mapping, check_types=not dynamic,
                                                          max_bytes=ctx.settings.max_document_bytes))
                kept.append(item)
            except ServiceError as exc:
                kept.append({})
                for detail in exc.details or []:
                    if len(errors) < 20:
                        errors.append({"path": f"[{i}]{detail['path'][3:]}", "message": detail["message"]})
        claim.details.update({"received": len(items), "skipped": len(items) - len(valid)})
        if errors:
            claim.details["errors"] = errors
        session_mapping = None
        if dynamic:  # the new catalog's fields, inferred (CSV values stay strings: text fields)
            inference = infer(index.mapping, kept)
            claim.details.update(inference.details())
            session_mapping = with_fields(index.mapping, inference.fields) if inference.fields else None
        with ctx.sessions.begin() as db:
            index_row = indices.index_by_id(db, claim.index_id)
            if index_row is None:
                raise TaskFailed("NOT_FOUND", "The index was deleted")
            session = documents.create_session(db, index_row, session_mapping, source="feed")
            session.status = "committing"
            session.task_id = claim.id
            for start in range(0, len(valid), 1000):
                documents.stage_documents(db, index_row, session, valid[start : start + 1000])
            session.document_count = len({doc_id for doc_id, _ in valid})
            claim.payload["sessionId"] = session.id
            queue.save_payload(db, claim)
        session_id = claim.payload["sessionId"]
    with ctx.sessions() as db:
        staged = document_rows.session_by_id(db, session_id)
        mapping = staged.mapping if staged is not None else None
    plan_build(ctx, session_id, mapping)
    generation, build_mapping = build(ctx, session_id)
    result = swap(ctx, generation, build_mapping, session_id, int(claim.payload["upto"]))
    with ctx.sessions.begin() as db:
        index_row = indices.index_by_id(db, claim.index_id)
        if index_row is not None and index_row.feed:
            feed = dict(index_row.feed)
            feed["lastSyncAt"] = isoformat(utcnow())
            feed["lastTaskId"] = claim.id
            index_row.feed = feed
    return result


def schedule_feeds(sessions: sessionmaker[Session], _bridge: ShardBridge) -> None:
    now = utcnow()
    with sessions.begin() as db:
        for index in indices.indices_with_feed(db):
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


TASKS = TaskModule(types=(TaskType("feed.sync", feed_sync, cleanup_build),), maintenance=(schedule_feeds,))
