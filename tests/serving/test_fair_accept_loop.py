"""The serving processes' event loop: one accepted connection per wake-up, TCP_NODELAY on each, a
step's writes in one send."""

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


def test_the_worker_holding_fewer_connections_takes_the_next() -> None:
    """Two workers' loops on one listening socket, keep-alive clients arriving one by one: they end
    with two connections each (without the wait, the same idle worker often took all four)."""
    import threading
    import time

    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    held: dict[int, int] = {}
    loops = [FairAcceptLoop(), FairAcceptLoop()]
    ready = threading.Barrier(3)
    stop = threading.Event()

    def serve(k: int) -> None:
        loop = loops[k]
        loop.ACCEPT_DELAY_PER_CONNECTION, loop.MAX_ACCEPT_DELAY = 0.05, 0.5  # wide margins on a loaded machine

        async def run() -> None:
            server = await loop.create_server(asyncio.Protocol, sock=listening.dup())  # a worker's own fd
            ready.wait()
            while not stop.is_set():
                held[k] = loop.held()
                await asyncio.sleep(0.005)
            server.close()

        loop.run_until_complete(run())
        loop.close()

    threads = [threading.Thread(target=serve, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    ready.wait()
    clients = []
    try:
        for _ in range(4):
            clients.append(socket.create_connection(listening.getsockname()))
            time.sleep(0.3)
        assert sorted(held.values()) == [2, 2]
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for c in clients:
            c.close()
        listening.close()


def _served(writes: list[bytes], then_close: bool = True) -> tuple[bytes, int]:
    """Run a server on :class:`FairAcceptLoop` whose protocol writes ``writes`` in one step when a
    client connects (then closes); what the client received, and how many sends the server made."""
    loop = FairAcceptLoop()
    sends: list[int] = []
    original = socket.socket.send
    served: list[tuple[str, int]] = []  # the listening address: the server's side of a connection has it

    def counting(self: socket.socket, data: bytes, *args: int) -> int:
        """Counts the server's sends only: the patch is process-wide, and a thread left by another
        test in this worker may send on its own sockets meanwhile."""
        try:
            ours = self.getsockname() in served
        except OSError:
            ours = False
        if ours:
            sends.append(len(data))
        return original(self, data, *args)

    class Answer(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.WriteTransport)
            for data in writes:
                transport.write(data)
            if then_close:
                transport.close()

    received = bytearray()

    async def run() -> None:
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.bind(("127.0.0.1", 0))
        listening.listen(4)
        served.append(listening.getsockname())
        server = await loop.create_server(Answer, sock=listening)
        client = socket.create_connection(listening.getsockname())
        client.setblocking(False)
        socket.socket.send = counting  # type: ignore[method-assign]
        try:
            while True:
                try:
                    chunk = await loop.sock_recv(client, 1 << 16)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                received.extend(chunk)
        finally:
            socket.socket.send = original  # type: ignore[method-assign]
            client.close()
            server.close()

    try:
        loop.run_until_complete(asyncio.wait_for(run(), 30))
    finally:
        loop.close()
    return bytes(received), len(sends)


def test_a_steps_writes_leave_in_one_send() -> None:
    head, body = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n", b"hello"
    received, sends = _served([head, body, b"", bytearray(b"!")])
    assert received == head + body + b"!"  # in order, the empty write ignored, then closed
    assert sends == 1


def test_a_big_answer_arrives_whole_and_in_order() -> None:
    """Larger than the socket buffer: the first send is partial, the writer callback sends the rest."""
    parts = [bytes([n % 251]) * 1_000_003 for n in range(6)]
    received, sends = _served(parts)
    assert received == b"".join(parts)
    assert sends > 1
