"""List cursors (CONTRACT §0: ``?limit=&cursor=``, answers ``nextCursor``): one opaque codec for all lists.

A cursor is the URL-safe base64 of the key parts of the last row of a page, so a list resumes after
that row (keyset paging); anything that doesn't decode is a 400 ``VALIDATION_ERROR`` on ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from fastapi import Query

from shared.errors import ServiceError, validation

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
# The list query parameters every list route takes.
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size")]
Cursor = Annotated[str | None, Query(description="`nextCursor` of the previous page")]

_SEPARATOR = "\x1f"
MAX_BIGINT = 2**63 - 1


def encode_cursor(*parts: str) -> str:
    raw = _SEPARATOR.join(parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def invalid_cursor() -> ServiceError:
    return validation("Invalid cursor", [{"path": "cursor", "message": "not a cursor from this list"}])


def decode_cursor(cursor: str, parts: int = 1) -> tuple[str, ...]:
    """The ``parts`` key values a cursor holds (never a NUL: PostgreSQL text can't hold one)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = tuple(base64.urlsafe_b64decode(padded.encode()).decode().split(_SEPARATOR))
    except (ValueError, UnicodeDecodeError, binascii.Error):
        values = ()
    if len(values) != parts or not all(values) or any("\x00" in value for value in values):
        raise invalid_cursor()
    return values


def decode_int_cursor(cursor: str) -> int:
    """A cursor holding one non-negative integer that fits a BIGINT column (ASCII digits only:
    ``str.isdigit`` also accepts "²", which ``int`` refuses)."""
    (raw,) = decode_cursor(cursor)
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_BIGINT:
        raise invalid_cursor()
    return int(raw)
