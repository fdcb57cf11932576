"""Wire helpers shared by the org, project and api_key domains: camelCase models, timestamps,
and keyset-paginated lists ``{"items": [...], "nextCursor": …}`` (CONTRACT §0).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, PlainSerializer, WithJsonSchema
from pydantic.alias_generators import to_camel
from sqlalchemy import Row, Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute, Session

from control_plane.db import isoformat
from shared.errors import validation

if TYPE_CHECKING:
    AnySelect: TypeAlias = Select[*tuple[Any, ...]]
    AnyRow: TypeAlias = Row[*tuple[Any, ...]]
else:
    AnySelect = Select
    AnyRow = Row

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000

Timestamp = Annotated[
    datetime,
    PlainSerializer(lambda value: isoformat(value), return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class WireModel(BaseModel):
    """Answers: camelCase on the wire, built from snake_case attributes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class RequestModel(BaseModel):
    """Request bodies: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# --------------------------------------------------------------------------- cursors
def encode_cursor(created_at: datetime, ident: str) -> str:
    raw = f"{created_at.isoformat()}|{ident}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, _, ident = base64.urlsafe_b64decode(padded.encode()).decode().partition("|")
        if not ident:
            raise ValueError("no id")
        return datetime.fromisoformat(stamp), ident
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise validation("Invalid cursor", [{"path": "cursor", "message": "not a cursor from this list"}]) from exc



def keyset_page(
    db: Session,
    stmt: AnySelect,
    created_col: InstrumentedAttribute[datetime],
    id_col: InstrumentedAttribute[str],
    *,
    limit: int,
    cursor: str | None,
    key: Callable[[AnyRow], tuple[datetime, str]],
) -> tuple[Sequence[AnyRow], str | None]:
    """One page of ``stmt`` ordered by (created_at, id), and the cursor of the next page."""
    if cursor:
        after_ts, after_id = decode_cursor(cursor)
        stmt = stmt.where(or_(created_col > after_ts, and_(created_col == after_ts, id_col > after_id)))
    rows = db.execute(stmt.order_by(created_col, id_col).limit(limit + 1)).all()
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(*key(rows[-1]))


# --------------------------------------------------------------------------- documented errors
class ErrorDetail(BaseModel):
    path: str
    message: str


class ErrorInfo(BaseModel):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorBody(BaseModel):
    """The spec's error body ``{"error": {code, message, details?}}``."""

    error: ErrorInfo


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route can answer."""
    meaning = {
        400: "VALIDATION_ERROR: malformed JSON, wrong types, missing fields",
        401: "UNAUTHENTICATED: missing, malformed, expired or revoked credentials",
        403: "FORBIDDEN, EMAIL_NOT_VERIFIED or IMPERSONATION_FORBIDDEN",
        404: "NOT_FOUND: unknown id, or an id of another organization or project",
        409: "CONFLICT",
    }
    return {status: {"model": ErrorBody, "description": meaning[status]} for status in statuses}


COMMON_ERRORS = error_responses(400, 401, 403, 404)
