"""Documents: validation, the write path (documents table + task in one transaction), reads,
replace sessions and idempotency records. Services flush, never commit.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from control_plane.db import isoformat, utcnow
from control_plane.document.models import Document, IdempotencyRecord, ReplaceSession, StagedDocument
from control_plane.index.models import Index
from control_plane.index.service import normalize_mapping, plan_limits_for_project, quota_exceeded
from control_plane.task import service as tasks
from control_plane.task.models import Task
from control_plane.usage import check_mapping_keeps_config
from control_plane.wire import decode_cursor, encode_cursor
from search_workers.routing import shard_hash
from shared.errors import ErrorCode, ServiceError, conflict, not_found, validation
from shared.ids import new_id

MAX_DOCUMENTS = 1000
MAX_ID_LENGTH = 512
IDEMPOTENCY_TTL = timedelta(hours=24)
SESSION_IDLE = timedelta(hours=24)
MAX_ERRORS = 100
DEFAULT_MAX_DOCUMENT_BYTES = 100 * 1024  # Settings.max_document_bytes


# --------------------------------------------------------------------------- validation
INT64 = (-(2**63), 2**63 - 1)
# Containers nested in one document (the document itself is level 1). orjson (the stored and the
# engine's form) stops at 255 levels; a product record needs a handful.
MAX_DOCUMENT_DEPTH = 32
# Ids the engine keeps its own records under (shard metadata, sequence markers).
RESERVED_ID_PREFIX = "__shopsearch"


def json_problem(value: Any, max_depth: int, path: str = "") -> dict[str, str] | None:
    """The first ``{path, message}`` of a JSON value nested deeper than ``max_depth`` containers or
    holding an integer outside 64 bits (JSON allows both; orjson, the stored form and the engine
    do not), or None. Iterative: a body nested a thousand levels must not exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        current, at, depth = stack.pop()
        if isinstance(current, bool):
            continue
        if isinstance(current, int):
            if not INT64[0] <= current <= INT64[1]:
                return {"path": at, "message": "integer out of range"}
            continue
        if isinstance(current, list):
            items: list[tuple[str, Any]] = [(f"{at}[{i}]", v) for i, v in enumerate(current)]
        elif isinstance(current, dict):
            items = [(f"{at}.{k}" if at else str(k), v) for k, v in current.items()]
        else:
            continue
        if depth > max_depth:
            return {"path": at, "message": f"nested deeper than {max_depth} levels"}
        stack.extend((v, sub, depth + 1) for sub, v in reversed(items))
    return None


def refuse_malformed_json(body: Any, max_depth: int = MAX_DOCUMENT_DEPTH + 1) -> None:
    """400 for a body orjson cannot encode (too deep, or integers beyond 64 bits): before hashing."""
    problem = json_problem(body, max_depth)
    if problem is not None:
        raise validation("The body cannot be stored", [problem])


def coerce_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_LENGTH:
        return value
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: Any) -> bool:
    if _is_number(value):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
        return True
    except ValueError:
        pass
    try:
        date.fromisoformat(text)
        return True
    except ValueError:
        return False


def type_matches(field_type: str, value: Any) -> bool:
    if field_type == "text":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if field_type == "keyword":
        return isinstance(value, str) or (_is_number(value) and not isinstance(value, float))
    if field_type == "keyword[]":
        if isinstance(value, str):
            return True
        return isinstance(value, list) and all(isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) for v in value)
    if field_type == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if field_type == "float":
        return _is_number(value)
    if field_type == "boolean":
        return isinstance(value, bool)
    if field_type == "date":
        return _is_date(value)
    return True


_TYPE_NAMES = {
    "text": "a string",
    "keyword": "a string",
    "keyword[]": "an array of strings",
    "integer": "an integer",
    "float": "a number",
    "boolean": "a boolean",
    "date": "an ISO 8601 date or a timestamp",
}


def document_problems(doc: dict[str, Any], path: str, max_bytes: int) -> list[dict[str, str]]:
    """What would make an accepted document fail later (in the task, in the engine): nesting,
    integers beyond 64 bits, size."""
    problem = json_problem(doc, MAX_DOCUMENT_DEPTH, path)
    if problem is not None:
        return [problem]
    size = len(orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS))
    if size > max_bytes:
        return [{"path": path, "message": f"the document is {size} bytes; at most {max_bytes}"}]
    return []


