"""The one exception the client raises: :class:`ShopsearchError`.

An answer of the server carries the spec's error body ``{"error": {code, message, details}}``; the
client raises it with the HTTP ``status`` and, on 429 and 503, the ``Retry-After`` it gave. Failures
with no answer get a code of the client's own and ``status`` None:

- ``CONNECTION_ERROR``: the server could not be reached, or the connection broke before an answer;
- ``TIMEOUT``: no answer within the client's timeout;
- ``TASK_TIMEOUT``: :meth:`wait_for_task` gave up before the task finished (it may still finish);
- a failed or canceled task waited for raises its own ``error.code`` (``TASK_FAILED`` or
  ``TASK_CANCELED`` when it has none), with ``task`` set.
"""

from __future__ import annotations

import email.utils
import time
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from shopsearch_client.models import Task

CONNECTION_ERROR = "CONNECTION_ERROR"
TIMEOUT = "TIMEOUT"
TASK_TIMEOUT = "TASK_TIMEOUT"


class ShopsearchError(Exception):
    """An error answer of the API, or a failure to get one.

    ``status``: the HTTP status (None when there was no answer); ``code``: the machine code
    (``VALIDATION_ERROR``, ``NOT_FOUND``, ``RATE_LIMITED``, …); ``message``: human text; ``details``:
    the answer's ``error.details`` (each with ``path`` and ``message``, possibly more);
    ``retry_after``: seconds the server asked to wait (429, 503), else None.
    """

    def __init__(self, status: int | None, code: str, message: str, details: list[dict[str, Any]] | None = None,
                 retry_after: float | None = None, task: Task | None = None) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: list[dict[str, Any]] = details or []
        self.retry_after = retry_after
        self.task = task

    def __repr__(self) -> str:
        return f"ShopsearchError(status={self.status!r}, code={self.code!r}, message={self.message!r})"

    @classmethod
    def from_response(cls, response: httpx.Response) -> ShopsearchError:
        """The error an answer of status >= 400 carries (a body that isn't the spec's still gives one)."""
        code, message, details = f"HTTP_{response.status_code}", response.reason_phrase or "error", None
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            code = error["code"]
            message = str(error.get("message") or message)
            raw = error.get("details")
            details = [d for d in raw if isinstance(d, dict)] if isinstance(raw, list) else None
        elif response.text:
            message = response.text[:500]
        return cls(response.status_code, code, message, details, parse_retry_after(response.headers.get("retry-after")))

    @classmethod
    def from_transport(cls, exc: httpx.RequestError) -> ShopsearchError:
        code = TIMEOUT if isinstance(exc, httpx.TimeoutException) else CONNECTION_ERROR
        return cls(None, code, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number, or an HTTP date (RFC 9110 §10.2.3); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
