"""A TCP proxy a test controls, to cut a dependency (PostgreSQL, Redis) under a running service, or
to break a client's HTTP calls to the service.

``cut()`` closes every open connection and stops listening, so new connections are refused at
once; ``restore()`` listens again on the same port. ``stall()`` is the other kind of outage: a
dependency that accepts connections and then says nothing (a hung server, a black-holed network):
new connections are accepted and never answered nor forwarded; open ones are broken, or with
``hold_open=True`` kept open with nothing passed either way until ``restore()``. Only 127.0.0.1 is
used on both sides.

For HTTP/1.1 between a client and the service (one request at a time per connection):
``requests`` holds the first line of every request forwarded; ``fail_next_response()`` lets the next
request through but breaks its connection instead of passing the answer back (the service has
acted, the client never learns it); ``fail_next_request(after)`` passes only the first ``after`` bytes
of the next request and breaks the connection; ``answer_next(raw)`` answers the next request itself
with the bytes ``raw`` (the request is read whole and not forwarded).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.accepted = 0
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.requests: list[bytes] = []
        self._drop_responses = 0
        self._cut_requests: list[int] = []
        self._answers: list[bytes] = []
        self._flowing = threading.Event()  # cleared while stalled: nothing passes either way
        self._flowing.set()
        self._stalled = False
        self._silent: set[socket.socket] = set()  # connections accepted while stalled

    # ------------------------------------------------------------------ control
    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name=f"proxy-{self.port}", daemon=True).start()
        return self

    def cut(self) -> None:
        """Refuse new connections and break every open one."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def stall(self, hold_open: bool = False) -> None:
        """Accept new connections and say nothing on them; break the open ones (or, with
        ``hold_open``, keep them open and pass nothing on them)."""
        with self._lock:
            self._stalled = True
            self._flowing.clear()
            sockets = [] if hold_open else list(self._open)
            if not hold_open:
                self._open = set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def restore(self) -> None:
        self._unstall()
        if self._listener is None:
            self.start()

    def _unstall(self) -> None:
        with self._lock:
            self._stalled = False
            silent, self._silent = list(self._silent), set()
            self._flowing.set()
        for sock in silent:  # the connections accepted while stalled were never connected upstream
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def fail_next_response(self) -> None:
        with self._lock:
            self._drop_responses += 1

    def fail_next_request(self, after: int = 0) -> None:
        with self._lock:
            self._cut_requests.append(after)

    def answer_next(self, raw: bytes) -> None:
        with self._lock:
            self._answers.append(raw)

    def close(self) -> None:
        self._unstall()
        self.cut()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ forwarding
    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            with self._lock:
                if self._stalled:  # accepted, and never answered
                    self._silent.add(client)
                    self.accepted += 1
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    upstream.close()
                    return
                self._open.update((client, upstream))
                self.accepted += 1
            for source, sink, upward in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, upward), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upward: bool) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()  # held while stalled
                if not (self._fault_up(data, source, sink) if upward else self._fault_down()):
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        with self._lock:
            self._open.discard(source)
            self._open.discard(sink)

    def _fault_up(self, data: bytes, client: socket.socket, upstream: socket.socket) -> bool:
        """A chunk from the client: False when the connection is to break instead of forwarding it."""
        if data.split(b" ", 1)[0] not in (b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"HEAD", b"OPTIONS"):
            return True  # the rest of a request already let through
        with self._lock:
            answer = self._answers.pop(0) if self._answers else None
            cut = self._cut_requests.pop(0) if answer is None and self._cut_requests else None
            if answer is None:
                self.requests.append(data.split(b"\r\n", 1)[0])
        if answer is not None:
            _read_whole_request(client, data)
            client.sendall(answer)
            return False
        if cut is not None:
            upstream.sendall(data[:cut])
            return False
        return True

    def _fault_down(self) -> bool:
        """A chunk of an answer: False when it is to be dropped and the connection broken."""
        with self._lock:
            if self._drop_responses:
                self._drop_responses -= 1
                return False
        return True


def _read_whole_request(sock: socket.socket, data: bytes) -> None:
    """Read the rest of the request that ``data`` starts (its body by Content-Length)."""
    while b"\r\n\r\n" not in data and (more := sock.recv(65536)):
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length and (more := sock.recv(65536)):
        body += more
