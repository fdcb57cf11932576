"""The operator commands' database: the one the service uses, migrated first.

On the embedded default the database is a file in the data directory (``./.shopsearch`` unless
``SHOPSEARCH_DATA_DIR`` or ``--data-dir`` says otherwise). An operator command run from another
folder must not make a new empty database there and answer from it: without the file it fails,
saying where it looked. Only commands that set a service up (``db upgrade``, ``demo``, ``tenants
create``) create one, and say so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from cli.output import fail, notice
from control_plane.db import make_engine, make_sessionmaker
from control_plane.migrate import upgrade
from shared.settings import Settings, get_settings


def _embedded_file(settings: Settings) -> Path | None:
    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database)


def require_database(settings: Settings) -> None:
    """Exit 1 naming the path when the embedded database file does not exist."""
    path = _embedded_file(settings)
    if path is not None and not path.exists():
        fail(f"no shopsearch database at {path.resolve()}: run this where `shopsearch serve` keeps its data, "
             "or pass --data-dir DIR (or set SHOPSEARCH_DATA_DIR / SHOPSEARCH_DATABASE_URL)")


@contextmanager
def operator_sessions(create: bool = False) -> Iterator[sessionmaker[Session]]:
    """Sessions on the configured database (migrated first, as ``serve`` does); the engine ends with
    the block. ``create``: a missing embedded database is made (commands that set a service up)."""
    settings = get_settings()
    path = _embedded_file(settings)
    if not create:
        require_database(settings)
    elif path is not None and not path.exists():
        notice(f"a new shopsearch database at {path.resolve()}")
    upgrade(settings)  # a no-op when the schema is current
    engine = make_engine(settings.resolved_database_url)
    try:
        yield make_sessionmaker(engine)
    finally:
        engine.dispose()


@contextmanager
def transaction(create: bool = False) -> Iterator[Session]:
    """One transaction, committed when the block ends: before the command prints its answer."""
    with operator_sessions(create) as sessions, sessions.begin() as db:
        yield db
