"""When a failed call is sent again, and after how long.

A call is *safe to repeat* when the route is idempotent (reads, PUT, DELETE, searches) or when it
carries an ``Idempotency-Key`` (document uploads and deletes: the client sets one per batch, so the
server answers a repeat with the first answer instead of applying it twice). Then:

- 429 ``RATE_LIMITED`` is retried for every call: the server refused it before doing anything;
- a connection that could not be made (refused, connect timeout, no pooled connection in time) is
  retried for every call: nothing was sent;
- 503 (but not ``SEARCH_TIMEOUT``: the same search would run out of time again), 502 and 504, a
  connection broken mid-call and a read timeout are retried only for calls safe to repeat: the
  server may have applied the call before the answer was lost;
- 409 ``CONFLICT`` on a repeat of a call with an ``Idempotency-Key`` is retried: the first attempt is
  still being applied and holds the key; the next repeat gets its answer.

The wait is the server's ``Retry-After`` when it gave one (plus up to 10 % jitter, so that clients
told the same thing don't return together), else exponential backoff with jitter: attempt ``n``
waits between half and all of ``backoff * 2**n``, at most ``max_backoff``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

from shopsearch_client.errors import ShopsearchError

# nothing reached the server: safe to send again whatever the call
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` repeats after the first attempt (0: never retry); waits as described above.

    A ``Retry-After`` longer than ``max_retry_after`` seconds is not waited out: the error is raised
    with its ``retry_after`` for the caller to decide.
    """

    max_retries: int = 3
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def transport_delay(self, attempt: int, exc: httpx.TransportError, safe: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``exc``; None: give up."""
        if attempt >= self.max_retries or not (safe or isinstance(exc, _NOT_SENT)):
            return None
        return self._backoff(attempt)

    def error_delay(self, attempt: int, error: ShopsearchError, safe: bool, keyed: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after the error answer ``error``; None: give up."""
        if attempt >= self.max_retries:
            return None
        status = error.status
        if status == 429:
            retry = True
        elif status == 503:
            retry = safe and error.code != "SEARCH_TIMEOUT"
        elif status in (502, 504):
            retry = safe
        elif status == 409:
            retry = keyed and attempt > 0 and error.code == "CONFLICT"
        else:
            retry = False
        if not retry:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            return error.retry_after + random.uniform(0, min(1.0, error.retry_after * 0.1))
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)


NO_RETRY = RetryPolicy(max_retries=0)
