"""Document rows (the source of truth the shards are fed from), replace sessions with their staged
documents, and idempotency records. Queries for a tenant take the index, which its caller has
checked belongs to the tenant's project."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, delete, exists, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import rows_among, utcnow
from control_plane.document.models import (
    Document,
    DocumentCount,
    IdempotencyRecord,
    ReplaceSession,
    StagedDocument,
)
from control_plane.shard.feed import ChangeRow, RowSource


def change_rows(db: Session, index_id: str, after: int, upto: int, limit: int) -> list[ChangeRow]:
    """The index's documents and tombstones with ``after < seq <= upto``."""
    d = Document
    query = (
        select(d.doc_id, d.body, d.seq, d.shard_hash, d.deleted)
        .where(d.index_id == index_id, d.seq > after, d.seq <= upto)
        .order_by(d.seq)
        .limit(limit)
    )
    return [(r[0], r[1], r[2], r[3], bool(r[4])) for r in db.execute(query)]


def staged_change_rows(db: Session, session_id: str, after: int, upto: int, limit: int) -> list[ChangeRow]:
    """A replace session's staged documents with ``after < seq <= upto`` (never deletions)."""
    s = StagedDocument
    query = (
        select(s.doc_id, s.body, s.seq, s.shard_hash)
        .where(s.session_id == session_id, s.seq > after, s.seq <= upto)
        .order_by(s.seq)
        .limit(limit)
    )
    return [(r[0], r[1], r[2], r[3], False) for r in db.execute(query)]


def row_source(sessions: sessionmaker[Session], index_id: str, session_id: str | None = None) -> RowSource:
    """What the shards of ``index_id`` are fed from: its documents, or a replace session's staged ones
    (a short transaction per page)."""

    def rows(after: int, upto: int, limit: int) -> list[ChangeRow]:
        with sessions() as db:
            if session_id is None:
                return change_rows(db, index_id, after, upto, limit)
            return staged_change_rows(db, session_id, after, upto, limit)

    return rows


# --------------------------------------------------------------------------- documents
_CHUNK = 500  # rows per statement
#: a document row's columns; a write of an existing (index_id, doc_id) replaces the others
_COLUMNS = ("index_id", "doc_id", "body", "seq", "shard_hash", "deleted", "updated_at")


def _insert(db: Session, table: Any) -> Any:
    """An INSERT that can ``on_conflict_do_update`` in the session's dialect."""
    dialect = db.get_bind().dialect.name
    return pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)


def upsert_documents(db: Session, rows: list[dict[str, Any]]) -> None:
    """Insert or replace document rows (``index_id, doc_id, body, seq, shard_hash, deleted, updated_at``).
    A Core statement on the session's connection: the ORM's bulk path added ~7 us of bookkeeping
    per row (19.5 -> 12.8 us per product on SQLite) for rows that never become ORM objects. On
    PostgreSQL the rows are copied in (:func:`_copy_upsert`)."""
    if not rows:
        return
    if db.get_bind().dialect.name == "postgresql":
        _copy_upsert(db, rows)
        return
    table = Document.__table__
    stmt = _insert(db, table)
    stmt = stmt.on_conflict_do_update(index_elements=[table.c.index_id, table.c.doc_id],
                                      set_={column: stmt.excluded[column] for column in _COLUMNS[2:]})
    connection = db.connection()
    for start in range(0, len(rows), _CHUNK):
        connection.execute(stmt, rows[start : start + _CHUNK])


_INCOMING = "shopsearch_incoming_documents"
_MOVE_IN = (
    f"WITH moved AS (DELETE FROM {_INCOMING} RETURNING {', '.join(_COLUMNS)}) "
    f"INSERT INTO documents ({', '.join(_COLUMNS)}) SELECT {', '.join(_COLUMNS)} FROM moved "
    "ON CONFLICT (index_id, doc_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:])
)


