"""State several API instances must agree on: revocations and small shared values.

Redis when ``REDIS_URL`` is set; without it, an in-process equivalent for one serving process, or
a file every serving process of the machine shares (``DATA_DIR/state.db``, :mod:`.statefile`) when
``shopsearch serve --workers`` runs several.

When Redis cannot be reached, reads raise :class:`SharedStateUnavailable` so each caller picks its
fallback (revocations: the database, which is the authority; epochs: no cached answers). Writes
that must not be lost — revocations and epoch bumps — are kept and replayed by this instance as
soon as Redis answers again. After a failure Redis is not tried again for a while (:class:`Backoff`:
1 s, doubling to 8 s while it keeps failing), so an unreachable Redis — even one that swallows
packets until the 2 s socket timeout — costs requests almost nothing while it lasts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

import redis

from control_plane.statefile import StateFile, state_file
from shared.settings import Settings

log = logging.getLogger("shopsearch.sharedstate")
T = TypeVar("T")


class Backoff:
    """When to try Redis again after failures: 1 s after the first, doubling up to 8 s."""

    def __init__(self, first: float = 1.0, longest: float = 8.0) -> None:
        self.first, self.longest = first, longest
        self.failures = 0
        self._retry_at = 0.0

    def closed(self) -> bool:
        """True while Redis should not be tried."""
        return bool(self.failures) and time.monotonic() < self._retry_at

    def failed(self) -> bool:
        """Record a failure; True when it is the first of an outage."""
        self.failures += 1
        self._retry_at = time.monotonic() + min(self.longest, self.first * 2 ** (self.failures - 1))
        return self.failures == 1

    def succeeded(self) -> bool:
        """Record a success; True when it ends an outage."""
        ended, self.failures = bool(self.failures), 0
        return ended

    def reset(self) -> None:
        self.failures = 0


class SharedStateUnavailable(Exception):
    """Redis could not be reached (or is not retried yet after a failure)."""


class SharedState(Protocol):
    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        """Never raises: kept and replayed when Redis is unreachable."""

    def is_revoked(self, kind: str, ident: str) -> bool: ...
    def get(self, key: str) -> bytes | None: ...
    def set(self, key: str, value: bytes, ttl_seconds: int) -> None: ...
    def delete(self, key: str) -> None: ...
    def incr(self, key: str) -> int: ...

    def incr_eventually(self, key: str) -> int | None:
        """``incr``, or None when Redis is unreachable and the increment was kept for replay."""

    def replay(self) -> None:
        """Replay kept writes if Redis answers again (cheap when there are none)."""

    def ping(self) -> bool: ...


class _NeverDown:
    """What a state that cannot become unreachable (memory, a local file) does alike."""

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        raise NotImplementedError

    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def incr(self, key: str) -> int:
        raise NotImplementedError

    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        self.set(f"revoked:{kind}:{ident}", b"1", ttl_seconds)

    def is_revoked(self, kind: str, ident: str) -> bool:
        return self.get(f"revoked:{kind}:{ident}") is not None

    def incr_eventually(self, key: str) -> int | None:
        return self.incr(key)

    def replay(self) -> None:
        return None

    def ping(self) -> bool:
        return True


class MemoryState(_NeverDown):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, tuple[bytes, float]] = {}

    def _live(self, key: str) -> bytes | None:
        item = self._values.get(key)
        if item is None:
            return None
        if item[1] < time.monotonic():
            self._values.pop(key, None)
            return None
        return item[0]

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._live(key)

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        with self._lock:
            self._values[key] = (value, time.monotonic() + ttl_seconds)

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)

    def incr(self, key: str) -> int:
        with self._lock:
            current = self._live(key)
            value = int(current or b"0") + 1
            self._values[key] = (str(value).encode(), float("inf"))
            return value


class RedisState:
    def __init__(self, url: str, prefix: str) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix
        self._lock = threading.Lock()
        self.backoff = Backoff()
        # writes to replay, by full key: ("set", deadline) for revocations, ("incr", 0) for epoch bumps
        self._kept: dict[str, tuple[str, float]] = {}

    def _call(self, fn: Callable[[], T]) -> T:
        if self.backoff.closed():
            raise SharedStateUnavailable("Redis is unreachable")
        try:
            if self._kept:
                self._replay_kept()
            result = fn()
        except redis.RedisError as exc:
            if self.backoff.failed():
                log.warning("Redis unreachable (%s); falling back until it answers", exc)
            raise SharedStateUnavailable("Redis is unreachable") from exc
        if self.backoff.succeeded():
            log.warning("Redis answers again")
        return result

    def _replay_kept(self) -> None:
        with self._lock:
            kept = list(self._kept.items())
        for key, (op, deadline) in kept:
            if op == "incr":
                self.client.incr(key)
            elif (remaining := int(deadline - time.monotonic())) > 0:
                self.client.set(key, b"1", ex=remaining)
            with self._lock:
                self._kept.pop(key, None)
        log.info("replayed %d writes kept while Redis was unreachable", len(kept))

    def _keep(self, key: str, op: str, deadline: float = 0.0) -> None:
        with self._lock:
            self._kept[key] = (op, deadline)

    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        key = f"{self.prefix}revoked:{kind}:{ident}"
        try:
            self._call(lambda: self.client.set(key, b"1", ex=max(1, ttl_seconds)))
        except SharedStateUnavailable:
            self._keep(key, "set", time.monotonic() + max(1, ttl_seconds))

    def is_revoked(self, kind: str, ident: str) -> bool:
        return bool(self._call(lambda: self.client.exists(f"{self.prefix}revoked:{kind}:{ident}")))

    def get(self, key: str) -> bytes | None:
        value = self._call(lambda: self.client.get(self.prefix + key))
        return value if value is None else bytes(value)  # type: ignore[arg-type]

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        self._call(lambda: self.client.set(self.prefix + key, value, ex=max(1, ttl_seconds)))

    def delete(self, key: str) -> None:
        self._call(lambda: self.client.delete(self.prefix + key))

    def incr(self, key: str) -> int:
        return int(self._call(lambda: self.client.incr(self.prefix + key)))  # type: ignore[arg-type]

    def incr_eventually(self, key: str) -> int | None:
        try:
            return self.incr(key)
        except SharedStateUnavailable:
            self._keep(self.prefix + key, "incr")
            return None

    def replay(self) -> None:
        if self._kept:
            self.ping()

    def ping(self) -> bool:
        try:
            return bool(self._call(self.client.ping))
        except SharedStateUnavailable:
            return False


class FileState(_NeverDown):
    """:class:`SharedState` in a :class:`~control_plane.statefile.StateFile` (several processes, one
    machine). Expiry is wall-clock time; expired rows are ignored and swept now and then."""

    def __init__(self, file: StateFile) -> None:
        self.file = file
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

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
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


def make_shared_state(settings: Settings) -> SharedState:
    """Redis when configured; else a file when several serving processes share it; else memory."""
    if settings.redis_url:
        return RedisState(settings.redis_url, settings.redis_prefix)
    if settings.serving_processes > 1:
        return FileState(state_file(settings.data_dir))
    return MemoryState()
