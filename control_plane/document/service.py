"""Documents: validation, the write path (documents table + task in one transaction), reads,
replace sessions and idempotency records. Services flush, never commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import read_snapshot, utcnow
from control_plane.document import repository
from control_plane.document.inference import infer, swapped_mapping, with_fields
from control_plane.document.models import IdempotencyRecord, ReplaceSession
from control_plane.document.value_types import expected, type_matches
from control_plane.index import service as indices
from control_plane.index.models import Index
from control_plane.index.service import normalize_mapping, plan_limits_for_project, quota_exceeded
from control_plane.shard.feed import ChangeRow, Feed, RowSource
from control_plane.task import service as tasks
from control_plane.task.models import Task
from control_plane.usage import check_mapping_keeps_config
from control_plane.wire import decode_cursor, encode_cursor
from shared.errors import ErrorCode, ServiceError, conflict, not_found, validation
from shared.ids import new_id
from shared.jsonvalue import json_problem
from shared.routing import shard_hash
from shared.semantic import is_vector, vector_field_fault

MAX_DOCUMENTS = 1000
MAX_ID_LENGTH = 512
IDEMPOTENCY_TTL = timedelta(hours=24)
SESSION_IDLE = timedelta(hours=24)
MAX_ERRORS = 100
DEFAULT_MAX_DOCUMENT_BYTES = 100 * 1024  # Settings.max_document_bytes


# --------------------------------------------------------------------------- validation
# Containers nested in one document (the document itself is level 1). orjson (the stored and the
# engine's form) stops at 255 levels; a product record needs a handful.
MAX_DOCUMENT_DEPTH = 32
# Ids the engine keeps its own records under (shard metadata, sequence markers).
RESERVED_ID_PREFIX = "__shopsearch"


def refuse_malformed_json(body: Any, max_depth: int = MAX_DOCUMENT_DEPTH + 1) -> None:
    """400 for a body orjson cannot encode (too deep, or integers beyond 64 bits): before hashing."""
    problem = json_problem(body, max_depth)
    if problem is not None:
        raise validation("The body cannot be stored", [problem])


def coerce_id(value: Any) -> str | None:
    """A document id as stored: a non-empty string (at most 512 characters), or an integer written in
    decimal (5.0 is the integer 5, as in JSON Schema)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_LENGTH:
        return value
    return None


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
    items: Any, mapping: dict[str, Any], *, max_items: int = MAX_DOCUMENTS, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    check_types: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """Every document checked before anything is written; ``[(doc_id, body)]`` (last wins per id).
    Without ``check_types`` (a dynamic index: :mod:`.inference` reports them) values of the wrong
    type for their field are let through."""
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
            for name, spec in fields.items() if check_types else ():
                value = doc.get(name)
                if value is None or name == id_field:
                    continue
                if is_vector(spec):
                    fault = vector_field_fault(spec, value)
                    if fault is not None:
                        errors.append({"path": f"[{i}].{name}", "message": fault})
                elif not type_matches(spec.get("type", ""), value):
                    errors.append({"path": f"[{i}].{name}", "message": f"expected {expected(spec.get('type', ''))}"})
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
def row_source(sessions: sessionmaker[Session], index_id: str, session_id: str | None = None) -> RowSource:
    """What the index's shards are fed from: its documents, or a replace session's staged ones."""
    return repository.row_source(sessions, index_id, session_id)


@contextmanager
def serving_feed(sessions: sessionmaker[Session], index_id: str) -> Iterator[Feed | None]:
    """The index's documents as of one moment (:class:`~control_plane.shard.feed.Feed`), read in one
    snapshot held until the block ends; None when the index is gone."""
    with sessions() as db:
        read_snapshot(db)
        marks = indices.sequences(db, index_id)
        if marks is None:
            yield None
            return

        def rows(after: int, upto: int, limit: int) -> list[ChangeRow]:
            return repository.change_rows(db, index_id, after, upto, limit)

        yield Feed(marks[0], marks[1], rows)


def reserve_seqs(db: Session, index_id: str, count: int) -> int:
    """Hand out ``count`` sequence numbers; returns the last one. Locks the index row until commit,
    so transactions commit their sequences in order."""
    return indices.reserve_seqs(db, index_id, count)


def live_count(db: Session, index_id: str) -> int:
    """The index's live documents (kept by every write: no count of the rows)."""
    return repository.live_count(db, index_id)


def recount(db: Session, index_id: str) -> int:
    """Count the index's live documents afresh and keep the count (after a replace swapped rows in)."""
    return repository.recount(db, index_id)


