"""The analytics store: counts aggregated in memory, added to the database with upserts.

Every process adds what it counted (``INSERT .. ON CONFLICT DO UPDATE SET n = n + excluded.n`` on
SQLite and PostgreSQL alike), so several API processes, and clicks arriving through any of them,
sum up without reading first. Rows are written in key order so concurrent flushes take row locks
in the same order (no deadlock on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Table, case, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from control_plane.analytics.models import DocumentDay, IndexDay, QueryDay
from control_plane.analytics.query_ids import QueryRef, normalize_query, query_hash
from control_plane.index.models import Index

MAX_QUERY_CHARS = 200
_QUERY_COUNTERS = ("searches", "no_results", "hits", "clicks", "conversions", "positioned_clicks", "position_sum")


def today() -> date:
    return datetime.now(UTC).date()


def _day_of(at: Any) -> date:
    if isinstance(at, str) and len(at) >= 10:
        try:
            return date.fromisoformat(at[:10])
        except ValueError:
            pass
    return today()


@dataclass
class Aggregate:
    """Counts of a batch of events, keyed like the rows they are added to."""

    # (index, day, query hash) -> [query text, searches, no_results, hits, clicks, conversions,
    #                              positioned_clicks, position_sum]
    queries: dict[tuple[str, date, str], list[Any]] = field(default_factory=dict)
    suggests: dict[tuple[str, date], int] = field(default_factory=dict)
    documents: dict[tuple[str, date, str], list[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.queries) + len(self.suggests) + len(self.documents)

    def _query_row(self, index_id: str, day: date, qhash: str, text: str) -> list[Any]:
        row = self.queries.get((index_id, day, qhash))
        if row is None:
            row = self.queries[(index_id, day, qhash)] = [text, 0, 0, 0, 0, 0, 0, 0]
        return row

    def add_search(self, index_id: str, day: date, q: str, total: int) -> None:
        normalized = normalize_query(q)
        row = self._query_row(index_id, day, query_hash(normalized), normalized[:MAX_QUERY_CHARS])
        row[1] += 1
        row[2] += total == 0
        row[3] += max(0, int(total))

    def add_suggest(self, index_id: str, day: date, count: int = 1) -> None:
        key = (index_id, day)
        self.suggests[key] = self.suggests.get(key, 0) + count

    def add_event(self, ref: QueryRef, kind: str, document_id: str, position: int | None) -> None:
        """A click or conversion on the search ``ref`` names (its query text is already stored:
        the row is created by the search; an empty text only if the click is flushed first)."""
        row = self._query_row(ref.index_id, ref.day, ref.query_hash, "")
        doc = self.documents.get((ref.index_id, ref.day, document_id))
        if doc is None:
            doc = self.documents[(ref.index_id, ref.day, document_id)] = [0, 0]
        if kind == "click":
            row[4] += 1
            doc[0] += 1
            if position is not None:
                row[6] += 1
                row[7] += position
        else:
            row[5] += 1
            doc[1] += 1

    def add_search_events(self, batch: Iterable[Mapping[str, Any]]) -> None:
        """Events of ``control_plane.search.events``: ``search`` and ``suggest`` are counted."""
        for event in batch:
            kind = event.get("type")
            index_id = event.get("indexId")
            if not isinstance(index_id, str):
                continue
            if kind == "search":
                self.add_search(index_id, _day_of(event.get("at")), str(event.get("q") or ""),
                                int(event.get("total") or 0))
            elif kind == "suggest":
                self.add_suggest(index_id, _day_of(event.get("at")))

    def merge(self, other: Aggregate) -> None:
        for key, row in other.queries.items():
            mine = self._query_row(*key, row[0])
            if not mine[0]:
                mine[0] = row[0]
            for i in range(1, len(row)):
                mine[i] += row[i]
        for skey, count in other.suggests.items():
            self.suggests[skey] = self.suggests.get(skey, 0) + count
        for dkey, counts in other.documents.items():
            doc = self.documents.setdefault(dkey, [0, 0])
            doc[0] += counts[0]
            doc[1] += counts[1]


def _upsert(db: Session, table: Table, keys: tuple[str, ...], counters: tuple[str, ...],
            rows: list[dict[str, Any]], keep_text: str | None = None) -> None:
    if not rows:
        return
    dialect = db.get_bind().dialect.name
    insert = pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)
    values: dict[str, Any] = {name: table.c[name] + insert.excluded[name] for name in counters}
    if keep_text is not None:
        # a click flushed before its search created the row with an empty text: the search fills it
        values[keep_text] = case((table.c[keep_text] == "", insert.excluded[keep_text]), else_=table.c[keep_text])
    statement = insert.on_conflict_do_update(index_elements=list(keys), set_=values)
    db.execute(statement, rows)


def existing_indices(db: Session, index_ids: Iterable[str]) -> set[str]:
    ids = sorted(set(index_ids))
    if not ids:
        return set()
    return set(db.scalars(select(Index.id).where(Index.id.in_(ids))))


def write(db: Session, aggregate: Aggregate) -> None:
    """Add the aggregate's counts to the database (in the caller's transaction)."""
    table = QueryDay.__table__
    rows = [
        {"index_id": k[0], "day": k[1], "query_hash": k[2], "query": v[0],
         **dict(zip(_QUERY_COUNTERS, v[1:], strict=True))}
        for k, v in sorted(aggregate.queries.items())
    ]
    _upsert(db, table, ("index_id", "day", "query_hash"), _QUERY_COUNTERS, rows, keep_text="query")  # type: ignore[arg-type]
    _upsert(db, IndexDay.__table__, ("index_id", "day"), ("suggests",),  # type: ignore[arg-type]
            [{"index_id": k[0], "day": k[1], "suggests": v} for k, v in sorted(aggregate.suggests.items())])
    _upsert(db, DocumentDay.__table__, ("index_id", "day", "document_id"), ("clicks", "conversions"),  # type: ignore[arg-type]
            [{"index_id": k[0], "day": k[1], "document_id": k[2], "clicks": v[0], "conversions": v[1]}
             for k, v in sorted(aggregate.documents.items())])


def purge(db: Session, before: date) -> int:
    """Delete rows of days before ``before`` and of indices that no longer exist; rows deleted."""
    removed = 0
    for model in (QueryDay, IndexDay, DocumentDay):
        result = db.execute(delete(model).where(model.day < before))
        removed += result.rowcount or 0  # type: ignore[attr-defined]
        result = db.execute(delete(model).where(~model.index_id.in_(select(Index.id))))
        removed += result.rowcount or 0  # type: ignore[attr-defined]
    return removed