def validate_documents(
    items: Any, mapping: dict[str, Any], *, max_items: int = MAX_DOCUMENTS, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> list[tuple[str, dict[str, Any]]]:
    """Every document checked before anything is written; ``[(doc_id, body)]`` (last wins per id)."""
    if not isinstance(items, list):
        raise validation("The body must be a JSON array of documents", [{"path": "", "message": "expected an array"}])
    if len(items) > max_items:
        raise ServiceError(ErrorCode.PAYLOAD_TOO_LARGE, f"At most {max_items} documents per upload ({len(items)} sent)")
    id_field = mapping.get("idField", "id")
    fields: dict[str, Any] = mapping.get("fields") or {}
    errors: list[dict[str, Any]] = []
    out: dict[str, dict[str, Any]] = {}
    for i, doc in enumerate(items):
        shape = document_problems(doc, f"[{i}]", max_bytes) if isinstance(doc, dict) else []
        if not isinstance(doc, dict):
            errors.append({"path": f"[{i}]", "message": "a document must be an object"})
        elif shape:
            errors.extend(shape)
        else:
            doc_id = coerce_id(doc.get(id_field))
            if doc_id is None:
                errors.append({"path": f"[{i}].{id_field}", "message": "missing id: a non-empty string or an integer"})
            elif doc_id.startswith(RESERVED_ID_PREFIX):
                errors.append({"path": f"[{i}].{id_field}", "message": f"ids starting with {RESERVED_ID_PREFIX} are reserved"})
                doc_id = None
            for name, spec in fields.items():
                value = doc.get(name)
                if value is None or name == id_field:
                    continue
                if not type_matches(spec.get("type", ""), value):
                    errors.append({"path": f"[{i}].{name}", "message": f"expected {_TYPE_NAMES.get(spec.get('type'), spec.get('type'))}"})
            if doc_id is not None:
                out.pop(doc_id, None)
                out[doc_id] = doc
        if len(errors) >= MAX_ERRORS:
            break
    if errors:
        raise validation("Some documents are not valid; nothing was uploaded", errors)
    return list(out.items())


def validate_ids(items: Any) -> list[str]:
    if not isinstance(items, list):
        raise validation("The body must be a JSON array of document ids", [{"path": "", "message": "expected an array"}])
    if len(items) > MAX_DOCUMENTS:
        raise ServiceError(ErrorCode.PAYLOAD_TOO_LARGE, f"At most {MAX_DOCUMENTS} ids per request")
    errors = []
    ids: list[str] = []
    for i, value in enumerate(items):
        doc_id = coerce_id(value)
        if doc_id is None:
            errors.append({"path": f"[{i}]", "message": "a document id is a non-empty string or an integer"})
        elif doc_id not in ids:
            ids.append(doc_id)
    if errors:
        raise validation("Some ids are not valid; nothing was deleted", errors[:MAX_ERRORS])
    return ids


# --------------------------------------------------------------------------- sequences
def reserve_seqs(db: Session, index_id: str, count: int) -> int:
    """Hand out ``count`` sequence numbers; returns the last one. Locks the index row until commit,
    so transactions commit their sequences in order."""
    db.execute(
        update(Index)
        .where(Index.id == index_id)
        .values(seq=Index.seq + count, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    value = db.scalar(select(Index.seq).where(Index.id == index_id))
    assert value is not None
    return int(value)


def _insert(db: Session, table: Any) -> Any:
    dialect = db.get_bind().dialect.name
    return pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)


def upsert_rows(db: Session, index_id: str, docs: list[tuple[str, dict[str, Any]]], last_seq: int) -> None:
    first = last_seq - len(docs) + 1
    now = utcnow()
    rows = [
        {
            "index_id": index_id,
            "doc_id": doc_id,
            "body": body,
            "seq": first + i,
            "shard_hash": shard_hash(doc_id),
            "deleted": False,
            "updated_at": now,
        }
        for i, (doc_id, body) in enumerate(docs)
    ]
    stmt = _insert(db, Document)
    stmt = stmt.on_conflict_do_update(
        index_elements=[Document.index_id, Document.doc_id],
        set_={
            "body": stmt.excluded.body,
            "seq": stmt.excluded.seq,
            "shard_hash": stmt.excluded.shard_hash,
            "deleted": stmt.excluded.deleted,
            "updated_at": stmt.excluded.updated_at,
        },
    )
    for start in range(0, len(rows), 500):
        db.execute(stmt, rows[start : start + 500])


def live_count(db: Session, index_id: str) -> int:
    return int(
        db.scalar(select(func.count()).select_from(Document).where(Document.index_id == index_id, Document.deleted.is_(False)))
        or 0
    )


def _check_document_quota(db: Session, index: Index, docs: list[tuple[str, dict[str, Any]]]) -> None:
    limits = plan_limits_for_project(db, index.project_id)
    if limits is None:
        return
    current = live_count(db, index.id)
    if current + len(docs) <= limits.max_documents_per_index:
        return
    ids = [doc_id for doc_id, _ in docs]
    existing = 0
    for start in range(0, len(ids), 500):
        existing += int(
            db.scalar(
                select(func.count())
                .select_from(Document)
                .where(Document.index_id == index.id, Document.doc_id.in_(ids[start : start + 500]), Document.deleted.is_(False))
            )
            or 0
        )
    if current + len(docs) - existing > limits.max_documents_per_index:
        raise quota_exceeded(f"The {limits.plan} plan allows {limits.max_documents_per_index} documents per index")


# --------------------------------------------------------------------------- write routes
def upload_documents(db: Session, index: Index, items: Any, *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> Task:
    docs = validate_documents(items, index.mapping, max_bytes=max_bytes)
    received = len(items)
    _check_document_quota(db, index, docs)
    last = reserve_seqs(db, index.id, len(docs)) if docs else index.seq
    if docs:
        upsert_rows(db, index.id, docs, last)
    return tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.upsert", seq=last,
        details={"received": received}, payload={"fromSeq": last - len(docs) + 1},
    )


def delete_documents(db: Session, index: Index, items: Any) -> Task:
    ids = validate_ids(items)
    existing: list[str] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        existing.extend(
            db.scalars(
                select(Document.doc_id).where(
                    Document.index_id == index.id, Document.doc_id.in_(chunk), Document.deleted.is_(False)
                )
            )
        )
    existing_set = set(existing)
    doomed = [doc_id for doc_id in ids if doc_id in existing_set]
    if doomed:
        last = reserve_seqs(db, index.id, len(doomed))
        first = last - len(doomed) + 1
        now = utcnow()
        for i, doc_id in enumerate(doomed):
            db.execute(
                update(Document)
                .where(Document.index_id == index.id, Document.doc_id == doc_id)
                .values(deleted=True, body=None, seq=first + i, updated_at=now)
                .execution_options(synchronize_session=False)
            )
    else:
        last = int(db.scalar(select(Index.seq).where(Index.id == index.id)) or 0)
    return tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.delete", seq=last,
        details={"received": len(items)}, payload={"deleted": len(doomed)},
    )


def flush_documents(db: Session, index: Index) -> tuple[Task, int]:
    seq = reserve_seqs(db, index.id, 1)
    previous = live_count(db, index.id)
    db.execute(delete(Document).where(Document.index_id == index.id).execution_options(synchronize_session=False))
    db.execute(
        update(Index).where(Index.id == index.id).values(flush_seq=seq).execution_options(synchronize_session=False)
    )
    task = tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.flush", seq=seq,
        details={"previousDocCount": previous},
    )
    return task, previous


