"""What every domain puts on the wire: camelCase models and timestamps, list cursors and keyset
pages (CONTRACT §0: ``?limit=&cursor=``, answers ``{"items": [...], "nextCursor": …}``), the
documented error body, JSON responses encoded with orjson, and the routers whose JSON bodies hold
only what orjson can encode.

A cursor is the URL-safe base64 of the key parts of the last row of a page, so a list resumes after
that row (keyset paging); anything that doesn't decode is a 400 ``VALIDATION_ERROR`` on ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, TypeVar, Union, get_args, get_origin

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.routing import APIRoute
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PlainSerializer,
    Strict,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from sqlalchemy import Row, Select, and_, or_
from sqlalchemy.orm import InstrumentedAttribute, Session
from starlette.responses import Response

from control_plane.db import isoformat
from shared.errors import ServiceError, validation
from shared.jsonvalue import json_problem

if TYPE_CHECKING:
    AnySelect: TypeAlias = Select[*tuple[Any, ...]]
    AnyRow: TypeAlias = Row[*tuple[Any, ...]]
else:
    AnySelect = Select
    AnyRow = Row


# --------------------------------------------------------------------------- models
Timestamp = Annotated[
    datetime,
    PlainSerializer(lambda value: isoformat(value), return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class _DocumentedNotNull:
    """Documents a ``T | None`` field as ``T``: the answer leaves it out rather than send null."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
        if len(branches) == 1:
            del schema["anyOf"]
            schema.update(branches[0])
        return schema


_T = TypeVar("_T")
# An answer field that is left out when None (a oneway synonym has no `terms`), never sent as null.
OmittedWhenNone = Annotated[
    _T | None,
    Field(exclude_if=lambda value: value is None, json_schema_extra=lambda schema: schema.pop("default", None)),
    _DocumentedNotNull(),
]


class WireModel(BaseModel):
    """Answers: camelCase on the wire, built from snake_case attributes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class RequestModel(BaseModel):
    """Request bodies: camelCase on the wire, unknown fields refused, and each value of the JSON type
    the OpenAPI document gives it (strict: no ``"5"`` for 5, no 0 for false, no number for a date).
    An integer is what JSON Schema calls one: 5 or 5.0 (a number whose fraction is zero)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(isinstance(value, float) for value in data.values()):
            names = _integer_fields(cls)
            return {key: int(value) if key in names and isinstance(value, float) and value.is_integer() else value
                    for key, value in data.items()}
        return data


@functools.cache
def _integer_fields(model: type[BaseModel]) -> frozenset[str]:
    """The names and aliases of a model's fields typed ``int`` (or ``int | None``)."""
    names: set[str] = set()
    for name, field in model.model_fields.items():
        kinds = get_args(field.annotation) if get_origin(field.annotation) in (Union, UnionType) else (field.annotation,)
        if int in kinds:
            names.update({name, field.alias or name})
    return frozenset(names)


def documented_as(component: str, schema: dict[str, Any] | None = None) -> WithJsonSchema:
    """A value documented by a component of the OpenAPI document that no model defines (``Filter``,
    ``InlineProfile``): ``schema`` stands for it elsewhere, the document refers to the component."""
    return WithJsonSchema({**(schema or {}), COMPONENT_MARK: component})


COMPONENT_MARK = "x-component"


def _text(value: Any) -> Any:
    if not isinstance(value, str | datetime):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


# A request date-time: an ISO 8601 string (bodies are validated as Python values, where strict mode
# takes no string for a datetime; a number is refused, as the document's `format: date-time` says).
JsonDateTime = Annotated[datetime, Strict(False), BeforeValidator(_text)]
# A name of 1 to 200 characters, one of them not a space; stored without the spaces around it.
TrimmedName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"\S"), AfterValidator(str.strip)]
# A body property holding a FILTER (CONTRACT §5): documented by the `Filter` component (its JSON Schema,
# beside the bounds it states, in shared.limits); checked by the service that takes it.
Filter = Annotated[dict[str, Any], documented_as("Filter", {"type": "object"})]


# --------------------------------------------------------------------------- cursors
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


def _timestamp(stamp: str) -> datetime:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError as exc:
        raise invalid_cursor() from exc


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


# --------------------------------------------------------------------------- JSON responses
class JSONBody(Response):
    """A JSON response serialized with orjson (several times faster than the standard encoder)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)

    @classmethod
    def raw(cls, body: bytes, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
        """A response from bytes that are already JSON (cached answers)."""
        return Response(content=body, status_code=status_code, headers=headers, media_type=cls.media_type)


# --------------------------------------------------------------------------- JSON requests
# What may hold a number outside the 64-bit integer range: 19 digits in a row (the shortest integer
# literal that may fall outside), a digit with an exponent (1e19), or the NaN / Infinity that
# Python's JSON parser reads and JSON lacks. Bytes are translated to "1" (a digit), "e" (e or E),
# "+" or "." (a regex took 8 ms on a 600 KB upload, this 0.9 ms; parsing it takes 1.5 ms).
_DIGIT_OR_NOT = bytes(
    0x31 if 0x30 <= b <= 0x39 else 0x65 if b in b"eE" else 0x2B if b == 0x2B else 0x2E for b in range(256)
)
_LONG_RUN = b"1" * 19


def _suspect(body: bytes) -> bool:
    if b"NaN" in body or b"Infinity" in body:
        return True
    shape = body.translate(_DIGIT_OR_NOT)
    return _LONG_RUN in shape or b"1e1" in shape or b"1e+1" in shape


_MAX_BODY_DEPTH = 10_000  # deeper bodies are malformed already (the parser's recursion limit)


class JsonBodyRoute(APIRoute):
    """A route that refuses a JSON body holding a number outside the 64-bit integer range, NaN or an
    infinity with a 400 ``VALIDATION_ERROR`` naming its path, before FastAPI reads the body for the
    endpoint. orjson (the stored form, the engine's, cache keys, every answer) refuses such integers
    wherever they are first encoded, and writes NaN as null, so they must not reach a service; the
    OpenAPI document bounds every number so (``control_plane.openapi``). A scan of the raw body
    (:func:`_suspect`) decides; only a body it flags is parsed here (barcodes in strings, say)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            if request.method in ("POST", "PUT", "PATCH"):
                body = await request.body()  # cached on the request: FastAPI reads it from there
                if _suspect(body):
                    _refuse_unstorable(body)
            return await handler(request)

        return checked


def _refuse_unstorable(body: bytes) -> None:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return  # malformed: FastAPI answers it as such
    problem = json_problem(value, _MAX_BODY_DEPTH)
    if problem is not None:
        raise validation("The body holds a number that cannot be stored", [problem])


def api_router(**kwargs: Any) -> APIRouter:
    """Every domain's router: its routes check JSON bodies (:class:`JsonBodyRoute`)."""
    return APIRouter(route_class=JsonBodyRoute, **kwargs)
