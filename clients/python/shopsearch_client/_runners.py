"""The two thin transports: they perform an operation's instructions (send a request over httpx,
sleep) and nothing else. Everything they run is written once in the sans-IO operations."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from shopsearch_client._core import Op, Request, Sleep

if TYPE_CHECKING:
    from shopsearch_client._calls import Fetch
    from shopsearch_client._handles import ReplaceSession

T = TypeVar("T")


def _request(instruction: Request) -> dict[str, Any]:
    return {"method": instruction.method, "url": instruction.path, "params": instruction.params,
            "content": instruction.content, "headers": instruction.headers}


class SyncRunner:
    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def run(self, op: Op[T]) -> T:
        try:
            instruction = op.send(None)
            while True:
                if isinstance(instruction, Sleep):
                    time.sleep(instruction.seconds)
                    instruction = op.send(None)
                    continue
                try:
                    response = self.http.request(**_request(instruction))
                except httpx.RequestError as exc:
                    instruction = op.throw(exc)
                else:
                    instruction = op.send(response)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            op.close()

    def iterate(self, fetch: Fetch[T]) -> Iterator[T]:
        cursor: str | None = None
        while True:
            page = self.run(fetch(cursor))
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    @contextlib.contextmanager
    def scope(self, opening: Op[ReplaceSession[Any]]) -> Iterator[ReplaceSession[Any]]:
        session = self.run(opening)
        try:
            yield session
        except BaseException as exc:
            self.run(session._finish(exc))
            raise
        self.run(session._finish(None))

    def close(self) -> None:
        self.http.close()


class AsyncRunner:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def run(self, op: Op[T]) -> T:
        try:
            instruction = op.send(None)
            while True:
                if isinstance(instruction, Sleep):
                    await asyncio.sleep(instruction.seconds)
                    instruction = op.send(None)
                    continue
                try:
                    response = await self.http.request(**_request(instruction))
                except httpx.RequestError as exc:
                    instruction = op.throw(exc)
                else:
                    instruction = op.send(response)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            op.close()

    async def iterate(self, fetch: Fetch[T]) -> AsyncIterator[T]:
        cursor: str | None = None
        while True:
            page = await self.run(fetch(cursor))
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    @contextlib.asynccontextmanager
    async def scope(self, opening: Op[ReplaceSession[Any]]) -> AsyncIterator[ReplaceSession[Any]]:
        session = await self.run(opening)
        try:
            yield session
        except BaseException as exc:
            await self.run(session._finish(exc))
            raise
        await self.run(session._finish(None))

    async def close(self) -> None:
        await self.http.aclose()
