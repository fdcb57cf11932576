"""Database engine, the declarative base, sessions, and work that must follow a commit."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVarTuple

from sqlalchemy import (
    DateTime,
    Engine,
    Row,
    Select,
    String,
    bindparam,
    create_engine,
    event,
    func,
    make_url,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import DeclarativeBase, InstrumentedAttribute, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

log = logging.getLogger("shopsearch.db")
_AFTER_COMMIT = "shopsearch.after_commit"
_Ts = TypeVarTuple("_Ts")
_IN_LIST = 500  # keys per IN list on SQLite (its bound-parameter limit is far above)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both SQLite (which drops tzinfo) and PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):  # type: ignore[override]
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect):  # type: ignore[override]
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime()}


def utcnow() -> datetime:
    return datetime.now(UTC)


def isoformat(value: datetime | None) -> str | None:
    """ISO 8601 UTC with ``Z`` (CONTRACT §0)."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def private_dir(path: Path) -> None:
    """Create ``path`` (the data directory) readable by this user only, or tighten it to 0700."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if path.stat().st_uid == os.getuid():
            path.chmod(0o700)
    except OSError:
        log.warning("could not restrict %s to its owner", path, exc_info=True)


def private_sqlite_file(url: str) -> None:
    """Create a SQLite database file with mode 0600 before anything opens it, and tighten existing
    ones. SQLite creates the ``-wal``, ``-shm`` and ``-journal`` files with the database file's
    mode, so they follow; they are tightened here too when they already exist."""
    database = make_url(url).database if url.startswith("sqlite") else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if not path.parent.is_dir():
        return  # connecting fails as it would have (the data directory is made by its owners)
    # only a file that is not there yet is opened: closing any descriptor of a file releases every
    # POSIX lock the process holds on it, the open connections' included, and then another
    # process's closing connection deletes the WAL under them (sqlite.org/howtocorrupt.html §2.2)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    for name in (path, *(Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal"))):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(name, 0o600)


def use_wal(connection: sqlite3.Connection, timeout: float = 30.0) -> None:
    """Put the connection's SQLite file in WAL mode (a property of the file: set once, and not a
    lock taken on every connect when it is set already).

    Switching needs the file to itself, and SQLite answers "database is locked" at once, without its
    busy handler, when another process is opening or switching the same file: several serving
    processes starting together on a new data directory. So the switch is retried until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")  # an in-memory database stays "memory"
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
        time.sleep(0.02)


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        private_sqlite_file(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
            use_wal(dbapi_connection)

        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def ping(engine: Engine) -> None:
    """One round trip to the database (raises when it does not answer)."""
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def read_snapshot(session: Session) -> None:
    """End the session's (read-only) transaction and begin one whose reads all see the same moment,
    for a reply built from several statements (PostgreSQL's READ COMMITTED, and SQLite's statements
    outside a transaction, each see the latest commit)."""
    session.commit()
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))
    else:
        session.execute(text("BEGIN"))  # deferred: the snapshot is taken by the first read (WAL)


def rows_among(db: Session, query: Select[*_Ts], key: InstrumentedAttribute[str],
               keys: Sequence[str]) -> list[Row[*_Ts]]:
    """The rows of ``query`` whose ``key`` is one of ``keys``: one primary-key probe per key,
    whatever the planner believes of the table.

    On PostgreSQL ``key IN (...)`` (or ``= ANY``) leaves the plan to the table's statistics, which
    lag a table that is filling: for an index being loaded, the planner expected ~100 rows for its
    ``index_id`` and read all of them (Bitmap Heap Scan, every row filtered by the list) instead of
    probing the primary key: ~370 us per uploaded product at 30k products, growing with the index,
    against ~3 us as a probe. The keys therefore go in as one array, unnested, each joined LATERAL
    to ``query``, which ``OFFSET 0`` keeps a subquery run once per key (pulled up into a plain
    join, it became a hash join over the same scan of every row): a nested loop of primary-key
    probes. SQLite, which keeps no statistics, probes the primary key for an ``IN`` list of 500."""
    keys = list(dict.fromkeys(keys))  # a row once per key on both backends (an unnested duplicate would repeat it)
    if not keys:
        return []
    if db.get_bind().dialect.name != "postgresql":
        rows: list[Row[*_Ts]] = []
        for start in range(0, len(keys), _IN_LIST):
            rows.extend(db.execute(query.where(key.in_(keys[start:start + _IN_LIST]))).all())
        return rows
    array = bindparam("rows_among_keys", keys, type_=ARRAY(String))
    wanted = func.unnest(array).table_valued("key").render_derived(name="wanted")
    probe = query.where(key == wanted.c.key).offset(0).lateral()
    return list(db.execute(select(probe).select_from(wanted).join(probe, true())).all())


def after_commit(session: Session, fn: Callable[[], object]) -> None:
    """Run ``fn`` right after the session's transaction commits; drop it if the transaction rolls back.

    The one place for work that must follow a commit (waking task runners, moving index epochs,
    sending mail, opening shards): it then never acts on a write that did not happen. Hooks run in
    order; one that raises is logged and does not stop the others or fail the commit.
    """
    session.info.setdefault(_AFTER_COMMIT, []).append(fn)


def _run_after_commit(session: Session) -> None:
    for fn in session.info.pop(_AFTER_COMMIT, ()):
        try:
            fn()
        except Exception:  # noqa: BLE001 - the write is committed; a follow-up must not undo the answer
            log.exception("work after a commit failed")


def _drop_after_commit(session: Session) -> None:
    session.info.pop(_AFTER_COMMIT, None)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    factory = sessionmaker(bind=engine, expire_on_commit=False)
    event.listen(factory, "after_commit", _run_after_commit)
    event.listen(factory, "after_rollback", _drop_after_commit)
    return factory


def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """Yield a session; commit when the block succeeds (a failing commit raises), roll back when it raises."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
