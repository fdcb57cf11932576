"""Counting the Redis round trips the request path makes, so a test can hold them to a number.

Every redis-py command or pipeline leaves through ``send_packed_command`` once: one call, one round
trip. Counted on the threads that serve requests only: the shared state's own threads (its listener,
the shared-answer writer), the task runner and the replay loop work off the request path.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis.connection import AbstractConnection

from control_plane.state.pushed import THREAD_PREFIX

_OFF_PATH = (THREAD_PREFIX, "task", "replay-kept-writes", "shards-warm-up")


class RoundTrips:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent: list[bytes] = []

    def _count(self, command: Any) -> None:
        if threading.current_thread().name.startswith(_OFF_PATH):
            return
        parts = [command] if isinstance(command, (bytes, bytearray, memoryview, str)) else list(command)
        payload = b"".join(p.encode() if isinstance(p, str) else bytes(p) for p in parts)
        with self._lock:
            self.sent.append(payload)

    @contextmanager
    def counting(self) -> Iterator[RoundTrips]:
        original = AbstractConnection.send_packed_command
        counter = self

        def send(connection: AbstractConnection, command: Any, check_health: bool = True) -> None:
            counter._count(command)
            original(connection, command, check_health)

        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        try:
            yield self
        finally:
            AbstractConnection.send_packed_command = original  # type: ignore[method-assign]

    @contextmanager
    def measure(self) -> Iterator[list[bytes]]:
        """The round trips made inside the block (a list filled when it ends)."""
        with self._lock:
            start = len(self.sent)
        found: list[bytes] = []
        yield found
        with self._lock:
            found.extend(self.sent[start:])


_HANDSHAKE = (b"HELLO", b"CLIENT", b"SELECT", b"AUTH")


def _handshake(trip: bytes) -> bool:
    """A new pooled connection's handshake (once per connection, not per request)."""
    command = trip.split(b"\r\n", 3)[2] if trip.startswith(b"*") else b""
    return command.upper() in _HANDSHAKE


def quota(trips: list[bytes]) -> list[bytes]:
    """The round trips to the rate-limit counters (a batch's visit, once per window or batch)."""
    return [t for t in trips if b"limits" in t.lower() and not _handshake(t)]


def others(trips: list[bytes]) -> list[bytes]:
    """The round trips for everything else (epochs, revocations, shared answers), handshakes left out."""
    return [t for t in trips if b"limits" not in t.lower() and not _handshake(t)]