# --------------------------------------------------------------------------- reads
def list_documents(db: Session, index: Index, limit: int, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    query = select(Document.doc_id, Document.body).where(Document.index_id == index.id, Document.deleted.is_(False))
    if cursor:
        query = query.where(Document.doc_id > decode_cursor(cursor)[0])
    rows = list(db.execute(query.order_by(Document.doc_id).limit(limit + 1)))
    next_cursor = encode_cursor(rows[limit - 1][0]) if len(rows) > limit else None
    return [row[1] for row in rows[:limit]], next_cursor


def get_document(db: Session, index: Index, doc_id: str) -> dict[str, Any]:
    body = db.scalar(
        select(Document.body).where(Document.index_id == index.id, Document.doc_id == doc_id, Document.deleted.is_(False))
    )
    if body is None:
        raise not_found("Document")
    return body  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- idempotency
def body_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def idempotent_answer(db: Session, index_id: str, route: str, key: str, digest: str) -> tuple[int, Any] | None:
    """The stored answer for ``key`` (same body), None when new; 409 when the body differs."""
    record = db.scalar(
        select(IdempotencyRecord).where(
            IdempotencyRecord.index_id == index_id, IdempotencyRecord.route == route, IdempotencyRecord.key == key
        )
    )
    if record is None:
        return None
    if record.created_at < utcnow() - IDEMPOTENCY_TTL:
        db.delete(record)
        db.flush()
        return None
    if record.body_hash != digest:
        raise ServiceError(ErrorCode.IDEMPOTENCY_KEY_REUSED, "This Idempotency-Key was used with another body")
    return record.status_code, orjson.loads(record.answer)


def remember_answer(db: Session, index_id: str, route: str, key: str, digest: str, status_code: int, answer: Any) -> None:
    db.add(
        IdempotencyRecord(
            id=new_id("idem"), index_id=index_id, route=route, key=key, body_hash=digest,
            status_code=status_code, answer=orjson.dumps(answer).decode(), created_at=utcnow(),
        )
    )
    db.flush()


def purge_idempotency(db: Session) -> None:
    db.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - IDEMPOTENCY_TTL))


