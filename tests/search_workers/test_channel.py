"""The shard actors' search channel on its own (no Ray): frames, pipelining, errors, timeouts."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

import pytest

from cli.serve import FairAcceptLoop
from search_workers.actors import channel
from search_workers.actors.channel import HEADER, KIND_MSGPACK, KIND_PICKLE, ChannelClient, ChannelServer

pytestmark = pytest.mark.skipif(not channel.supported(), reason="abstract Unix sockets are Linux's")


def _refused(s: socket.socket, request: bytes = b"") -> bool:
    """Whether the server closes ``s`` without answering ``request`` (an orderly close, a reset,
    or a pipe already broken when the request goes out)."""
    s.settimeout(5)
    try:
        s.sendall(request)
        return s.recv(16) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def _echo(queries: list[bytes]) -> bytes:
    return b"answer:" + queries[0]


async def _ask(client: ChannelClient, payload: bytes) -> channel.Reply:
    fut: asyncio.Future[channel.Reply] = asyncio.get_running_loop().create_future()
    assert client.send(payload, fut.set_result, asyncio.get_running_loop().time())
    return await fut


async def test_requests_are_answered_in_order_and_pipelined():
    server = ChannelServer(_echo)
    try:
        client = await ChannelClient.connect(server.address, 5)
        replies = await asyncio.gather(*(_ask(client, f"q{i}".encode() * (i * 500 + 1)) for i in range(40)))
        assert replies == [(KIND_MSGPACK, b"answer:" + f"q{i}".encode() * (i * 500 + 1)) for i in range(40)]
        client.close()
    finally:
        server.close()


async def test_an_answer_without_bytes_form_comes_pickled():
    server = ChannelServer(lambda qs: [{"not": "bytes"}, qs[0]])
    try:
        client = await ChannelClient.connect(server.address, 5)
        kind, payload = await _ask(client, b"x")
        assert kind == KIND_PICKLE
        import pickle

        assert pickle.loads(payload) == [{"not": "bytes"}, b"x"]
    finally:
        server.close()


def test_works_on_the_serving_processes_loop():
    """The serving processes run :class:`FairAcceptLoop`, whose transports set TCP options: a Unix
    socket has none, and must still connect (it did not: the channel silently fell back to Ray)."""
    server = ChannelServer(_echo)
    loop = FairAcceptLoop()
    try:
        async def run() -> channel.Reply:
            client = await ChannelClient.connect(server.address, 5)
            return await _ask(client, b"q")

        assert loop.run_until_complete(run()) == (KIND_MSGPACK, b"answer:q")
    finally:
        loop.close()
        server.close()


async def test_a_closed_server_settles_what_is_in_flight_as_unavailable():
    release = threading.Event()

    def slow(queries: list[bytes]) -> bytes:
        release.wait(5)
        return b"late"

    server = ChannelServer(slow)
    client = await ChannelClient.connect(server.address, 5)
    pending = [asyncio.ensure_future(_ask(client, b"q")) for _ in range(3)]
    await asyncio.sleep(0.05)
    client.transport.abort()  # the connection breaks (as when the actor process dies)
    assert await asyncio.gather(*pending) == [None, None, None]
    assert client.closed
    assert not client.send(b"q", lambda r: None, 0.0)
    release.set()
    server.close()
    with pytest.raises(OSError):  # nobody listens at that address any more
        await ChannelClient.connect(server.address, 1)


async def test_an_actor_that_stops_answering_is_given_up_after_the_timeout():
    hang = threading.Event()
    server = ChannelServer(lambda qs: (hang.wait(10), b"x")[1])
    try:
        client = await ChannelClient.connect(server.address, timeout=0.2)
        first = asyncio.ensure_future(_ask(client, b"q"))
        await asyncio.sleep(0.3)
        # the oldest request waited past the timeout: the next send closes the channel instead
        assert not client.send(b"q", lambda r: None, asyncio.get_running_loop().time())
        assert await first is None
    finally:
        hang.set()
        server.close()


def test_an_oversized_frame_ends_the_connection():
    server = ChannelServer(_echo)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(server.address)
            assert _refused(s, HEADER.pack(channel.MAX_FRAME + 1, 1, 0))
            # and the server still serves others
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(server.address)
            s.sendall(HEADER.pack(1, 7, 0) + b"q")
            s.settimeout(5)
            head = s.recv(HEADER.size)
            assert HEADER.unpack(head)[1:] == (7, KIND_MSGPACK)
    finally:
        server.close()


def test_connections_of_another_user_are_refused(monkeypatch):
    """``SO_PEERCRED``: only this user's processes may send searches (the queries are pickles)."""
    server = ChannelServer(_echo)
    try:
        monkeypatch.setattr(server, "_uid", os.getuid() + 1)  # as if we were someone else
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(server.address)
            assert _refused(s, HEADER.pack(1, 1, 0) + b"q")
    finally:
        server.close()


def test_connections_beyond_the_limit_are_refused(monkeypatch):
    server = ChannelServer(_echo)
    monkeypatch.setattr(server, "max_connections", 2)
    held = []
    try:
        for _ in range(2):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(server.address)
            held.append(s)
        deadline = time.monotonic() + 5
        while server._open < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(server.address)
            assert _refused(s)
    finally:
        for s in held:
            s.close()
        server.close()
