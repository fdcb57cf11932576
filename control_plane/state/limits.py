"""Rate limits through the ``limits`` library, counted where the shared state keeps its counters
(:meth:`~control_plane.state.base.SharedState.limits_storage`: Redis, the machine's state file), or
in this process's memory when it is alone.

While the shared counters are unreachable the limits keep applying, counted by this instance alone
(fail open to a local limiter): a sign-in is then limited per instance, not refused, and the shared
counters are tried again after a :class:`~control_plane.state.backoff.Backoff`.

High-rate quotas (searches and events per second) may be counted in batches (:class:`Batches`): a
shared counter costs a Redis round trip or a state-file transaction per hit, two per storefront
search, on the event loop.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.strategies import RateLimiter as RateLimiterStrategy

from control_plane.state.backoff import Backoff
from control_plane.state.base import SharedState
from control_plane.state.memory import LocalLimits
from shared.errors import ErrorCode, ServiceError

log = logging.getLogger("shopsearch.ratelimit")
T = TypeVar("T")


class RateLimiter:
    """``moving`` windows for per-address route limits; ``fixed`` ones, O(1) per hit, for high-rate
    quotas and for attempts that may be given back (:meth:`reserve`). Limiters of one ``namespace``
    share their counters."""

    def __init__(self, state: SharedState, namespace: str = "", strategy: str = "moving",
                 batched: bool = False) -> None:
        kind = MovingWindowRateLimiter if strategy == "moving" else FixedWindowRateLimiter
        self._local: RateLimiterStrategy = kind(LocalLimits())
        storage = state.limits_storage(namespace)
        self._shared: RateLimiterStrategy | None = None if storage is None else kind(storage)
        self.backoff = Backoff()
        self._items: dict[str, RateLimitItem] = {}
        # fixed windows on a shared counter only: alone, a process counts in memory anyway
        self._batches = Batches() if batched and strategy == "fixed" and self._shared is not None else None

    def _run(self, op: Callable[[RateLimiterStrategy], T]) -> tuple[T, RateLimiterStrategy]:
        """``op`` on the shared counters, or on the local limiter while they are unreachable."""
        if self._shared is not None and not self.backoff.closed():
            try:
                result = op(self._shared)
            except StorageError as exc:
                if self.backoff.failed():
                    log.warning("rate limits counted locally: shared counters unreachable (%s)", exc.storage_error)
            else:
                if self.backoff.succeeded():
                    log.warning("rate limits counted in the shared counters again")
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
