"""Analytics rows: counts added with upserts, the events counted once, what the report and popular
queries read, and the retention purge. Every statement of the analytics and events domains is here.

Every process adds what it counted (``INSERT .. ON CONFLICT DO UPDATE SET n = n + excluded.n`` on
SQLite and PostgreSQL alike), so several API processes, and clicks arriving through any of them,
sum up without reading first. Rows are written in key order so concurrent flushes take row locks
in the same order (no deadlock on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from sqlalchemy import Table, case, delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from control_plane.analytics.models import DocumentDay, EventKey, IndexDay, QueryDay
from control_plane.analytics.store import QUERY_COUNTERS, Aggregate
from control_plane.db import rows_among


def _insert(db: Session, table: Table) -> Any:
    return pg_insert(table) if db.get_bind().dialect.name == "postgresql" else sqlite_insert(table)


def _upsert(db: Session, table: Table, keys: tuple[str, ...], counters: tuple[str, ...],
            rows: list[dict[str, Any]], keep_text: str | None = None, bit_sets: tuple[str, ...] = ()) -> None:
    if not rows:
        return
    insert = _insert(db, table)
    values: dict[str, Any] = {name: table.c[name] + insert.excluded[name] for name in counters}
    for name in bit_sets:
        values[name] = table.c[name].op("|")(insert.excluded[name])
    if keep_text is not None:
        # a click flushed before its search created the row with an empty text: the search fills it
        values[keep_text] = case((table.c[keep_text] == "", insert.excluded[keep_text]), else_=table.c[keep_text])
    statement = insert.on_conflict_do_update(index_elements=list(keys), set_=values)
    db.execute(statement, rows)


def write(db: Session, aggregate: Aggregate) -> None:
    """Add the aggregate's counts to the database (in the caller's transaction)."""
    rows = [
        {"index_id": k[0], "day": k[1], "query_hash": k[2], "query": v[0],
         **dict(zip(QUERY_COUNTERS, v[1:8], strict=True)), "clients": v[8]}
        for k, v in sorted(aggregate.queries.items())
    ]
    _upsert(db, QueryDay.__table__, ("index_id", "day", "query_hash"), QUERY_COUNTERS, rows,  # type: ignore[arg-type]
            keep_text="query", bit_sets=("clients",))
    _upsert(db, IndexDay.__table__, ("index_id", "day"), ("suggests",),  # type: ignore[arg-type]
            [{"index_id": k[0], "day": k[1], "suggests": v} for k, v in sorted(aggregate.suggests.items())])
    _upsert(db, DocumentDay.__table__, ("index_id", "day", "document_id"), ("clicks", "conversions"),  # type: ignore[arg-type]
            [{"index_id": k[0], "day": k[1], "document_id": k[2], "clicks": v[0], "conversions": v[1]}
             for k, v in sorted(aggregate.documents.items())])


# --------------------------------------------------------------------------- events counted once
def events_received(db: Session, index_id: str, day: date) -> int:
    """Events of an index counted on ``day`` (the daily cap's count)."""
    return int(db.scalar(select(func.count()).select_from(EventKey)
                         .where(EventKey.index_id == index_id, EventKey.received == day)) or 0)


def counted_keys(db: Session, index_id: str, keys: list[str]) -> set[str]:
    """Those of ``keys`` already counted for the index."""
    query = select(EventKey.key).where(EventKey.index_id == index_id)
    return {key for key, in rows_among(db, query, EventKey.key, keys)}


def claim_keys(db: Session, index_id: str, keys: dict[str, date], received: date) -> set[str]:
    """Insert the keys (key → its search's day) not there yet; the ones this call inserted. Another
    transaction inserting one of them at once makes this one wait (PostgreSQL) or is serialized
    (SQLite); only one of them gets it back."""
    if not keys:
        return set()
    insert = _insert(db, EventKey.__table__)  # type: ignore[arg-type]
    statement = insert.on_conflict_do_nothing(index_elements=["index_id", "key"]).returning(EventKey.key)
    rows = [{"index_id": index_id, "key": key, "day": day, "received": received} for key, day in sorted(keys.items())]
    # one compiled statement, its rows sent in batches ("insertmanyvalues"): a 500-row VALUES clause
    # compiled per request took most of an events batch's time
    return set(db.execute(statement, rows).scalars())


# --------------------------------------------------------------------------- reading
def popular_rows(db: Session, index_id: str, since: date, min_searches: int, limit: int) -> list[tuple[Any, ...]]:
    """(query, searches, searches with results, clicks, query hash) of queries searched at least
    ``min_searches`` times since ``since``, most popular first."""
    searches = func.sum(QueryDay.searches)
    with_results = func.sum(QueryDay.searches - QueryDay.no_results)
    clicks = func.sum(QueryDay.clicks)
    return [tuple(row) for row in db.execute(
        select(func.max(QueryDay.query), searches, with_results, clicks, QueryDay.query_hash)
        .where(QueryDay.index_id == index_id, QueryDay.day >= since)
        .group_by(QueryDay.query_hash)
        .having(searches >= max(1, min_searches), func.max(QueryDay.query) != "")
        .order_by((with_results + clicks).desc(), searches.desc(), func.max(QueryDay.query))
        .limit(limit)
    ).all()]


def client_sets(db: Session, index_id: str, since: date, hashes: list[str]) -> dict[str, int]:
    """Query hash → the OR of its days' client sets since ``since`` (SQLite has no ``bit_or``)."""
    out: dict[str, int] = {}
    for start in range(0, len(hashes), 500):
        rows = db.execute(select(QueryDay.query_hash, QueryDay.clients).where(
            QueryDay.index_id == index_id, QueryDay.day >= since, QueryDay.query_hash.in_(hashes[start:start + 500])))
        for qhash, clients in rows:
            out[qhash] = out.get(qhash, 0) | int(clients or 0)
    return out


def totals(db: Session, index_id: str, start: date, end: date) -> tuple[int, ...]:
    """searches, no-result searches, clicks, conversions, positioned clicks, position sum, suggests."""
    in_range = (QueryDay.index_id == index_id, QueryDay.day >= start, QueryDay.day <= end)
    row = db.execute(
        select(func.coalesce(func.sum(QueryDay.searches), 0), func.coalesce(func.sum(QueryDay.no_results), 0),
               func.coalesce(func.sum(QueryDay.clicks), 0), func.coalesce(func.sum(QueryDay.conversions), 0),
               func.coalesce(func.sum(QueryDay.positioned_clicks), 0), func.coalesce(func.sum(QueryDay.position_sum), 0))
        .where(*in_range)
    ).one()
    suggests = db.scalar(
        select(func.coalesce(func.sum(IndexDay.suggests), 0))
        .where(IndexDay.index_id == index_id, IndexDay.day >= start, IndexDay.day <= end)) or 0
    return (*(int(v) for v in row), int(suggests))


def top_queries(db: Session, index_id: str, start: date, end: date, limit: int) -> list[tuple[Any, ...]]:
    """(query, searches, hits, clicks), most searched first."""
    q_searches = func.sum(QueryDay.searches)
    return [tuple(row) for row in db.execute(
        select(func.max(QueryDay.query), q_searches, func.sum(QueryDay.hits), func.sum(QueryDay.clicks))
        .where(QueryDay.index_id == index_id, QueryDay.day >= start, QueryDay.day <= end)
        .group_by(QueryDay.query_hash).having(q_searches > 0)
        .order_by(q_searches.desc(), func.max(QueryDay.query)).limit(limit)
    ).all()]


def no_result_queries(db: Session, index_id: str, start: date, end: date, limit: int) -> list[tuple[Any, ...]]:
    """(query, no-result searches), most first."""
    q_none = func.sum(QueryDay.no_results)
    return [tuple(row) for row in db.execute(
        select(func.max(QueryDay.query), q_none)
        .where(QueryDay.index_id == index_id, QueryDay.day >= start, QueryDay.day <= end)
        .group_by(QueryDay.query_hash).having(q_none > 0)
        .order_by(q_none.desc(), func.max(QueryDay.query)).limit(limit)
    ).all()]


def top_clicked(db: Session, index_id: str, start: date, end: date, limit: int) -> list[tuple[Any, ...]]:
    """(document id, clicks, conversions), most clicked first."""
    d_clicks, d_conversions = func.sum(DocumentDay.clicks), func.sum(DocumentDay.conversions)
    return [tuple(row) for row in db.execute(
        select(DocumentDay.document_id, d_clicks, d_conversions)
        .where(DocumentDay.index_id == index_id, DocumentDay.day >= start, DocumentDay.day <= end)
        .group_by(DocumentDay.document_id)
        .order_by(d_clicks.desc(), d_conversions.desc(), DocumentDay.document_id).limit(limit)
    ).all()]


def daily(db: Session, index_id: str, start: date, end: date) -> dict[date, tuple[int, int]]:
    """Day → (searches, no-result searches), days with searches only."""
    return {
        row[0]: (int(row[1]), int(row[2]))
        for row in db.execute(
            select(QueryDay.day, func.sum(QueryDay.searches), func.sum(QueryDay.no_results))
            .where(QueryDay.index_id == index_id, QueryDay.day >= start, QueryDay.day <= end)
            .group_by(QueryDay.day)
        )
    }


# --------------------------------------------------------------------------- retention
_TABLES = (QueryDay, IndexDay, DocumentDay, EventKey)


def index_ids(db: Session) -> set[str]:
    """Every index that has analytics rows."""
    found: set[str] = set()
    for model in _TABLES:
        found.update(db.scalars(select(model.index_id).distinct()))
    return found


def purge(db: Session, before: date, gone: Iterable[str] = ()) -> int:
    """Delete rows of days before ``before`` and of the indices ``gone``; rows deleted."""
    removed = 0
    gone_ids = sorted(set(gone))
    for model in _TABLES:
        result = db.execute(delete(model).where(model.day < before))
        removed += result.rowcount or 0  # type: ignore[attr-defined]
        if gone_ids:
            result = db.execute(delete(model).where(model.index_id.in_(gone_ids)))
            removed += result.rowcount or 0  # type: ignore[attr-defined]
    return removed
