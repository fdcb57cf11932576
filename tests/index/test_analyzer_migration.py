"""Migration 0004: stored mappings lose the analyzer settings that never had an effect (and that
the engine now refuses), keep the ones it applies, and still open in the engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from control_plane.document.models import ReplaceSession
from control_plane.index.models import Index
from control_plane.migrate import alembic_config
from control_plane.org.models import Organization
from control_plane.project.models import Project
from control_plane.task.models import Task
from search_workers.engine import ShardEngine
from tests.conftest import _ensure_services
from tests.fixtures.server import scratch_pg_database
from tests.index.helpers import insert_index_row

LEGACY = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True, "analyzer": "standard"},
        "name": {"type": "text", "searchable": True, "analyzer": "plain"},
        "titel": {"type": "text", "searchable": True, "analyzer": "de"},
        "note": {"type": "text", "analyzer": "en"},
        "price": {"type": "float", "sortable": True, "analyzer": "keyword"},
    },
}
CLEAN = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "name": {"type": "text", "searchable": True, "analyzer": "plain"},
        "titel": {"type": "text", "searchable": True, "analyzer": "de"},
        "note": {"type": "text"},
        "price": {"type": "float", "sortable": True},
    },
}


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrate.db'}"
        return
    _ensure_services()
    with scratch_pg_database("shopsearch_migrate") as name:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def test_inert_analyzers_are_dropped_and_applied_ones_kept(database_url: str) -> None:
    config = alembic_config(database_url)
    command.upgrade(config, "0003")
    engine = create_engine(database_url)
    with Session(engine) as db, db.begin():
        db.add(Organization(id="org_m", name="M"))
        db.flush()
        db.add(Project(id="prj_m", org_id="org_m", name="P"))
        db.flush()
        insert_index_row(db, id="idx_m", project_id="prj_m", name="i", shards=1, replicas=1, language="en",
                         mapping=LEGACY, serving_mapping=LEGACY, facets=[], serving_generation=1, status="ready",
                         seq=0, flush_seq=0, document_count=0)
        db.add(ReplaceSession(id="rps_m", index_id="idx_m", project_id="prj_m", status="open", mapping=LEGACY))
        for pk, status in ((1, "enqueued"), (2, "succeeded")):
            db.add(Task(pk=pk, id=f"tsk_m{pk}", project_id="prj_m", index_id="idx_m", type="mapping.update",
                        status=status, payload={"mapping": LEGACY}, details={}))
    command.upgrade(config, "head")
    with Session(engine) as db:
        index = db.get(Index, "idx_m")
        assert index is not None and index.mapping == CLEAN and index.serving_mapping == CLEAN
        session = db.get(ReplaceSession, "rps_m")
        assert session is not None and session.mapping == CLEAN
        pending, done = db.get(Task, 1), db.get(Task, 2)
        assert pending is not None and pending.payload == {"mapping": CLEAN}
        assert done is not None and done.payload == {"mapping": LEGACY}  # history is left as it was
    engine.dispose()
    ShardEngine.validate_mapping(CLEAN, "en")
