"""The Locust user class of the scenarios: it talks to the API through the Python client
(``shopsearch_client``), as a shop's code would, and reports each call to Locust."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx
from locust import User
from shopsearch_client import NO_RETRY, Client


class Measured(httpx.HTTPTransport):
    """The HTTP transport of a user's client: remembers the size of the last answer."""

    last_size = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.last_size = int(response.headers.get("content-length") or 0)
        return response


class ApiUser(User):
    """Each ``measure`` block is one Locust request: its name, its time, a failure when the block
    raises (an error answer, an answer that is not the documented shape, a check of the scenario).
    The clients never retry, so every 429 or 503 shows as a failure."""

    abstract = True
    transport: Measured

    def api(self, key: str, headers: dict[str, str] | None = None) -> Client:
        self.transport = Measured()
        return Client(self.host, key, headers=headers, retry=NO_RETRY, timeout=30, transport=self.transport)

    @contextlib.contextmanager
    def measure(self, name: str, method: str = "POST") -> Iterator[None]:
        started = time.perf_counter()
        failure: Exception | None = None
        try:
            yield
        except Exception as exc:  # counted as a Locust failure; the user goes on
            failure = exc
        self.environment.events.request.fire(
            request_type=method, name=name, response_time=(time.perf_counter() - started) * 1000,
            response_length=self.transport.last_size, exception=failure, context={})