def _copy_upsert(db: Session, rows: list[dict[str, Any]]) -> None:
    """``COPY`` into a temporary table of the connection, then one ``INSERT ... SELECT ... ON
    CONFLICT`` that empties it. An upsert per row (psycopg's pipelined executemany) cost ~27 us of
    the serving process's CPU per product and ~29 us of wall time; this costs ~8 and ~18. One row
    per key (the last), as one statement may not update a row twice."""
    latest = {(row["index_id"], row["doc_id"]): row for row in rows}
    raw = db.connection().connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor:
        # per call, inside the transaction: a rolled-back transaction takes a table it created along
        cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_INCOMING} (LIKE documents)")
        with cursor.copy(f"COPY {_INCOMING} ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
            for row in latest.values():
                body = row["body"]
                updated = row["updated_at"]
                copy.write_row((row["index_id"], row["doc_id"], None if body is None else json.dumps(body),
                                row["seq"], row["shard_hash"], row["deleted"],
                                updated if updated.tzinfo else updated.replace(tzinfo=UTC)))
        cursor.execute(_MOVE_IN)


def live_count(db: Session, index_id: str) -> int:
    """The index's live documents: the kept count (one row read), or the rows counted for an index
    that has none yet."""
    kept = db.scalar(select(DocumentCount.live).where(DocumentCount.index_id == index_id))
    return int(kept) if kept is not None else count_live_rows(db, index_id)


def count_live_rows(db: Session, index_id: str) -> int:
    return int(
        db.scalar(select(func.count()).select_from(Document).where(Document.index_id == index_id, Document.deleted.is_(False)))
        or 0
    )


def add_live(db: Session, index_id: str, delta: int) -> None:
    """Move the kept count by ``delta`` after a write of the index's rows in this transaction (which
    holds the index row's lock). An index without a kept count gets one from its rows, this
    transaction's write included."""
    if delta == 0:
        return
    moved = db.execute(
        update(DocumentCount)
        .where(DocumentCount.index_id == index_id)
        .values(live=DocumentCount.live + delta)
        .execution_options(synchronize_session=False)
    )
    if not moved.rowcount:  # type: ignore[attr-defined]
        set_live(db, index_id, count_live_rows(db, index_id))


def set_live(db: Session, index_id: str, count: int) -> None:
    stmt = _insert(db, DocumentCount).values(index_id=index_id, live=count)
    db.execute(stmt.on_conflict_do_update(index_elements=[DocumentCount.index_id], set_={"live": stmt.excluded.live}))


def recount(db: Session, index_id: str) -> int:
    """Count the index's live rows and keep the count (after a rewrite of many rows)."""
    count = count_live_rows(db, index_id)
    set_live(db, index_id, count)
    return count


def live_ids_among(db: Session, index_id: str, doc_ids: list[str]) -> list[str]:
    """Which of ``doc_ids`` the index holds (not deleted). ``deleted`` is tested here, not in the
    query: with it there, SQLite (no statistics) chose ``ix_documents_index_live`` for a long IN
    list, reading every live row of the index (~300 ms per 500 ids at 300k documents) instead of
    one primary-key lookup per id (~1 us); PostgreSQL's planner, see :func:`rows_among`."""
    rows = rows_among(db, select(Document.doc_id, Document.deleted).where(Document.index_id == index_id),
                      Document.doc_id, doc_ids)
    return [doc_id for doc_id, deleted in rows if not deleted]


def tombstone(db: Session, index_id: str, doc_ids: list[str], first_seq: int) -> int:
    """Mark live documents deleted (kept as tombstones for replay), sequences from ``first_seq`` in
    order; how many were live (a document deleted meanwhile by another transaction is skipped)."""
    now = utcnow()
    deleted = 0
    for i, doc_id in enumerate(doc_ids):
        result = db.execute(
            update(Document)
            .where(Document.index_id == index_id, Document.doc_id == doc_id, Document.deleted.is_(False))
            .values(deleted=True, body=None, seq=first_seq + i, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        deleted += result.rowcount  # type: ignore[attr-defined]
    return deleted


def delete_all_documents(db: Session, index_id: str) -> None:
    db.execute(delete(Document).where(Document.index_id == index_id).execution_options(synchronize_session=False))
    set_live(db, index_id, 0)


def page_bodies(db: Session, index_id: str, after: str | None, limit: int) -> list[tuple[str, Any]]:
    """Up to ``limit`` ``(doc_id, body)`` of the live documents by id after ``after``."""
    query = select(Document.doc_id, Document.body).where(Document.index_id == index_id, Document.deleted.is_(False))
    if after is not None:
        query = query.where(Document.doc_id > after)
    return [(row[0], row[1]) for row in db.execute(query.order_by(Document.doc_id).limit(limit))]


def live_bodies(db: Session, index_id: str) -> Iterator[Any]:
    """The body of every live document of the index, streamed in batches."""
    rows = db.execute(select(Document.body).where(Document.index_id == index_id, Document.deleted.is_(False))
                      .execution_options(yield_per=2000))
    for (body,) in rows:
        yield body


def live_body(db: Session, index_id: str, doc_id: str) -> dict[str, Any] | None:
    return db.scalar(
        select(Document.body).where(Document.index_id == index_id, Document.doc_id == doc_id, Document.deleted.is_(False))
    )


# --------------------------------------------------------------------------- idempotency records
def idempotency_record(db: Session, index_id: str, route: str, key: str) -> IdempotencyRecord | None:
    return db.scalar(
        select(IdempotencyRecord).where(
            IdempotencyRecord.index_id == index_id, IdempotencyRecord.route == route, IdempotencyRecord.key == key
        )
    )


def purge_idempotency(db: Session, before: datetime) -> None:
    db.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < before))


# --------------------------------------------------------------------------- replace sessions
def get_session(db: Session, index_id: str, session_id: str, *, lock: bool = False) -> ReplaceSession | None:
    """A tenant's replace session of the index (internal ones, from feed syncs, are not found)."""
    query = select(ReplaceSession).where(
        ReplaceSession.id == session_id, ReplaceSession.index_id == index_id, ReplaceSession.source == "api"
    )
    if lock:
        query = query.with_for_update()
    return db.scalar(query)


def session_by_id(db: Session, session_id: str) -> ReplaceSession | None:
    """Any replace session by id, feed syncs' included (task work, no tenant)."""
    return db.get(ReplaceSession, session_id)


def expired_open_sessions(db: Session, now: datetime) -> list[ReplaceSession]:
    return list(
        db.scalars(select(ReplaceSession).where(ReplaceSession.status == "open", ReplaceSession.expires_at <= now))
    )


def stage_documents(db: Session, rows: list[dict[str, Any]]) -> None:
    """Insert or replace staged rows (``session_id, doc_id, body, seq, shard_hash``)."""
    stmt = _insert(db, StagedDocument)
    stmt = stmt.on_conflict_do_update(
        index_elements=[StagedDocument.session_id, StagedDocument.doc_id],
        set_={"body": stmt.excluded.body, "seq": stmt.excluded.seq, "shard_hash": stmt.excluded.shard_hash},
    )
    for start in range(0, len(rows), _CHUNK):
        db.execute(stmt, rows[start : start + _CHUNK])


def staged_ids_among(db: Session, session_id: str, doc_ids: list[str]) -> int:
    """How many of ``doc_ids`` the session holds already."""
    return len(rows_among(db, select(StagedDocument.doc_id).where(StagedDocument.session_id == session_id),
                          StagedDocument.doc_id, doc_ids))


def ids_committing(db: Session, index_id: str, doc_ids: list[str]) -> list[str]:
    """Which of ``doc_ids`` a replace session of the index being committed (its swap still to come) holds."""
    query = (select(StagedDocument.doc_id)
             .join(ReplaceSession, ReplaceSession.id == StagedDocument.session_id)
             .where(ReplaceSession.index_id == index_id, ReplaceSession.status == "committing"))
    found = {doc_id for doc_id, in rows_among(db, query, StagedDocument.doc_id, doc_ids)}
    return [doc_id for doc_id in doc_ids if doc_id in found]


def staged_count(db: Session, session_id: str) -> int:
    return int(db.scalar(select(func.count()).select_from(StagedDocument).where(StagedDocument.session_id == session_id)) or 0)


def delete_staged(db: Session, session_id: str) -> None:
    db.execute(delete(StagedDocument).where(StagedDocument.session_id == session_id))


# --------------------------------------------------------------------------- a replace session swapped in
def delete_documents_before(db: Session, index_id: str, seq: int) -> None:
    """Remove the index's documents and tombstones changed before ``seq``."""
    db.execute(
        delete(Document)
        .where(Document.index_id == index_id, Document.seq < seq)
        .execution_options(synchronize_session=False)
    )


def insert_staged_documents(db: Session, index_id: str, session_id: str) -> None:
    """Copy the session's staged documents into the index's, in one INSERT … SELECT; a document id
    the index already holds keeps its row."""
    s = StagedDocument
    newer = exists().where(and_(Document.index_id == index_id, Document.doc_id == s.doc_id))
    db.execute(
        insert(Document).from_select(
            ["index_id", "doc_id", "body", "seq", "shard_hash", "deleted", "updated_at"],
            select(
                literal(index_id), s.doc_id, s.body, s.seq, s.shard_hash, literal(False), literal(utcnow(), Document.updated_at.type)
            ).where(s.session_id == session_id, ~newer),
        )
    )


# --------------------------------------------------------------------------- the access layer's questions
def api_session_exists(db: Session, _project_id: str, index_id: str | None, session_id: str) -> bool:
    """A tenant's replace session of the index (a feed sync's own is not found)."""
    row = db.get(ReplaceSession, session_id)
    return row is not None and row.index_id == index_id and row.source == "api"


def live_document_exists(db: Session, _project_id: str, index_id: str | None, doc_id: str) -> bool:
    row = db.get(Document, (index_id, doc_id))
    return row is not None and not row.deleted
