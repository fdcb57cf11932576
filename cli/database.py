"""The operator commands' database: migrated first, so they work on a fresh data directory too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import make_engine, make_sessionmaker
from control_plane.migrate import upgrade
from shared.settings import get_settings


def _migrated_engine() -> Engine:
    settings = get_settings()
    upgrade(settings)  # as ``serve`` does; a no-op when the schema is current
    return make_engine(settings.resolved_database_url)


def operator_sessions() -> sessionmaker[Session]:
    """Sessions on the configured database, after applying any missing migration."""
    return make_sessionmaker(_migrated_engine())


@contextmanager
def transaction() -> Iterator[Session]:
    """One transaction, committed when the block ends: before the command prints its answer."""
    engine = _migrated_engine()
    try:
        with make_sessionmaker(engine).begin() as db:
            yield db
    finally:
        engine.dispose()
