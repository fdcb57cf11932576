"""Engine error types (plain exceptions, picklable across a Ray boundary)."""

from __future__ import annotations

import time


class EngineError(Exception):
    """A search or apply request the engine cannot serve.

    ``code`` is a stable machine-readable string (e.g. ``"FIELD_NOT_FILTERABLE"``).
    """

    def __init__(self, message: str, code: str = "ENGINE_ERROR", details: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.details = list(details or [])

    def __reduce__(self):  # keep picklable with extra attributes
        return (self.__class__, (self.message, self.code, self.details))


class SearchTimeout(EngineError):
    """A search ran past its ``timeout_ms``; its work stopped at the next check."""

    def __init__(self, message: str = "the search ran past its time limit", code: str = "SEARCH_TIMEOUT",
                 details: list[dict] | None = None):
        super().__init__(message, code, details)


class Deadline:
    """``Query.timeout_ms`` as a point in time; :meth:`check` between stages of the work."""

    __slots__ = ("at",)

    def __init__(self, timeout_ms: float | None) -> None:
        self.at = None if timeout_ms is None else time.monotonic() + max(0.0, float(timeout_ms)) / 1000

    def check(self, cost: float = 0.0) -> None:
        """Raise :class:`SearchTimeout` when the deadline has passed, or would before ``cost``
        more seconds of work (one uninterruptible step, like decoding a 9 MB document) end."""
        if self.at is not None and time.monotonic() + cost > self.at:
            raise SearchTimeout()


NO_DEADLINE = Deadline(None)


class ShardBusy(Exception):
    """A search asked not to wait found the shard's memory being updated (``search(wait=False)``)."""


class MappingError(EngineError):
    """Invalid mapping or language. ``details`` is a list of ``{"path", "message"}``."""

    def __init__(self, details: list[dict] | str, code: str = "MAPPING_INVALID", _unused: object = None):
        if isinstance(details, str):
            details = [{"path": "", "message": details}]
        msg = "; ".join(f"{d.get('path')}: {d.get('message')}" for d in details) or "invalid mapping"
        super().__init__(msg, code, details)

    def __reduce__(self):
        return (self.__class__, (self.details, self.code))
