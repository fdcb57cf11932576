"""Rate limits through the ``limits`` library: Redis counters when configured; without Redis, the
machine's state file when several serving processes share the limits (:class:`FileLimits`), else memory.

While Redis is unreachable the limits keep applying, counted by this instance alone (fail open to
a local limiter): a sign-in is then limited per instance, not refused, and Redis is tried again
after a :class:`~control_plane.sharedstate.Backoff`.

High-rate quotas (searches and events per second) may be counted in batches (:class:`Batches`): a
shared counter costs a Redis round trip or a state-file transaction per hit, two per storefront
search, on the event loop.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import MovingWindowSupport, RedisStorage, Storage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.strategies import RateLimiter as RateLimiterStrategy

from control_plane.sharedstate import Backoff
from control_plane.statefile import StateFile
from shared.errors import ErrorCode, ServiceError

log = logging.getLogger("shopsearch.ratelimit")
T = TypeVar("T")


class RateLimiter:
    """``moving`` windows for per-address route limits; ``fixed`` ones, O(1) per hit, for high-rate
    quotas and for attempts that may be given back (:meth:`reserve`)."""

    def __init__(self, redis_url: str | None, prefix: str, strategy: str = "moving",
                 file: StateFile | None = None, batched: bool = False) -> None:
        kind = MovingWindowRateLimiter if strategy == "moving" else FixedWindowRateLimiter
        self._local: RateLimiterStrategy = kind(LocalLimits())
        self._shared: RateLimiterStrategy | None = None
        if redis_url:
            storage = RedisStorage(redis_url, key_prefix=f"{prefix}limits", wrap_exceptions=True,
                                   socket_timeout=2, socket_connect_timeout=2)
            self._shared = kind(storage)
        elif file is not None:
            self._shared = kind(FileLimits(file, prefix))
        self.backoff = Backoff()
        self._items: dict[str, RateLimitItem] = {}
        # fixed windows on a shared counter only: alone, a process counts in memory anyway
        self._batches = Batches() if batched and strategy == "fixed" and self._shared is not None else None

    def _run(self, op: Callable[[RateLimiterStrategy], T]) -> tuple[T, RateLimiterStrategy]:
        """``op`` on Redis, or on the local limiter while Redis is unreachable."""
        if self._shared is not None and not self.backoff.closed():
            try:
                result = op(self._shared)
            except StorageError as exc:
                if self.backoff.failed():
                    log.warning("rate limits counted locally: Redis unreachable (%s)", exc.storage_error)
            else:
                if self.backoff.succeeded():
                    log.warning("rate limits counted in Redis again")
                return result, self._shared
        return op(self._local), self._local

    def _item(self, limit: str) -> RateLimitItem:
        item = self._items.get(limit)
        if item is None:
            item = self._items[limit] = parse(limit)
        return item

    def _refuse(self, limiter: RateLimiterStrategy, item: RateLimitItem, identifiers: tuple[str, ...]) -> ServiceError:
        try:
            stats = limiter.get_window_stats(item, *identifiers)
            retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        except StorageError:
            retry_after = 1
        return ServiceError(
            ErrorCode.RATE_LIMITED,
            "Too many requests; try again later",
            headers={"Retry-After": str(retry_after)},
        )

    def hit(self, limit: str, *identifiers: str) -> None:
        """Count this call; raise RATE_LIMITED when it is over the limit."""
        item = self._item(limit)
        batches = self._batches

        def op(limiter: RateLimiterStrategy) -> bool:
            if batches is not None and limiter is self._shared:
                return batches.hit(limiter, item, identifiers)
            return limiter.hit(item, *identifiers)

        allowed, limiter = self._run(op)
        if not allowed:
            raise self._refuse(limiter, item, identifiers)

    def reserve(self, limit: str, *identifiers: str) -> Reservation:
        """Count this attempt before the work it guards; RATE_LIMITED when over the limit.

        Counting first (one atomic increment) means concurrent attempts can't all pass a check that
        none has counted yet. ``give_back`` uncounts it (a sign-in that succeeded is no failure);
        that needs a counter, so this limiter must use ``fixed`` windows.
        """
        item = self._item(limit)
        allowed, limiter = self._run(lambda limiter: limiter.hit(item, *identifiers))
        if not allowed:
            raise self._refuse(limiter, item, identifiers)
        return Reservation(limiter, item, item.key_for(*identifiers))


class _Batch:
    __slots__ = ("known", "pending", "until")

    def __init__(self) -> None:
        self.known = 0  # the shared count when this process last added its hits
        self.pending = 0  # hits allowed here since then
        self.until = 0.0  # when the window ends (wall clock)


class Batches:
    """Fixed-window hits counted in this process and added to the shared counter in batches.

    A process allows up to ``amount // SHARE - 1`` hits on its own between two visits to the shared
    counter (each visit adds them and reads back what every process counted), and always visits
    before it would refuse. So the shared count lags by less than ``amount / SHARE`` per process:
    with ``P`` processes, a limit lets at most ``P * amount / SHARE`` more through (~6 % with two),
    and limits under ``2 * SHARE`` per window are counted exactly, as without batches."""

    SHARE = 32
    SWEEP_EVERY = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: dict[str, _Batch] = {}
        self._hits = 0

    def hit(self, limiter: RateLimiterStrategy, item: RateLimitItem, identifiers: tuple[str, ...]) -> bool:
        slack = item.amount // self.SHARE
        if slack < 2:
            return limiter.hit(item, *identifiers)
        key, now = item.key_for(*identifiers), time.time()
        with self._lock:
            self._hits += 1
            if self._hits % self.SWEEP_EVERY == 0:
                self._batches = {k: b for k, b in self._batches.items() if b.until > now}
            batch = self._batches.get(key)
            if batch is None:
                batch = self._batches[key] = _Batch()
            if now < batch.until and batch.pending + 1 < slack and batch.known + batch.pending + 1 <= item.amount:
                batch.pending += 1
                return True
            added = batch.pending + 1
            storage = limiter.storage
            value = storage.incr(key, item.get_expiry(), amount=added)
            if value == added:  # this visit opened the window
                batch.until = now + item.get_expiry()
            elif batch.until <= now:
                batch.until = storage.get_expiry(key)
            batch.known, batch.pending = value, 0
            return value <= item.amount


class Reservation:
    """One counted attempt that may be given back (once)."""

    def __init__(self, limiter: RateLimiterStrategy, item: RateLimitItem, key: str) -> None:
        self._limiter, self._item, self._key = limiter, item, key
        self._given_back = False

    def give_back(self) -> None:
        if self._given_back:
            return
        self._given_back = True
        storage, expiry = self._limiter.storage, self._item.get_expiry()
        try:
            if storage.incr(self._key, expiry, amount=-1) < 0:  # the window ended meanwhile
                storage.incr(self._key, expiry, amount=1)
        except StorageError:
            pass  # the attempt stays counted: errs on the safe side


class FileLimits(Storage, MovingWindowSupport):
    """``limits`` storage in the machine's :class:`~control_plane.statefile.StateFile`: counters of
    fixed windows and entries of moving windows, shared by the serving processes of one machine."""

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


class LocalLimits(Storage, MovingWindowSupport):
    """``limits`` storage in this process's memory, expired lazily.

    limits' own ``MemoryStorage`` expires keys from a timer thread it starts again every 10 ms
    while keys live: under a steady search load (a quota is counted per search) that was a new
    thread every 10 ms and a tenth of a cached search's time (and it was not thread-safe: two
    first hits at once started the timer twice, a 500 in a burst of sign-ins). One lock, held
    for a dictionary update."""

    STORAGE_SCHEME = ["shopsearch-local"]
    SWEEP_EVERY = 10_000

    def __init__(self) -> None:
        super().__init__()
        self._counters: dict[str, tuple[int, float]] = {}  # key -> (count, expires at)
        self._entries: dict[str, list[float]] = {}  # key -> acquisition times, newest first
        self._ops = 0
        self._lock = threading.Lock()

    @property
    def base_exceptions(self) -> type[Exception]:
        return ValueError

    def _sweep(self) -> None:
        self._ops += 1
        if self._ops % self.SWEEP_EVERY:
            return
        now = time.time()
        self._counters = {k: v for k, v in self._counters.items() if v[1] > now}
        self._entries = {k: v for k, v in self._entries.items() if v and v[0] > now - 86_400}

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        with self._lock:
            self._sweep()
            now = time.time()
            count, expires = self._counters.get(key, (0, 0.0))
            if expires <= now:
                count, expires = 0, now + expiry
            count += amount
            self._counters[key] = (count, expires)
            return count

    def get(self, key: str) -> int:
        count, expires = self._counters.get(key, (0, 0.0))
        return count if expires > time.time() else 0

    def get_expiry(self, key: str) -> float:
        count, expires = self._counters.get(key, (0, 0.0))
        return expires if expires > time.time() else time.time()

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self._lock:
            self._counters.clear()
            self._entries.clear()
        return None

    def clear(self, key: str) -> None:
        with self._lock:
            self._counters.pop(key, None)
            self._entries.pop(key, None)

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        with self._lock:
            self._sweep()
            now = time.time()
            entries = [at for at in self._entries.get(key, ()) if at >= now - expiry]
            allowed = len(entries) + amount <= limit
            self._entries[key] = [now] * amount + entries if allowed else entries
            return allowed

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = time.time()
        entries = [at for at in self._entries.get(key, ()) if at >= now - expiry]
        return (entries[-1], len(entries)) if entries else (now, 0)
