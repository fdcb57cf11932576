"""The shared state of one process alone: memory."""

from __future__ import annotations

import threading
import time

from limits.storage import MovingWindowSupport, Storage

from control_plane.state.base import SharedState


class MemoryState(SharedState):
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

    def set(self, key: str, value: bytes, ttl_seconds: float) -> None:
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

    def set_first(self, key: str, value: bytes, ttl_seconds: float) -> bytes:
        with self._lock:
            current = self._live(key)
            if current is not None:
                return current
            self._values[key] = (value, time.monotonic() + ttl_seconds)
            return value

    def limits_storage(self, namespace: str) -> Storage | None:
        return None  # alone, a rate limiter counts in its own memory (LocalLimits)


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
