"""Password hashing with bounded concurrency.

An argon2 hash or verification takes 64 MiB and, for a good part of a second, a core (its four lanes
run in threads). Left unbounded, a burst of sign-ins hashed on every request thread at once, each
holding a database connection: memory grew by 64 MiB a request, the connection pool ran dry and
every other request waited. So a caller is first admitted — at most ``slots + queue`` at once, any
more answer 503 UNAVAILABLE with ``Retry-After`` at once, before doing any database work — and its
hashes run on ``slots`` low-priority threads, waited for at most ``wait`` seconds. Callers end
their transaction (returning the connection) before they hash. The routes that hash also look at
:meth:`PasswordHashing.saturated` on the event loop, before any request thread is taken: the surplus
of a burst of sign-ins is refused there, so it does not queue ahead of other requests for threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from control_plane.security import hash_password, verify_password
from shared.errors import ErrorCode, ServiceError

T = TypeVar("T")


def busy() -> ServiceError:
    return ServiceError(ErrorCode.UNAVAILABLE, "Too many sign-ins at once; try again shortly",
                        [{"path": "passwordHashing", "message": "busy"}], headers={"Retry-After": "1"})


def _lower_priority() -> None:
    """Hashing threads yield the CPU to serving ones (Linux: a nice value is per thread, and the
    threads argon2 starts for its lanes inherit it)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


class PasswordHashing:
    """Callers ``admit()`` first (before their database read: a request that would be refused does
    no work), then hash or verify through what it yields."""

    def __init__(self, slots: int = 0, queue: int = 16, wait: float = 10.0) -> None:
        slots = slots or max(1, (os.cpu_count() or 1) // 2)
        self._pool = ThreadPoolExecutor(slots, thread_name_prefix="hashing", initializer=_lower_priority)
        self._capacity = slots + queue
        self._inside = 0  # admitted callers, hashing or not yet
        self._lock = threading.Lock()
        self._wait = wait

    def saturated(self) -> bool:
        """Every place is taken now (a look without the lock: :meth:`admit` still decides)."""
        return self._inside >= self._capacity

    @contextlib.contextmanager
    def admit(self) -> Iterator[Admitted]:
        """A place among the callers that may hash, or 503 UNAVAILABLE at once when all are taken."""
        with self._lock:
            if self._inside >= self._capacity:
                raise busy()
            self._inside += 1
        try:
            yield Admitted(self)
        finally:
            with self._lock:
                self._inside -= 1

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        future = self._pool.submit(fn, *args)
        try:
            return future.result(timeout=self._wait)
        except FutureTimeout:
            future.cancel()
            raise busy() from None


class Admitted:
    def __init__(self, hashing: PasswordHashing) -> None:
        self._hashing = hashing

    def hash(self, password: str) -> str:
        return self._hashing._run(hash_password, password)

    def verify(self, password_hash: str | None, password: str) -> bool:
        """As :func:`~control_plane.security.verify_password` (an unknown user costs the same)."""
        return self._hashing._run(verify_password, password_hash, password)
