"""Migration 0006: stored feed URLs are encrypted, only their redacted form stays in clear (and back)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from alembic import command
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from control_plane.index import feed_url
from control_plane.index.models import Index
from control_plane.migrate import alembic_config
from control_plane.org.models import Organization
from control_plane.project.models import Project
from tests.index.helpers import insert_index_row
from tests.index.test_analyzer_migration import database_url  # noqa: F401  (the fixture: SQLite and PostgreSQL)

FULL = "https://feed-user:s3cret-pass@shop.example/feed.json?token=tok-abc123"
SECRET = "migration-test-secret"


def _feed(engine, index_id: str):  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        return connection.execute(select(Index.__table__.c.feed).where(Index.__table__.c.id == index_id)).scalar_one()


def test_stored_feed_urls_are_encrypted(database_url: str) -> None:  # noqa: F811
    config = alembic_config(database_url)
    config.attributes["settings"] = SimpleNamespace(signing_key=lambda: SECRET)
    command.upgrade(config, "0005")
    engine = create_engine(database_url)
    with Session(engine) as db, db.begin():
        db.add(Organization(id="org_f", name="F"))
        db.flush()
        db.add(Project(id="prj_f", org_id="org_f", name="P"))
        db.flush()
        for index_id, feed in (("idx_f", {"url": FULL, "format": "json", "schedule": "daily", "fieldMap": {}}),
                               ("idx_n", None)):
            insert_index_row(db, id=index_id, project_id="prj_f", name=index_id, shards=1, replicas=1,
                             language="en", mapping={"idField": "id", "fields": {}},
                             serving_mapping={"idField": "id", "fields": {}}, facets=[], feed=feed,
                             serving_generation=1, status="ready", seq=0, flush_seq=0, document_count=0)
    command.upgrade(config, "0006")
    stored = _feed(engine, "idx_f")
    assert not any(secret in json.dumps(stored) for secret in ("s3cret-pass", "tok-abc123", "feed-user"))
    assert stored["url"] == "https://***:***@shop.example/feed.json?token=***"
    assert feed_url.unseal(stored["sealedUrl"], SECRET) == FULL
    assert stored["schedule"] == "daily" and _feed(engine, "idx_n") is None
    command.downgrade(config, "0005")
    assert _feed(engine, "idx_f") == {"url": FULL, "format": "json", "schedule": "daily", "fieldMap": {}}
    engine.dispose()
