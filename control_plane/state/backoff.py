"""When to try Redis again after it failed: 1 s after the first failure, doubling up to 8 s.

An unreachable Redis, even one that swallows packets until the 2 s socket timeout, then costs
requests almost nothing while it lasts: they take their fallback at once instead of waiting.
"""

from __future__ import annotations

import time


class Backoff:
    def __init__(self, first: float = 1.0, longest: float = 8.0) -> None:
        self.first, self.longest = first, longest
        self.failures = 0
        self._retry_at = 0.0

    def closed(self) -> bool:
        """True while Redis should not be tried."""
        return bool(self.failures) and time.monotonic() < self._retry_at

    def failed(self) -> bool:
        """Record a failure; True when it is the first of an outage."""
        self.failures += 1
        self._retry_at = time.monotonic() + min(self.longest, self.first * 2 ** (self.failures - 1))
        return self.failures == 1

    def succeeded(self) -> bool:
        """Record a success; True when it ends an outage."""
        ended, self.failures = bool(self.failures), 0
        return ended

    def reset(self) -> None:
        self.failures = 0
