"""Shared state for several serving processes on one machine without Redis: a small SQLite file.

``shopsearch serve --workers N`` on the embedded default runs N processes that must agree on what
one process alone keeps in memory: index epochs, revocations and rate-limit counters; and they pass
each other computed search answers (:mod:`control_plane.search.cache`). They share
``DATA_DIR/state.db`` (WAL, no fsync: the values are caches and counters, rebuilt or harmlessly
reset after a power loss). Kept apart from the main database so a point read or a counter update
never waits behind a bulk document insert holding that database's write lock.

:class:`StateFile` hands each thread its own connection (SQLite connections are not shared across
threads); a point read costs a few microseconds.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL)",
    "CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL, expires REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (key TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entries_key_at ON entries (key, at)",
    "CREATE TABLE IF NOT EXISTS answers (key BLOB PRIMARY KEY, total INTEGER NOT NULL, body BLOB NOT NULL, "
    "expires REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS answers_expires ON answers (expires)",
)


class StateFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
        self._local = threading.local()
        with self.connection() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection; use it as a context manager for one transaction."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.isolation_level = "IMMEDIATE"  # a transaction takes the write lock at once: no upgrade deadlocks
            self._local.db = db
        return db


_FILES: dict[Path, StateFile] = {}
_FILES_LOCK = threading.Lock()


def state_file(data_dir: Path) -> StateFile:
    """The process's :class:`StateFile` for ``data_dir`` (one per file, shared by its users)."""
    path = (data_dir / "state.db").resolve()
    with _FILES_LOCK:
        found = _FILES.get(path)
        if found is None:
            found = _FILES[path] = StateFile(path)
        return found
