"""State several API instances must agree on: revocations and small shared values.

Redis when ``REDIS_URL`` is set; an in-process equivalent on the embedded default (one process).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

import redis


class SharedState(Protocol):
    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None: ...
    def is_revoked(self, kind: str, ident: str) -> bool: ...
    def get(self, key: str) -> bytes | None: ...
    def set(self, key: str, value: bytes, ttl_seconds: int) -> None: ...
    def delete(self, key: str) -> None: ...
    def incr(self, key: str) -> int: ...
    def ping(self) -> bool: ...


class MemoryState:
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

    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        self.set(f"revoked:{kind}:{ident}", b"1", ttl_seconds)

    def is_revoked(self, kind: str, ident: str) -> bool:
        return self.get(f"revoked:{kind}:{ident}") is not None

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

    def ping(self) -> bool:
        return True


class RedisState:
    def __init__(self, url: str, prefix: str) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix

    def revoke(self, kind: str, ident: str, ttl_seconds: int) -> None:
        self.client.set(f"{self.prefix}revoked:{kind}:{ident}", b"1", ex=max(1, ttl_seconds))

    def is_revoked(self, kind: str, ident: str) -> bool:
        return bool(self.client.exists(f"{self.prefix}revoked:{kind}:{ident}"))

    def get(self, key: str) -> bytes | None:
        value = self.client.get(self.prefix + key)
        return value if value is None else bytes(value)  # type: ignore[arg-type]

    def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        self.client.set(self.prefix + key, value, ex=max(1, ttl_seconds))

    def delete(self, key: str) -> None:
        self.client.delete(self.prefix + key)

    def incr(self, key: str) -> int:
        return int(self.client.incr(self.prefix + key))  # type: ignore[arg-type]

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False


def make_shared_state(redis_url: str | None, prefix: str) -> SharedState:
    return RedisState(redis_url, prefix) if redis_url else MemoryState()
