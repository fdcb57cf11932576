"""The shared-state abstraction: what the API processes of a deployment must agree on.

One interface, three backends (:func:`control_plane.state.open_state` picks one from the settings):

* Redis (``REDIS_URL`` set): every instance of a production deployment;
* the machine's state file (:mod:`.statefile`): the processes of ``serve --workers N`` without Redis;
* memory (:mod:`.memory`): one process alone.

On it stand index epochs (:mod:`.epochs`), revocations (:mod:`.revocations`), rate limits and
quotas (:mod:`.limits`, through :meth:`SharedState.limits_storage`), the computed answers the
processes pass each other (:attr:`SharedState.answers`) and the status answer (values with
first-writer-wins and a lock).

Only Redis can become unreachable. Its reads then raise :class:`SharedStateUnavailable`, so each
caller picks its fallback (revocations: the database, which is the authority; epochs: no cached
answers); the writes that must not be lost (revocations, epoch bumps: the ``*_eventually``
methods) are kept and replayed by this process as soon as Redis answers again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from limits.storage import Storage


class SharedStateUnavailable(Exception):
    """Redis could not be reached (or is not retried yet after a failure)."""


class SharedAnswers(Protocol):
    """Computed answers (a body and its total) passed between processes; any failure is a miss."""

    def get(self, key: bytes) -> tuple[bytes, int] | None: ...
    def put(self, key: bytes, body: bytes, total: int) -> None: ...


class SharedState(ABC):
    #: computed answers shared with the other processes, None where there are none to share with
    answers: SharedAnswers | None = None

    @abstractmethod
    def get(self, key: str) -> bytes | None: ...

    @abstractmethod
    def set(self, key: str, value: bytes, ttl_seconds: float) -> None: ...

    @abstractmethod
    def delete(self, key: str) -> None: ...

    @abstractmethod
    def incr(self, key: str) -> int:
        """Add one to a counter that never expires (0 when missing); the new value."""

    @abstractmethod
    def set_first(self, key: str, value: bytes, ttl_seconds: float) -> bytes:
        """Store ``value`` unless a live value is there already; returns the one that stays."""

    @abstractmethod
    def limits_storage(self, namespace: str) -> Storage | None:
        """The ``limits`` storage of rate-limit counters the processes share (None: this process alone)."""

    def lock(self, key: str, token: str, ttl_seconds: int) -> bool:
        """Take a lock held at most ``ttl_seconds`` across instances. Without Redis, every caller
        gets it: one process, or the processes of one machine, which store first-writer-wins."""
        return True

    def unlock(self, key: str, token: str) -> None:
        """Release a lock taken with ``token`` (never raises; else it expires)."""
        return None

    def get_pushed(self, key: str) -> bytes | None:
        """``get`` of a value written only through ``set_eventually``/``incr_eventually`` and read on
        every request: from this process's memory where the backend pushes changes (Redis)."""
        return self.get(key)

    def start(self) -> None:
        """Start what keeps this process's view current (Redis: the listener of pushed changes)."""
        return None

    def stop(self) -> None:
        return None

    def set_eventually(self, key: str, value: bytes, ttl_seconds: float) -> None:
        """``set`` that never raises: kept and replayed while Redis is unreachable."""
        self.set(key, value, ttl_seconds)

    def incr_eventually(self, key: str) -> int | None:
        """``incr``, or None when Redis is unreachable and the increment was kept for replay."""
        return self.incr(key)

    def replay(self) -> None:
        """Replay kept writes if Redis answers again (cheap when there are none)."""
        return None

    def ping(self) -> bool:
        """Whether the state answers (always, without Redis)."""
        return True
