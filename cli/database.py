"""The operator commands' database: migrated first, so they work on a fresh data directory too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session, sessionmaker

from control_plane.db import make_engine, make_sessionmaker
from control_plane.migrate import upgrade
from shared.settings import get_settings


@contextmanager
def operator_sessions() -> Iterator[sessionmaker[Session]]:
    """Sessions on the configured database (migrated first, as ``serve`` does); the engine ends with the block."""
    settings = get_settings()
    upgrade(settings)  # a no-op when the schema is current
    engine = make_engine(settings.resolved_database_url)
    try:
        yield make_sessionmaker(engine)
    finally:
        engine.dispose()


@contextmanager
def transaction() -> Iterator[Session]:
    """One transaction, committed when the block ends: before the command prints its answer."""
    with operator_sessions() as sessions, sessions.begin() as db:
        yield db
