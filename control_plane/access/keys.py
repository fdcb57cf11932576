"""API keys by hash, cached briefly in each process (revocation is checked on every use)."""

from __future__ import annotations

import threading
import time

from control_plane.access.registry import KeyInfo

KEY_CACHE_SECONDS = 30.0
LAST_USED_WRITE_SECONDS = 60.0


class KeyCache:
    """Key lookups by hash, cached briefly; revocation is checked on every use through shared state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[KeyInfo | None, float]] = {}
        self._last_used_written: dict[str, float] = {}

    def get(self, key_hash: str) -> tuple[bool, KeyInfo | None]:
        with self._lock:
            entry = self._entries.get(key_hash)
        if entry is None or entry[1] < time.monotonic():
            return False, None
        return True, entry[0]

    def put(self, key_hash: str, info: KeyInfo | None) -> None:
        with self._lock:
            if len(self._entries) > 100_000:
                self._entries.clear()
            self._entries[key_hash] = (info, time.monotonic() + KEY_CACHE_SECONDS)

    def forget(self, key_id: str) -> None:
        with self._lock:
            for key_hash, (info, _) in list(self._entries.items()):
                if info is not None and info.id == key_id:
                    del self._entries[key_hash]

    def should_write_last_used(self, key_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last_used_written.get(key_id, 0.0) < LAST_USED_WRITE_SECONDS:
                return False
            self._last_used_written[key_id] = now
            return True
