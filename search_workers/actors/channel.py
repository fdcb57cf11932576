"""A direct channel to a shard actor's searches, for callers on the actor's own node.

An actor call costs Ray's machinery on both sides (submission, the core workers' IO threads, task
execution): ~0.7 ms of CPU per call on a 2-core machine, as much as the engine's own work for a
storefront query. Searches are small, frequent and read-only, so an actor also serves them on a
Unix socket (:class:`ChannelServer`) and an API process on the same node sends them there
(:class:`ChannelClient`); everything else - placement, restarts, applies, probes, fail-over,
retries - stays Ray calls. Across nodes searches stay Ray calls (batched, see
:mod:`.transport`).

* The socket is in Linux's abstract namespace (``\\0shopsearch-<pid>-<random>``): nothing to clean
  up when the actor dies, and a restarted actor has a new address. Every connection's peer must be
  this user (``SO_PEERCRED``), as a socket file in a private directory would require.
* Frames, both ways: ``!IIB`` (payload length, request id, kind) and the payload. A request carries
  one pickled shard query (:func:`~.factory.pack_query`); an answer carries what
  :meth:`~.factory.ShardActor.search_many_packed` answers for that one query: kind 0, the msgpack
  bytes; kind 1, the pickled list (its safety net). A request whose query does not unpickle is
  answered with the error for that request.
* One thread per connection reads a request, answers it and reads the next: a caller's requests
  are answered in order; callers (API processes, their event loops) are served concurrently, the
  engine serialising what it must.
* A client whose connection breaks, or whose oldest request waited longer than its timeout (the
  actor hangs), closes it: every request in flight settles as "unavailable" (``None``) and the
  caller takes Ray's path (fail-over, retries, revival) - see ``Lane`` in :mod:`.transport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import secrets
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

HEADER = struct.Struct("!IIB")
#: the largest frame either side accepts (a page of big documents stays far below)
MAX_FRAME = 64 * 1024 * 1024
KIND_MSGPACK = 0
KIND_PICKLE = 1

#: a settled request: the answer frame's (kind, payload), or ``None`` - the channel broke
Reply = tuple[int, bytes] | None


def supported() -> bool:
    """Abstract Unix sockets and ``SO_PEERCRED`` are Linux's."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_PEERCRED")


class ChannelServer:
    """Serves ``answer(queries) -> bytes | list`` (one pickled query per request) on an abstract
    Unix socket, one daemon thread per connection."""

    max_connections = 64

    def __init__(self, answer: Callable[[list[bytes]], Any]) -> None:
        self._answer = answer
        self.address = f"\0shopsearch-{os.getpid()}-{secrets.token_hex(8)}"
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.address)
        self._sock.listen(self.max_connections)
        self._uid = os.getuid()
        self._open = 0
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="shard-channel-accept", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            if not self._admit(conn):
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="shard-channel", daemon=True).start()

    def _admit(self, conn: socket.socket) -> bool:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        with self._lock:
            if uid != self._uid or self._open >= self.max_connections:
                log.warning("shard channel refused a connection (uid %s, %s open)", uid, self._open)
                return False
            self._open += 1
        return True

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn, conn.makefile("rb", buffering=256 * 1024) as rfile:
                while True:
                    head = rfile.read(HEADER.size)
                    if len(head) < HEADER.size:
                        return  # the caller closed
                    size, rid, _kind = HEADER.unpack(head)
                    if size > MAX_FRAME:
                        return
                    query = rfile.read(size)
                    if len(query) < size:
                        return
                    kind, payload = self._reply(query)
                    conn.sendall(HEADER.pack(len(payload), rid, kind) + payload)
        except OSError:
            return
        finally:
            with self._lock:
                self._open -= 1

    def _reply(self, query: bytes) -> tuple[int, bytes]:
        out = self._answer([query])
        if isinstance(out, bytes | bytearray):
            return KIND_MSGPACK, bytes(out)
        return KIND_PICKLE, pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


class ChannelClient(asyncio.Protocol):
    """One connection to a :class:`ChannelServer`, on one event loop; requests are pipelined."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.transport: Any = None  # an asyncio.Transport (uvloop's are not its subclasses)
        self.closed = False
        self._buf = bytearray()
        self._next = 0
        # request id -> (sent at, callback); insertion order is sending order
        self._pending: dict[int, tuple[float, Callable[[Reply], None]]] = {}

    @classmethod
    async def connect(cls, address: str, timeout: float) -> ChannelClient:
        loop = asyncio.get_running_loop()
        # connected here, not by the loop: uvloop refuses abstract addresses (EINVAL); a Unix
        # connect does not wait unless the listener's backlog is full, hence the short timeout
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(min(timeout, 1.0))
            sock.connect(address)
            sock.setblocking(False)
            _, client = await loop.create_unix_connection(lambda: cls(timeout), sock=sock)
        except BaseException:
            sock.close()
            raise
        return client

    # -- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        at = 0
        end = len(buf)
        while end - at >= HEADER.size:
            size, rid, kind = HEADER.unpack_from(buf, at)
            if size > MAX_FRAME:
                self.close()
                return
            if end - at - HEADER.size < size:
                break
            start = at + HEADER.size
            payload = bytes(buf[start:start + size])
            at = start + size
            entry = self._pending.pop(rid, None)
            if entry is not None:
                entry[1]((kind, payload))
        if at:
            del buf[:at]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        pending, self._pending = self._pending, {}
        for _, callback in pending.values():
            callback(None)

    # -- requests ------------------------------------------------------------------------
    def send(self, payload: bytes, callback: Callable[[Reply], None], now: float) -> bool:
        """Send one request; ``callback(reply)`` runs on the loop when it settles. ``False``: the
        channel is closed (or was just closed because the actor stopped answering)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            return False
        if self._pending:
            sent_at, _ = next(iter(self._pending.values()))
            if now - sent_at > self.timeout:
                log.warning("shard channel: no answer for %.1f s; closing it", now - sent_at)
                self.close()
                return False
        self._next = (self._next + 1) & 0xFFFFFFFF
        self._pending[self._next] = (now, callback)
        self.transport.write(HEADER.pack(len(payload), self._next, 0) + payload)
        return True

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()  # connection_lost settles what is pending
        else:
            self.connection_lost(None)
