"""``rows_among``: rows by a list of keys, one primary-key probe per key on both backends, whatever
the planner believes of the table. PostgreSQL planned ``index_id = ? AND doc_id IN (...)`` from the
statistics of a table that was filling (an index being loaded: ~100 rows expected for its
``index_id``) and read every row of the index for each upload of 500 products."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session

import control_plane.models  # noqa: F401 - every table on Base.metadata
from control_plane.db import Base, make_engine, utcnow
from control_plane.document import repository
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


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
