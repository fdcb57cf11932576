"""Wire helpers shared by the org, project and api_key domains: camelCase models, timestamps,
and keyset-paginated lists ``{"items": [...], "nextCursor": …}`` (CONTRACT §0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, PlainSerializer, WithJsonSchema
from pydantic.alias_generators import to_camel
from sqlalchemy import Row, Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute, Session

from control_plane.db import isoformat
from control_plane.pagination import decode_cursor, encode_cursor
from shared.errors import validation

if TYPE_CHECKING:
    AnySelect: TypeAlias = Select[*tuple[Any, ...]]
    AnyRow: TypeAlias = Row[*tuple[Any, ...]]
else:
    AnySelect = Select
    AnyRow = Row


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
def _timestamp(stamp: str) -> datetime:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError as exc:
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
        stamp, after_id = decode_cursor(cursor, parts=2)
        after_ts = _timestamp(stamp)
        stmt = stmt.where(or_(created_col > after_ts, and_(created_col == after_ts, id_col > after_id)))
    rows = db.execute(stmt.order_by(created_col, id_col).limit(limit + 1)).all()
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    created, ident = key(rows[-1])
    return rows, encode_cursor(created.isoformat(), ident)


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
