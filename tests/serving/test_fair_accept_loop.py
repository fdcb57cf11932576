"""The serving processes' event loop: one accepted connection per wake-up, TCP_NODELAY on each."""

from __future__ import annotations

import asyncio
import socket

from cli.serve import FairAcceptLoop


def test_accepts_one_per_wake_up_with_nodelay() -> None:
    loop = FairAcceptLoop()
    try:
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as the supervisor hands it over
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        accepted: list[socket.socket] = []
        calls: list[int] = []
        original = asyncio.SelectorEventLoop._accept_connection

        def spy(self, factory, sock, sslcontext=None, server=None, backlog=100, *args, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(backlog)
            return original(self, factory, sock, sslcontext, server, backlog, *args, **kwargs)

        asyncio.SelectorEventLoop._accept_connection = spy  # type: ignore[method-assign]

        class Keep(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                accepted.append(transport.get_extra_info("socket"))

        async def run() -> None:
            server = await loop.create_server(Keep, sock=listening)
            clients = [socket.create_connection(listening.getsockname()) for _ in range(3)]
            for _ in range(100):
                if len(accepted) == 3:
                    break
                await asyncio.sleep(0.01)
            for client in clients:
                client.close()
            server.close()

        try:
            loop.run_until_complete(run())
        finally:
            asyncio.SelectorEventLoop._accept_connection = original  # type: ignore[method-assign]
        assert len(accepted) == 3
        assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in accepted)
        assert calls and set(calls) == {1}  # never a burst per wake-up
    finally:
        loop.close()