# --------------------------------------------------------------------------- replace sessions
def session_view(session: ReplaceSession) -> dict[str, Any]:
    status = session.status
    if status == "open" and session.expires_at <= utcnow():
        status = "expired"
    return {
        "id": session.id,
        "indexId": session.index_id,
        "status": status,
        "documentCount": session.document_count,
        "mapping": session.mapping,
        "createdAt": isoformat(session.created_at),
        "expiresAt": isoformat(session.expires_at),
        "taskId": session.task_id,
    }


def create_session(db: Session, index: Index, mapping_in: Any, source: str = "api") -> ReplaceSession:
    mapping = None
    if mapping_in is not None:
        mapping = normalize_mapping(mapping_in, index.language)
        check_mapping_keeps_config(db, index, mapping)
    now = utcnow()
    session = ReplaceSession(
        id=new_id("rs"), index_id=index.id, project_id=index.project_id, status="open", mapping=mapping,
        document_count=0, source=source, created_at=now, last_activity_at=now, expires_at=now + SESSION_IDLE,
    )
    db.add(session)
    db.flush()
    return session


def get_session(db: Session, index: Index, session_id: str, *, lock: bool = False) -> ReplaceSession:
    query = select(ReplaceSession).where(
        ReplaceSession.id == session_id, ReplaceSession.index_id == index.id, ReplaceSession.source == "api"
    )
    if lock:
        query = query.with_for_update()
    session = db.scalar(query)
    if session is None:
        raise not_found("Replace session")
    return session


def _require_open(db: Session, session: ReplaceSession) -> None:
    if session.status == "open" and session.expires_at <= utcnow():
        expire_session(db, session)
    if session.status != "open":
        raise conflict(f"The replace session is {session.status}, not open")


def stage_documents(db: Session, index: Index, session: ReplaceSession, docs: list[tuple[str, dict[str, Any]]]) -> None:
    if not docs:
        return
    last = reserve_seqs(db, index.id, len(docs))
    first = last - len(docs) + 1
    rows = [
        {"session_id": session.id, "doc_id": doc_id, "body": body, "seq": first + i, "shard_hash": shard_hash(doc_id)}
        for i, (doc_id, body) in enumerate(docs)
    ]
    stmt = _insert(db, StagedDocument)
    stmt = stmt.on_conflict_do_update(
        index_elements=[StagedDocument.session_id, StagedDocument.doc_id],
        set_={"body": stmt.excluded.body, "seq": stmt.excluded.seq, "shard_hash": stmt.excluded.shard_hash},
    )
    for start in range(0, len(rows), 500):
        db.execute(stmt, rows[start : start + 500])


def staged_count(db: Session, session_id: str) -> int:
    return int(db.scalar(select(func.count()).select_from(StagedDocument).where(StagedDocument.session_id == session_id)) or 0)


def upload_to_session(
    db: Session, index: Index, session: ReplaceSession, items: Any, *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> dict[str, Any]:
    _require_open(db, session)
    docs = validate_documents(items, session.mapping or index.mapping, max_bytes=max_bytes)
    limits = plan_limits_for_project(db, index.project_id)
    if limits is not None and session.document_count + len(docs) > limits.max_documents_per_index:
        count = staged_count(db, session.id)
        if count + len(docs) > limits.max_documents_per_index:
            raise quota_exceeded(f"The {limits.plan} plan allows {limits.max_documents_per_index} documents per index")
    stage_documents(db, index, session, docs)
    now = utcnow()
    session.document_count = staged_count(db, session.id)
    session.last_activity_at = now
    session.expires_at = now + SESSION_IDLE
    db.flush()
    return {"received": len(items), "documentCount": session.document_count}


def commit_session(db: Session, index: Index, session: ReplaceSession) -> Task:
    _require_open(db, session)
    if session.mapping is not None:
        check_mapping_keeps_config(db, index, session.mapping)
    # changes made after the commit (higher sequences) apply on top of the new catalog
    upto = reserve_seqs(db, index.id, 1)
    task = tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="replace.commit",
        payload={"sessionId": session.id, "upto": upto}, details={"received": session.document_count},
    )
    session.status = "committing"
    session.task_id = task.id
    session.last_activity_at = utcnow()
    db.flush()
    return task


def abort_session(db: Session, session: ReplaceSession) -> None:
    _require_open(db, session)
    session.status = "aborted"
    session.last_activity_at = utcnow()
    db.execute(delete(StagedDocument).where(StagedDocument.session_id == session.id))
    db.flush()


def expire_session(db: Session, session: ReplaceSession) -> None:
    session.status = "expired"
    db.execute(delete(StagedDocument).where(StagedDocument.session_id == session.id))
    db.flush()


def expire_idle_sessions(db: Session) -> int:
    rows = list(db.scalars(select(ReplaceSession).where(ReplaceSession.status == "open", ReplaceSession.expires_at <= utcnow())))
    for session in rows:
        expire_session(db, session)
    return len(rows)
