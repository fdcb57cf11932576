"""Renders every failure in the spec's body ``{"error": {code, message, details?}}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm.exc import StaleDataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from control_plane.methods import app_path, method_not_allowed
from control_plane.outages import REDIS_ERRORS, unavailable, unavailable_part
from control_plane.wire import JSONBody
from shared.errors import ErrorCode, ServiceError

log = logging.getLogger("shopsearch.errors")


def error_response(error: ServiceError) -> JSONBody:
    return JSONBody(error.body(), status_code=error.status, headers=error.headers)


def dotted_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("body", 3, "price")`` → ``[3].price``; ``("query", "limit")`` → ``limit``."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def validation_details(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"path": dotted_path(e.get("loc", ())), "message": e.get("msg", "invalid")} for e in errors]


def profile_validation_error(errors: list[dict[str, Any]], under: str | None = None) -> ServiceError:
    """Body errors of a profile (or of the inline ``profile`` of a search) are PROFILE_INVALID.

    Paths are given relative to the profile (``queryFields.title``), as for a saved profile.
    """
    profile_errors, other = [], []
    for error in errors:
        loc = list(error.get("loc", ()))
        if loc and loc[0] == "body":
            loc = loc[1:]
        if under is None:
            profile_errors.append({**error, "loc": loc})
        elif loc and loc[0] == under:
            profile_errors.append({**error, "loc": loc[1:]})
        else:
            other.append(error)
    if other or not profile_errors:
        return ServiceError(ErrorCode.VALIDATION_ERROR, "The request is not valid", validation_details(errors))
    return ServiceError(ErrorCode.PROFILE_INVALID, "The search profile is invalid", validation_details(profile_errors))


def validation_error_as(chooser: Any) -> Any:
    """Decorate an endpoint so its body validation failures are rendered by ``chooser(errors)``."""

    def decorate(endpoint: Any) -> Any:
        endpoint.validation_error = chooser
        return endpoint

    return decorate


_STATUS_CODES = {
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.PAYLOAD_TOO_LARGE,
    401: ErrorCode.UNAUTHENTICATED,
    403: ErrorCode.FORBIDDEN,
    429: ErrorCode.RATE_LIMITED,
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(_request: Request, exc: ServiceError) -> JSONBody:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONBody:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            message = "Malformed JSON body"
            return error_response(ServiceError(ErrorCode.VALIDATION_ERROR, message, validation_details(errors)))
        route = request.scope.get("route")
        chooser = getattr(getattr(route, "endpoint", None), "validation_error", None)
        if chooser is not None:
            return error_response(chooser(errors))
        return error_response(
            ServiceError(ErrorCode.VALIDATION_ERROR, "The request is not valid", validation_details(errors))
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONBody:
        if exc.status_code == 405:
            return method_not_allowed(request.app, app_path(request.scope))
        code = _STATUS_CODES.get(exc.status_code, ErrorCode.VALIDATION_ERROR)
        message = {404: "No such route"}.get(
            exc.status_code, str(exc.detail)
        )
        response = error_response(ServiceError(code, message))
        response.status_code = exc.status_code
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(IntegrityError)
    @app.exception_handler(StaleDataError)
    async def _integrity_error(request: Request, _exc: Exception) -> JSONBody:
        # A concurrent writer won a race the service checks could not see (two creates of one name,
        # one Idempotency-Key twice at once, a parent deleted meanwhile, a row deleted between its read
        # and its update): the transaction rolled back.
        log.info("write refused by a database constraint on %s %s", request.method, request.url.path)
        return error_response(ServiceError(ErrorCode.CONFLICT, "The write conflicts with a concurrent change; nothing was saved"))

    async def _dependency_error(request: Request, exc: Exception) -> JSONBody:
        # Registered per class so FastAPI answers them without re-raising (as it does for Exception).
        part = unavailable_part(exc)
        if part is None:
            return await _unhandled(request, exc)
        log.warning("%s unavailable on %s %s: %s", part, request.method, request.url.path, exc.__class__.__name__)
        return error_response(unavailable(part))

    for error_class in (DBAPIError, PoolTimeoutError, DisconnectionError, *REDIS_ERRORS):
        app.add_exception_handler(error_class, _dependency_error)

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> JSONBody:
        part = unavailable_part(exc)  # e.g. raised while handling a lost connection
        if part is not None:
            log.warning("%s unavailable on %s %s: %r", part, request.method, request.url.path, exc)
            return error_response(unavailable(part))
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(ServiceError(ErrorCode.INTERNAL, "Internal server error"))


class BodySizeLimit:
    """Refuses bodies over the limit with 413 PAYLOAD_TOO_LARGE, also chunked ones with no length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = ServiceError(ErrorCode.PAYLOAD_TOO_LARGE, f"Request body over {self.max_bytes} bytes")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await error_response(too_large)(scope, receive, send)
                    return
        received = 0
        response_started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # an HTTPException passes FastAPI's body parsing untouched; rendered as 413 below
                    raise StarletteHTTPException(413, too_large.message)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except StarletteHTTPException as exc:
            if exc.status_code != 413 or response_started:
                raise
            await error_response(too_large)(scope, receive, send)
