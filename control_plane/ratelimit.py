"""Rate limits through the ``limits`` library: Redis counters when configured, memory otherwise."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, RedisStorage, Storage
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.strategies import RateLimiter as RateLimiterStrategy

from shared.errors import ErrorCode, ServiceError


class RateLimiter:
    """``moving`` windows for security limits (sign-in); ``fixed`` ones, O(1) per hit, for high-rate quotas."""

    def __init__(self, redis_url: str | None, prefix: str, strategy: str = "moving") -> None:
        storage: Storage = (
            RedisStorage(redis_url, key_prefix=f"{prefix}limits") if redis_url else MemoryStorage()
        )
        self._limiter: RateLimiterStrategy = (
            MovingWindowRateLimiter(storage) if strategy == "moving" else FixedWindowRateLimiter(storage)
        )
        self._items: dict[str, RateLimitItem] = {}

    def _item(self, limit: str) -> RateLimitItem:
        item = self._items.get(limit)
        if item is None:
            item = self._items[limit] = parse(limit)
        return item

    def _refuse(self, item: RateLimitItem, identifiers: tuple[str, ...]) -> ServiceError:
        stats = self._limiter.get_window_stats(item, *identifiers)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        return ServiceError(
            ErrorCode.RATE_LIMITED,
            "Too many requests; try again later",
            headers={"Retry-After": str(retry_after)},
        )

    def check(self, limit: str, *identifiers: str) -> None:
        """Raise RATE_LIMITED if the limit is already used up, without counting this call."""
        item = self._item(limit)
        if not self._limiter.test(item, *identifiers):
            raise self._refuse(item, identifiers)

    def hit(self, limit: str, *identifiers: str) -> None:
        """Count this call; raise RATE_LIMITED when it is over the limit."""
        item = self._item(limit)
        if not self._limiter.hit(item, *identifiers):
            raise self._refuse(item, identifiers)

    def count(self, limit: str, *identifiers: str) -> None:
        """Count a call (e.g. a failed login) without refusing it."""
        self._limiter.hit(self._item(limit), *identifiers)
