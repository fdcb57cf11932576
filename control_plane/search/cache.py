"""The answer cache: popular queries cost almost nothing, and no stale answer survives a change.

Keys hold the index's epoch (bumped when shards reflect a task or configuration changes, see
``control_plane.epochs``), the resolved profile version and the normalized request.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any

import orjson


class AnswerCache:
    def __init__(self, max_entries: int = 20_000, ttl_seconds: float = 300.0) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[float, bytes, int]] = OrderedDict()
        self.max_entries = max_entries
        self.ttl = ttl_seconds
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: Any) -> bytes:
        """A 128-bit digest of the parts (orjson's own output would hold a 4 KiB buffer per entry)."""
        return hashlib.blake2b(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        """The cached answer body (without its closing brace) and its total."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] < time.monotonic():
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1], entry[2]

    def put(self, key: bytes, body: bytes, total: int) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic() + self.ttl, body, total)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