def upsert_rows(db: Session, index_id: str, docs: list[tuple[str, dict[str, Any]]], last_seq: int) -> None:
    """Store ``docs`` under the sequences ending at ``last_seq`` (reserved by :func:`reserve_seqs`,
    whose lock on the index row is held: no other write of the index's rows runs meanwhile), and
    move the live count by the documents that were not live before."""
    first = last_seq - len(docs) + 1
    live_before = len(repository.live_ids_among(db, index_id, [doc_id for doc_id, _ in docs]))
    now = utcnow()
    repository.upsert_documents(
        db,
        [
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
        ],
    )
    repository.add_live(db, index_id, len(docs) - live_before)


def _check_document_quota(db: Session, index: Index, docs: list[tuple[str, dict[str, Any]]]) -> None:
    limits = plan_limits_for_project(db, index.project_id)
    # Every document row holds a sequence number of its own, so an index that has handed out
    # fewer sequences than the quota leaves room needs no count: counting reads every row of the
    # index (bodies included), a cost per upload that grew with the index (~20 % of the server's
    # time while uploading the 300k-th document).
    if indices.current_seq(db, index.id) + len(docs) <= limits.max_documents_per_index:
        return
    current = repository.live_count(db, index.id)
    if current + len(docs) <= limits.max_documents_per_index:
        return
    existing = len(repository.live_ids_among(db, index.id, [doc_id for doc_id, _ in docs]))
    if current + len(docs) - existing > limits.max_documents_per_index:
        raise quota_exceeded(f"The {limits.plan} plan allows {limits.max_documents_per_index} documents per index")


# --------------------------------------------------------------------------- write routes
def upload_documents(db: Session, index: Index, items: Any, *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> Task:
    details: dict[str, Any] = {"received": len(items) if isinstance(items, list) else 0}
    if index.mapping.get("dynamic"):
        docs = _infer_fields(db, index, items, max_bytes, details)
    else:
        docs = validate_documents(items, index.mapping, max_bytes=max_bytes)
    _check_document_quota(db, index, docs)
    last = reserve_seqs(db, index.id, len(docs)) if docs else index.seq
    if docs:
        upsert_rows(db, index.id, docs, last)
    return tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.upsert", seq=last,
        details=details, payload={"fromSeq": last - len(docs) + 1},
    )


def _infer_fields(
    db: Session, index: Index, items: Any, max_bytes: int, details: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """A dynamic index's upload: the documents (values of the wrong type let through), the fields
    they bring added to the mapping (with the rebuild that indexes them, enqueued before the
    upload's task), and what was added, refused or not mapped written into ``details``.

    The index row is locked first and read again: uploads adding fields at once add them one
    after the other, each to the mapping the previous one left."""
    indices.touch_index(db, index.id)
    db.refresh(index)
    docs = validate_documents(items, index.mapping, max_bytes=max_bytes, check_types=False)
    inference = infer(index.mapping, items)
    details.update(inference.details())
    if inference.fields:
        details["mappingTaskId"] = indices.add_inferred_fields(db, index, inference.fields).id
    return docs


def delete_documents(db: Session, index: Index, items: Any) -> Task:
    """Tombstone the live ones of ``items``, and the ids only a replace catalog committed but not
    yet swapped in holds: the commit was accepted first, so its swap must not bring them back."""
    ids = validate_ids(items)
    # the index row's lock before reading: no swap or other write can commit between the reads and
    # the tombstones
    indices.touch_index(db, index.id)
    existing = set(repository.live_ids_among(db, index.id, ids))
    doomed = [doc_id for doc_id in ids if doc_id in existing]
    pending = repository.ids_committing(db, index.id, [doc_id for doc_id in ids if doc_id not in existing])
    if doomed or pending:
        last = reserve_seqs(db, index.id, len(doomed) + len(pending))
        first = last - len(doomed) - len(pending) + 1
        deleted = repository.tombstone(db, index.id, doomed, first_seq=first)
        repository.add_live(db, index.id, -deleted)
        now = utcnow()
        repository.upsert_documents(db, [
            {"index_id": index.id, "doc_id": doc_id, "body": None, "seq": first + len(doomed) + i,
             "shard_hash": shard_hash(doc_id), "deleted": True, "updated_at": now}
            for i, doc_id in enumerate(pending)
        ])
    else:
        last = indices.current_seq(db, index.id)
    return tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.delete", seq=last,
        details={"received": len(items)}, payload={"deleted": len(doomed) + len(pending)},
    )


def flush_documents(db: Session, index: Index) -> tuple[Task, int]:
    """Delete every document; the task and the number of documents there were."""
    seq = reserve_seqs(db, index.id, 1)
    previous = repository.live_count(db, index.id)
    repository.delete_all_documents(db, index.id)
    indices.set_flush_seq(db, index.id, seq)
    task = tasks.enqueue(
        db, project_id=index.project_id, index_id=index.id, type="documents.flush", seq=seq,
        details={"previousDocCount": previous},
    )
    return task, previous


