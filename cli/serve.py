"""``shopsearch serve``: migrate, then run the API (embedded default with no settings)."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import sys
import weakref
from asyncio import selector_events
from typing import TYPE_CHECKING, Any

import typer
import uvicorn

from control_plane.migrate import upgrade
from shared.settings import get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on"),
    port: int = typer.Option(8000, help="Port to listen on"),
    workers: int = typer.Option(
        0, min=0, help="Serving processes (0: one per CPU core; half the cores when searches go to Ray actors)"),
) -> None:
    """Run the API. Applies database migrations first; Ctrl-C stops it cleanly."""
    os.environ["SHOPSEARCH_LISTEN_HOST"] = host  # for this process's settings and its workers'
    get_settings.cache_clear()
    settings = get_settings()
    actors_search = settings.ray_address is not None and not settings.near_replicas
    workers = workers or default_workers(actors_search, os.cpu_count() or 1)
    upgrade(settings)
    settings.signing_key()  # generated here, if it must be, before several workers read it at once
    if workers > 1:
        # the workers read their settings from the environment: tell them they are several
        os.environ["SHOPSEARCH_SERVING_PROCESSES"] = str(workers)
        if settings.ray_address == "local":  # one Ray instance, here, that every worker joins
            from control_plane.shard import start_local_cluster

            os.environ["SHOPSEARCH_RAY_NEAR_REPLICAS"] = str(settings.near_replicas).lower()
            os.environ["SHOPSEARCH_RAY_ADDRESS"] = start_local_cluster()
        # a starting worker imports everything (a few seconds with N at once on N cores) and a
        # follower answers only once its replicas caught up: give startup time before the supervisor
        # takes a worker for hung and replaces it
        uvicorn.run("cli.serve:worker_app", factory=True, host=host, port=port, workers=workers,
                    log_level=settings.log_level.lower(), timeout_worker_healthcheck=60,
                    loop="cli.serve:FairAcceptLoop")
    else:
        uvicorn.run(worker_app(), host=host, port=port, log_level=settings.log_level.lower())


def default_workers(actors_search: bool, cores: int) -> int:
    """One serving process per core; when searches go to the shard actors (Ray mode without near
    replicas) the actors on this machine do the engine's work, so half the cores (at least one): a
    serving process more than that only takes turns with the actors (2 cores, 100k products: 0.76x
    the in-process rate uncached with 2 processes, 0.84x with 1; ``benchmarks/ray_http_bench
    --ray actors:1,actors:2``)."""
    return max(1, cores // 2) if actors_search else cores


def worker_app() -> FastAPI:
    """One serving process's app."""
    # Searches hop between the event loop and shard threads; with the default 5 ms GIL switch
    # interval every hop can wait that long behind a CPU-bound thread. 0.5 ms keeps hops cheap.
    sys.setswitchinterval(0.0005)
    # imported here: the supervisor of several workers never builds an app, and so never loads one
    from control_plane.app import create_app

    app = create_app(get_settings())
    # Everything imported and built so far lives as long as the process: out of the garbage
    # collector's full passes, which otherwise rescan it every few seconds under indexing.
    gc.collect()
    gc.freeze()
    return app


class FairAcceptLoop(asyncio.SelectorEventLoop):
    """An event loop that accepts one connection per wake-up of the listening socket, later the more
    connections it already holds.

    The workers share one listening socket, and an event loop drains every pending connection when
    it wakes (asyncio up to the backlog, uvloop until none is left): the first worker to wake took a
    whole burst, e.g. all 4 keep-alive connections of 4 clients, and the other core sat idle (server
    1.0 core at 4 clients). Taking one at a time was not enough: every worker wakes for each new
    connection, and when both were idle the same one often won them all (1.03 cores measured in
    half the runs). So a worker holding k open connections waits ``k * ACCEPT_DELAY_PER_CONNECTION``
    before it tries: the worker with fewer takes the connection, and when the others are busy (not
    polling) it is still taken after a millisecond or so."""

    ACCEPT_DELAY_PER_CONNECTION = 0.001
    MAX_ACCEPT_DELAY = 0.008

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._served: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
        self._deferred: set[int] = set()

    def held(self) -> int:
        """Open connections accepted by this loop."""
        return sum(1 for t in list(self._served) if not t.is_closing())

    def _accept_connection(self, protocol_factory: Any, sock: Any, sslcontext: Any = None, server: Any = None,
                           backlog: int = 100, *args: Any, **kwargs: Any) -> None:
        held = self.held()
        fd = sock.fileno()
        if not held or fd in self._deferred:
            super()._accept_connection(protocol_factory, sock, sslcontext, server, 1, *args, **kwargs)  # type: ignore[misc]
            return
        self._deferred.add(fd)
        self._remove_reader(fd)  # type: ignore[attr-defined]

        def again() -> None:  # take it if no other worker did (an empty queue is not an error), then wait again
            try:
                if sock.fileno() == fd:
                    super(FairAcceptLoop, self)._accept_connection(  # type: ignore[misc]
                        protocol_factory, sock, sslcontext, server, 1, *args, **kwargs)
                    if not self.is_closed() and sock.fileno() == fd:
                        self._add_reader(fd, self._accept_connection, protocol_factory, sock,  # type: ignore[attr-defined]
                                         sslcontext, server, backlog, *args, **kwargs)
            finally:
                self._deferred.discard(fd)

        self.call_later(min(held * self.ACCEPT_DELAY_PER_CONNECTION, self.MAX_ACCEPT_DELAY), again)

    def _make_socket_transport(self, sock: socket.socket, protocol: Any, waiter: Any = None, *,
                               extra: Any = None, server: Any = None) -> Any:
        # asyncio sets TCP_NODELAY only on sockets made with proto IPPROTO_TCP, and the listening
        # socket the supervisor hands over has proto 0: without it a response's second write (uvicorn
        # writes the head, then the body) waits for the client's delayed ACK, 40 ms
        # (not on the Unix sockets of Ray mode's shard channels, which have no such option)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = CoalescingTransport(self, sock, protocol, waiter, extra, server)
        if server is not None:
            self._served.add(transport)
        return transport


class CoalescingTransport(selector_events._SelectorSocketTransport):  # type: ignore[name-defined,misc]
    """A socket transport whose writes of one loop step leave in one ``send``.

    uvicorn writes a response's head and then its body: two sends, two packets, two wake-ups of
    the client, each send paying the kernel's loopback or NIC path (a sixth of a cached search's
    CPU in profiles). Here a write to an empty buffer is held until the loop's next iteration, when
    whatever the step wrote goes out at once; from there on it is the base transport (a partial
    send leaves the rest to the writer callback, close and write_eof wait for the buffer)."""

    _flush_scheduled = False

    def write(self, data: Any) -> None:
        if (self._buffer or self._conn_lost or self._eof or self._empty_waiter is not None or not data
                or not isinstance(data, (bytes, bytearray, memoryview))):
            super().write(data)  # appends behind held data, or raises/returns as the base does
            return
        self._buffer.extend(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)
        self._maybe_pause_protocol()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._buffer or self._conn_lost:
            return
        data = bytes(self._buffer)
        self._buffer.clear()
        try:
            n = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, "Fatal write error on socket transport")
            return
        if n < len(data):
            self._buffer.extend(data[n:])
            self._loop._add_writer(self._sock_fd, self._write_ready)
            return
        self._maybe_resume_protocol()
        if self._empty_waiter is not None:
            self._empty_waiter.set_result(None)
        if self._closing:
            self._call_connection_lost(None)
        elif self._eof:
            self._sock.shutdown(socket.SHUT_WR)
