"""The document rows' bulk statements on both backends.

* ``rows_among``: rows by a list of keys, one primary-key probe per key, whatever the planner
  believes of the table. PostgreSQL planned ``index_id = ? AND doc_id IN (...)`` from the
  statistics of a table that was filling (an index being loaded: ~100 rows expected for its
  ``index_id``) and read every row of the index for each upload of 500 products.
* ``upsert_documents``: on PostgreSQL a ``COPY`` into a temporary table and one statement moving
  the rows in; the same rows as SQLite's upsert per row (the last of a key wins, tombstones, two
  calls in a transaction, a rolled-back call leaves nothing behind).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, select, text
from sqlalchemy.orm import Session

import control_plane.models  # noqa: F401 - every table on Base.metadata
from control_plane.db import Base, make_engine, utcnow
from control_plane.document import repository
from control_plane.document.models import Document
from tests.conftest import _ensure_services
from tests.fixtures.server import scratch_pg_database

INDEX = "idx_rows_among"


@contextlib.contextmanager
def _postgres() -> Iterator[Engine]:
    """The document tables alone (no index row: the foreign key is left out), statistics taken while
    they were empty, as for an index created and being loaded."""
    _ensure_services()
    with scratch_pg_database("shopsearch_rows_among") as name:
        made = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}")
        Base.metadata.create_all(made)
        with made.begin() as db:
            for (constraint,) in db.execute(text("SELECT conname FROM pg_constraint "
                                                 "WHERE conrelid = 'documents'::regclass AND contype = 'f'")):
                db.execute(text(f'ALTER TABLE documents DROP CONSTRAINT "{constraint}"'))
            db.execute(text("ANALYZE documents"))  # empty: the planner now expects few rows per index
        try:
            yield made
        finally:
            made.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "postgres":
        with _postgres() as made:
            yield made
        return
    made = create_engine(f"sqlite:///{tmp_path / 'docs.db'}")  # foreign keys off (the default)
    Base.metadata.create_all(made)
    yield made
    made.dispose()


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    with _postgres() as made:
        yield made


def _load(engine: Engine, count: int) -> None:
    now = utcnow()
    rows = [{"index_id": INDEX, "doc_id": f"d{i:06d}", "body": {"id": i}, "seq": i + 1, "shard_hash": i % 7,
             "deleted": i % 10 == 0, "updated_at": now} for i in range(count)]
    with Session(engine) as db, db.begin():
        repository.upsert_documents(db, rows)


def test_rows_among_finds_exactly_the_live_keys(engine: Engine) -> None:
    _load(engine, 3_000)
    wanted = [f"d{i:06d}" for i in range(0, 3_000, 2)] + [f"x{i}" for i in range(600)]  # > 500: several IN lists
    with Session(engine) as db:
        live = repository.live_ids_among(db, INDEX, wanted)
        assert sorted(live) == sorted(f"d{i:06d}" for i in range(0, 3_000, 2) if i % 10)
        assert repository.live_ids_among(db, INDEX, []) == []
        assert repository.live_ids_among(db, INDEX, ["d000001", "d000001", "x1"]) == ["d000001"]  # once
        assert repository.live_ids_among(db, "another_index", wanted[:10]) == []


def test_postgres_probes_the_primary_key_for_each_key_of_a_filling_index(pg_engine: Engine) -> None:
    engine = pg_engine
    _load(engine, 20_000)
    statements: list[tuple[str, Any]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        statements.append((statement, parameters))

    keys = [f"d{i:06d}" for i in range(0, 1_000)] + [f"new{i}" for i in range(500)]
    with Session(engine) as db:
        assert len(repository.live_ids_among(db, INDEX, keys)) == 900
    event.remove(engine, "before_cursor_execute", capture)
    (statement, parameters), = statements
    with engine.connect() as connection:
        cursor = connection.connection.cursor()
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
        plan = cursor.fetchone()[0]
    nodes = list(_nodes(plan[0]["Plan"]))
    scans = [n for n in nodes if n.get("Relation Name") == "documents"]
    assert scans and all(n["Node Type"] == "Index Scan" and n["Index Name"] == "documents_pkey" for n in scans), \
        json.dumps(plan)
    read = sum(n.get("Actual Rows", 0) * n.get("Actual Loops", 1) + n.get("Rows Removed by Filter", 0) for n in scans)
    assert read <= len(keys), f"{read} rows read for {len(keys)} keys: {json.dumps(plan)}"


def _row(doc_id: str, seq: int, body: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {"index_id": INDEX, "doc_id": doc_id, "body": body, "seq": seq, "shard_hash": seq % 7,
            "deleted": body is None, "updated_at": utcnow(), **extra}


def _stored(engine: Engine) -> dict[str, tuple[Any, ...]]:
    with Session(engine) as db:
        rows = db.execute(select(Document.doc_id, Document.body, Document.seq, Document.deleted, Document.updated_at)
                          .where(Document.index_id == INDEX))
        return {row[0]: tuple(row[1:]) for row in rows}


def test_upsert_keeps_the_last_row_of_a_key_and_leaves_nothing_behind_a_rollback(engine: Engine) -> None:
    naive = datetime(2026, 1, 2, 3, 4, 5)
    with Session(engine) as db, db.begin():
        repository.upsert_documents(db, [_row("a", 1, {"v": 1}), _row("b", 2, {"v": "é"}),
                                         _row("a", 3, {"v": 3, "nested": [1, None]}, updated_at=naive)])
        repository.upsert_documents(db, [_row("b", 4, None)])  # a tombstone, in the same transaction
    stored = _stored(engine)
    assert stored["a"][:3] == ({"v": 3, "nested": [1, None]}, 3, False)
    assert stored["a"][3].replace(tzinfo=UTC) == naive.replace(tzinfo=UTC)
    assert stored["b"][:3] == (None, 4, True)

    with Session(engine) as db:
        db.begin()
        repository.upsert_documents(db, [_row("c", 5, {"v": 5})])
        db.rollback()
        with db.begin():  # on PostgreSQL the rollback took the temporary table along: made again
            repository.upsert_documents(db, [_row("d", 6, {"v": 6}), _row("a", 7, {"v": 7})])
    stored = _stored(engine)
    assert sorted(stored) == ["a", "b", "d"]
    assert stored["a"][:3] == ({"v": 7}, 7, False) and stored["d"][:3] == ({"v": 6}, 6, False)


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
