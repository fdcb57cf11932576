"""The sans-IO core: every call is an *operation*, a generator that yields what it needs done —
:class:`Request` (send it, give back the :class:`httpx.Response`, or throw the transport error in)
or :class:`Sleep` — and returns the answer. Retries, backoff, batching, task polling and paging are
written once here and in :mod:`shopsearch_client._handles`; the sync and async runners
(:mod:`shopsearch_client._runners`) only send requests and sleep.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
import pydantic_core
from pydantic import BaseModel

from shopsearch_client.errors import ShopsearchError
from shopsearch_client.retry import RetryPolicy

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    params: Mapping[str, Any] | None = None
    content: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


Instruction: TypeAlias = Request | Sleep
# An operation: yields instructions, is sent the httpx.Response of each Request (None after a Sleep),
# returns its answer.
Op: TypeAlias = Generator[Instruction, Any, T]


@dataclass(frozen=True, slots=True)
class Route:
    """One route of the API: its OpenAPI path template, whether repeating it is harmless, and the
    model of its answer (None: 204, or a JSON value returned as decoded)."""

    method: str
    path: str
    idempotent: bool
    answer: Any = None

    def url(self, **ids: str) -> str:
        return self.path.format(**{name: quote(str(value), safe="") for name, value in ids.items()})


def encode(body: Any) -> bytes:
    """JSON bytes, encoded once: a retried call sends the very same bytes (its Idempotency-Key covers them).

    A model as the body gives its set fields by their JSON names; models inside lists and mappings
    give all their fields (pydantic's encoder, which also takes datetimes, decimals and sets).
    """
    if isinstance(body, BaseModel):
        body = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return pydantic_core.to_json(body, by_alias=True)


def send(request: Request, retry: RetryPolicy, *, safe: bool) -> Op[httpx.Response]:
    """Send ``request`` until it is answered below 400 or the retry policy gives up (then raise)."""
    keyed = "Idempotency-Key" in request.headers
    safe = safe or keyed
    attempt = 0
    while True:
        try:
            response: httpx.Response = yield request
        except httpx.RequestError as exc:
            delay = retry.transport_delay(attempt, exc, safe) if isinstance(exc, httpx.TransportError) else None
            if delay is None:
                raise ShopsearchError.from_transport(exc) from exc
        else:
            if response.status_code < 400:
                return response
            error = ShopsearchError.from_response(response)
            delay = retry.error_delay(attempt, error, safe, keyed)
            if delay is None:
                raise error
        yield Sleep(delay)
        attempt += 1


def call(route: Route, retry: RetryPolicy, ids: Mapping[str, str], *, params: Mapping[str, Any] | None = None,
         body: Any = None, headers: Mapping[str, str] | None = None) -> Op[Any]:
    """One call of ``route``: its answer parsed into ``route.answer`` (None for 204)."""
    content = None if body is None else encode(body)
    request_headers = dict(headers or {})
    if content is not None:
        request_headers["Content-Type"] = "application/json"
    query = {key: value for key, value in (params or {}).items() if value is not None}
    request = Request(route.method, route.url(**ids), query or None, content, request_headers)
    response = yield from send(request, retry, safe=route.idempotent)
    if response.status_code == 204 or not response.content:
        return None
    if route.answer is None:
        return response.json()
    return route.answer.model_validate_json(response.content)
