"""List cursors (CONTRACT §0: ``?limit=&cursor=``, answers ``nextCursor``): one opaque codec for all lists.

A cursor is the URL-safe base64 of the key parts of the last row of a page, so a list resumes after
that row (keyset paging); anything that doesn't decode is a 400 ``VALIDATION_ERROR`` on ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from fastapi import Query

from shared.errors import validation

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
# The list query parameters every list route takes.
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size")]
Cursor = Annotated[str | None, Query(description="`nextCursor` of the previous page")]

_SEPARATOR = "\x1f"


def encode_cursor(*parts: str) -> str:
    raw = _SEPARATOR.join(parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, parts: int = 1) -> tuple[str, ...]:
    """The ``parts`` key values a cursor holds."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = tuple(base64.urlsafe_b64decode(padded.encode()).decode().split(_SEPARATOR))
    except (ValueError, UnicodeDecodeError, binascii.Error):
        values = ()
    if len(values) != parts or not all(values):
        raise validation("Invalid cursor", [{"path": "cursor", "message": "not a cursor from this list"}])
    return values