# --------------------------------------------------------------------------- reads
def list_documents(db: Session, index: Index, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.page_bodies(db, index.id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1][0]) if len(rows) > limit else None
    return [body for _, body in rows[:limit]], next_cursor


def get_document(db: Session, index: Index, doc_id: str) -> dict[str, Any]:
    body = repository.live_body(db, index.id, doc_id)
    if body is None:
        raise not_found("Document")
    return body


# --------------------------------------------------------------------------- idempotency
def body_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def idempotent(
    db: Session, index_id: str, route: str, key: str | None, body: Any, run: Callable[[], tuple[int, Any]]
) -> tuple[int, Any]:
    """``run()``'s ``(status, answer)``, or with an Idempotency-Key the answer first given to that
    key and body (24 h; 409 for the same key with another body)."""
    refuse_malformed_json(body)  # before the body is hashed: orjson refuses what it can't encode
    if not key:
        return run()
    digest = body_hash(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
    prior = idempotent_answer(db, index_id, route, key, digest)
    if prior is not None:
        return prior
    status, answer = run()
    remember_answer(db, index_id, route, key, digest, status, answer)
    return status, answer


def idempotent_answer(db: Session, index_id: str, route: str, key: str, digest: str) -> tuple[int, Any] | None:
    """The stored answer for ``key`` (same body), None when new; 409 when the body differs."""
    record = repository.idempotency_record(db, index_id, route, key)
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
    repository.purge_idempotency(db, before=utcnow() - IDEMPOTENCY_TTL)


# --------------------------------------------------------------------------- replace sessions
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
    session = repository.get_session(db, index.id, session_id, lock=lock)
    if session is None:
        raise not_found("Replace session")
    return session


def _require_open(db: Session, session: ReplaceSession) -> None:
    if session.status == "open" and session.expires_at <= utcnow():
        expire_session(db, session)
    if session.status != "open":
        raise conflict(f"The replace session is {session.status}, not open")


def stage_documents(db: Session, index: Index, session: ReplaceSession, docs: list[tuple[str, dict[str, Any]]]) -> int:
    """Stage ``docs`` (ids unique) in the session; how many of their ids it did not hold yet."""
    if not docs:
        return 0
    last = reserve_seqs(db, index.id, len(docs))
    first = last - len(docs) + 1
    held = repository.staged_ids_among(db, session.id, [doc_id for doc_id, _ in docs])
    repository.stage_documents(
        db,
        [
            {"session_id": session.id, "doc_id": doc_id, "body": body, "seq": first + i, "shard_hash": shard_hash(doc_id)}
            for i, (doc_id, body) in enumerate(docs)
        ],
    )
    return len(docs) - held


def upload_to_session(
    db: Session, index: Index, session: ReplaceSession, items: Any, *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    report: dict[str, Any] | None = None,
) -> ReplaceSession:
    """Stage ``items``. Under a dynamic mapping (the session's, else the index's) the fields they
    bring go into the session's mapping (the new catalog is built with it) and what was added,
    refused or not mapped into ``report``."""
    _require_open(db, session)
    mapping = session.mapping or index.mapping
    if mapping.get("dynamic"):
        docs = validate_documents(items, mapping, max_bytes=max_bytes, check_types=False)
        inference = infer(mapping, items)
        if inference.fields:
            session.mapping = with_fields(mapping, inference.fields)
        if report is not None:
            report.update(inference.details())
    else:
        docs = validate_documents(items, mapping, max_bytes=max_bytes)
    limits = plan_limits_for_project(db, index.project_id)
    if session.document_count + len(docs) > limits.max_documents_per_index:
        count = repository.staged_count(db, session.id)
        if count + len(docs) > limits.max_documents_per_index:
            raise quota_exceeded(f"The {limits.plan} plan allows {limits.max_documents_per_index} documents per index")
    # the session's row is locked (the caller's get_session(lock=True)): its count is current; counting
    # the staged rows instead cost a scan of the session per upload
    session.document_count += stage_documents(db, index, session, docs)
    now = utcnow()
    session.last_activity_at = now
    session.expires_at = now + SESSION_IDLE
    db.flush()
    return session


def commit_session(db: Session, index: Index, session: ReplaceSession) -> Task:
    _require_open(db, session)
    if session.mapping is not None:
        check_mapping_keeps_config(db, index, swapped_mapping(session.mapping, index.mapping))
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
    repository.delete_staged(db, session.id)
    db.flush()


def expire_session(db: Session, session: ReplaceSession) -> None:
    session.status = "expired"
    repository.delete_staged(db, session.id)
    db.flush()


def expire_idle_sessions(db: Session) -> int:
    rows = repository.expired_open_sessions(db, utcnow())
    for session in rows:
        expire_session(db, session)
    return len(rows)
