"""``Client`` and ``AsyncClient``: the same methods, answers or awaitables of them."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import httpx

from shopsearch_client._calls import Async, Context, Sync
from shopsearch_client._handles import Root
from shopsearch_client._runners import AsyncRunner, SyncRunner
from shopsearch_client.retry import RetryPolicy

__version__ = "0.1.0"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


def _headers(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    out = {"User-Agent": f"shopsearch-client-python/{__version__}", "Accept": "application/json"}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    out.update(headers or {})
    return out


class Client(Root[Sync]):
    """A client of the shopsearch API at ``url`` (``http://127.0.0.1:8000``) with ``api_key``.

    ``timeout``: seconds (or an :class:`httpx.Timeout`) per request; ``retry``: when and how often to
    retry (:class:`RetryPolicy`; ``RetryPolicy(max_retries=0)`` never retries); ``headers``: sent with
    every request (a server using a public key sends the shop's ``Origin``); ``transport``: an httpx
    transport (proxies, tests). Close it (``with Client(…) as client:``) to release its connections.
    """

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        http = httpx.Client(base_url=url, headers=_headers(api_key, headers), timeout=timeout, transport=transport)
        self.url = url.rstrip("/")
        self._runner = SyncRunner(http)
        super().__init__(Context[Sync](self._runner, retry or RetryPolicy()))

    def close(self) -> None:
        self._runner.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class AsyncClient(Root[Async]):
    """The asyncio twin of :class:`Client`: the same handles and methods, each awaited."""

    def __init__(self, url: str, api_key: str | None = None, *, timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        http = httpx.AsyncClient(base_url=url, headers=_headers(api_key, headers), timeout=timeout,
                                 transport=transport)
        self.url = url.rstrip("/")
        self._runner = AsyncRunner(http)
        super().__init__(Context[Async](self._runner, retry or RetryPolicy()))

    async def aclose(self) -> None:
        await self._runner.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
