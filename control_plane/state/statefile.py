"""The shared state of several serving processes on one machine without Redis: a small SQLite file.

``shopsearch serve --workers N`` on the embedded default runs N processes that must agree on what
one process alone keeps in memory: index epochs, revocations and rate-limit counters; and they pass
each other computed search answers. They share ``DATA_DIR/state.db`` (WAL, no fsync: the values are
caches and counters, rebuilt or harmlessly reset after a power loss). Kept apart from the main
database so a point read or a counter update never waits behind a bulk document insert holding that
database's write lock.

:class:`StateFile` hands each thread its own connection (SQLite connections are not shared across
threads); a point read costs a few microseconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

from limits.storage import MovingWindowSupport, Storage

from control_plane.db import use_wal
from control_plane.state.base import SharedState

log = logging.getLogger("shopsearch.state")

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
            use_wal(db)
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


class FileState(SharedState):
    """:class:`SharedState` in a :class:`StateFile` (several processes, one machine). Expiry is
    wall-clock time; expired rows are ignored and swept now and then."""

    def __init__(self, file: StateFile) -> None:
        self.file = file
        self.answers = FileAnswers(file)
        self._writes = 0

    def _sweep(self) -> None:
        self._writes += 1
        if self._writes % 256 == 0:
            with self.file.connection() as db:
                db.execute("DELETE FROM kv WHERE expires < ?", (time.time(),))

    def get(self, key: str) -> bytes | None:
        row = self.file.connection().execute(
            "SELECT CAST(value AS BLOB) FROM kv WHERE key = ? AND (expires IS NULL OR expires >= ?)", (key, time.time())
        ).fetchone()
        return None if row is None else bytes(row[0])

    def set(self, key: str, value: bytes, ttl_seconds: float) -> None:
        with self.file.connection() as db:
            db.execute("INSERT OR REPLACE INTO kv (key, value, expires) VALUES (?, ?, ?)",
                       (key, value, time.time() + max(1, ttl_seconds)))
        self._sweep()

    def delete(self, key: str) -> None:
        with self.file.connection() as db:
            db.execute("DELETE FROM kv WHERE key = ?", (key,))

    def incr(self, key: str) -> int:
        with self.file.connection() as db:
            row = db.execute(
                "INSERT INTO kv (key, value, expires) VALUES (?, '1', NULL) ON CONFLICT (key) DO UPDATE SET "
                "value = CAST(CAST(value AS INTEGER) + 1 AS TEXT), expires = NULL RETURNING value", (key,)
            ).fetchone()
        return int(row[0])

    def set_first(self, key: str, value: bytes, ttl_seconds: float) -> bytes:
        now = time.time()
        with self.file.connection() as db:
            db.execute(
                "INSERT INTO kv (key, value, expires) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, expires = excluded.expires WHERE kv.expires < ?",
                (key, value, now + ttl_seconds, now),
            )
        return self.get(key) or value

    def limits_storage(self, namespace: str) -> Storage | None:
        return FileLimits(self.file, namespace)


class FileAnswers:
    """Computed answers in the :class:`StateFile`, for every serving process of the machine.

    A read is one primary-key lookup (~10-20 us), a write one small transaction (no fsync); both
    count as a miss on any SQLite error (a locked file must not fail a search). At most
    ``max_entries`` are kept: every ``SWEEP_EVERY`` writes, expired rows and the oldest beyond it go."""

    SWEEP_EVERY = 256

    def __init__(self, file: StateFile, max_entries: int = 20_000, ttl_seconds: float = 300.0) -> None:
        self.file = file
        self.max_entries = max_entries
        self.ttl = ttl_seconds
        self._writes = 0

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        try:
            row = self.file.connection().execute(
                "SELECT body, total FROM answers WHERE key = ? AND expires >= ?", (key, time.time())).fetchone()
        except sqlite3.Error as exc:
            log.debug("shared answer not read: %r", exc)
            return None
        return None if row is None else (bytes(row[0]), int(row[1]))

    def put(self, key: bytes, body: bytes, total: int) -> None:
        try:
            with self.file.connection() as db:
                db.execute("INSERT OR REPLACE INTO answers (key, total, body, expires) VALUES (?, ?, ?, ?)",
                           (key, total, body, time.time() + self.ttl))
            self._writes += 1
            if self._writes % self.SWEEP_EVERY == 0:
                self.sweep()
        except sqlite3.Error as exc:
            log.debug("shared answer not written: %r", exc)

    def sweep(self) -> None:
        with self.file.connection() as db:
            db.execute("DELETE FROM answers WHERE expires < ?", (time.time(),))
            db.execute("DELETE FROM answers WHERE key IN "
                       "(SELECT key FROM answers ORDER BY expires DESC LIMIT -1 OFFSET ?)", (self.max_entries,))


class FileLimits(Storage, MovingWindowSupport):
    """``limits`` storage in the :class:`StateFile`: counters of fixed windows and entries of moving
    windows, shared by the serving processes of one machine."""

    STORAGE_SCHEME = ["shopsearch-state-file"]

    def __init__(self, file: StateFile, prefix: str) -> None:
        super().__init__(wrap_exceptions=True)
        self.file = file
        self.prefix = prefix
        self._writes = 0

    @property
    def base_exceptions(self) -> type[Exception]:
        return sqlite3.Error

    def _sweep(self, now: float) -> None:
        """Now and then, drop expired counters (keys per client address would otherwise pile up)."""
        self._writes += 1
        if self._writes % 1024 == 0:
            with self.file.connection() as db:
                db.execute("DELETE FROM counters WHERE expires < ?", (now,))

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = time.time()
        self._sweep(now)
        with self.file.connection() as db:
            row = db.execute(
                "INSERT INTO counters (key, value, expires) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                "value = CASE WHEN expires < ? THEN excluded.value ELSE value + excluded.value END, "
                "expires = CASE WHEN expires < ? THEN excluded.expires ELSE expires END RETURNING value",
                (self.prefix + key, amount, now + expiry, now, now),
            ).fetchone()
        return int(row[0])

    def get(self, key: str) -> int:
        row = self.file.connection().execute(
            "SELECT value FROM counters WHERE key = ? AND expires >= ?", (self.prefix + key, time.time())
        ).fetchone()
        return 0 if row is None else int(row[0])

    def get_expiry(self, key: str) -> float:
        row = self.file.connection().execute(
            "SELECT expires FROM counters WHERE key = ?", (self.prefix + key,)).fetchone()
        return time.time() if row is None else float(row[0])

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self.file.connection() as db:
            db.execute("DELETE FROM counters WHERE key LIKE ?", (self.prefix + "%",))
            db.execute("DELETE FROM entries WHERE key LIKE ?", (self.prefix + "%",))
        return None

    def clear(self, key: str) -> None:
        with self.file.connection() as db:
            db.execute("DELETE FROM counters WHERE key = ?", (self.prefix + key,))
            db.execute("DELETE FROM entries WHERE key = ?", (self.prefix + key,))

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        key, now = self.prefix + key, time.time()
        db = self.file.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM entries WHERE key = ? AND at < ?", (key, now - expiry))
            (count,) = db.execute("SELECT count(*) FROM entries WHERE key = ?", (key,)).fetchone()
            allowed = count + amount <= limit
            if allowed:
                db.executemany("INSERT INTO entries (key, at) VALUES (?, ?)", [(key, now)] * amount)
            db.commit()
        except BaseException:
            db.rollback()
            raise
        return allowed

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = time.time()
        oldest, count = self.file.connection().execute(
            "SELECT min(at), count(*) FROM entries WHERE key = ? AND at >= ?", (self.prefix + key, now - expiry)
        ).fetchone()
        return (float(oldest), int(count)) if count else (now, 0)
