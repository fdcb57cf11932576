"""The answer cache: popular queries cost almost nothing, and no stale answer survives a change.

Keys hold the index's epoch (bumped when shards reflect a task or configuration changes, see
``control_plane.state.epochs``), the resolved profile version and the normalized request.

Each serving process keeps its own cache in memory. Several processes of one machine without Redis
(``serve --workers N`` on the embedded default) also pass each other what they computed through the
shared state (:attr:`control_plane.state.SharedState.answers`): a connection's requests land on one
process, so without it every popular query was computed once per process (measured on the search
bench's real query mix with 2 processes: 5,040 computations where 3,687 distinct requests needed
computing).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any

import orjson

from control_plane.state import SharedAnswers

#: bytes of answer bodies one process keeps: counted in entries alone, 20,000 pages of 100 hits with
#: their documents could take gigabytes (any storefront key can ask as many distinct searches)
MAX_BYTES = 64 << 20
#: an answer body larger than this is neither kept nor shared (a page of 100 large documents): it
#: would push out hundreds of ordinary answers
MAX_BODY = 1 << 20


class AnswerCache:
    def __init__(self, max_entries: int = 20_000, ttl_seconds: float = 300.0,
                 shared: SharedAnswers | None = None, max_bytes: int = MAX_BYTES) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[float, bytes, int]] = OrderedDict()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0  # the bodies' bytes kept
        self.ttl = ttl_seconds
        self.shared = shared
        self.hits = 0
        self.shared_hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: Any) -> bytes:
        """A 128-bit digest of the parts (orjson's own output would hold a 4 KiB buffer per entry)."""
        return hashlib.blake2b(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        """The cached answer body (without its closing brace) and its total: this process's, else
        one another process computed (kept here from then on)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] >= time.monotonic():
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1], entry[2]
        found = self.shared.get(key) if self.shared is not None else None
        if found is None:
            with self._lock:
                self.misses += 1
            return None
        self._keep(key, *found)
        with self._lock:
            self.shared_hits += 1
        return found

    def put(self, key: bytes, body: bytes, total: int) -> None:
        """Cache a computed answer here and for the machine's other processes (not one over
        :data:`MAX_BODY`)."""
        if len(body) > MAX_BODY:
            return
        self._keep(key, body, total)
        if self.shared is not None:
            self.shared.put(key, body, total)

    def _keep(self, key: bytes, body: bytes, total: int) -> None:
        """Keep an answer, the least recently used ones out past ``max_entries`` or ``max_bytes``."""
        if len(body) > MAX_BODY:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= len(old[1])
            self._entries[key] = (time.monotonic() + self.ttl, body, total)
            self.bytes += len(body)
            while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, out, _) = self._entries.popitem(last=False)
                self.bytes -= len(out)
