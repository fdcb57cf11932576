"""The shared state of a production deployment: Redis, shared by every API instance and task runner.

Every call honours one :class:`~control_plane.state.backoff.Backoff`: after a failure Redis is not
tried again for a while (1 s, doubling to 8 s while it keeps failing) and calls raise
:class:`SharedStateUnavailable` at once. Writes that must not be lost (revocations, epoch bumps) are
kept meanwhile and replayed by this process as soon as Redis answers again.

The values every request reads (epochs, revocations: :meth:`RedisState.get_pushed`) come from this
process's :class:`~control_plane.state.pushed.Mirror` while its listener is fresh, so a storefront
request makes no round trip for them; their writes publish the change and wait for every process
to drop what it knew. Computed answers are shared through Redis too (:class:`RedisAnswers`): read
on a local miss, written by a background thread in pipelined batches.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

import redis
from limits.storage import RedisStorage, Storage

from control_plane.state.backoff import Backoff
from control_plane.state.base import SharedState, SharedStateUnavailable
from control_plane.state.pushed import ACK_WAIT, THREAD_PREFIX, Mirror

log = logging.getLogger("shopsearch.state")
T = TypeVar("T")

#: seconds a Redis call may take (connect, read, write) before it counts as a failure
TIMEOUT_SECONDS = 2

_UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class RedisState(SharedState):
    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS)
        self.prefix = prefix
        self._lock = threading.Lock()
        self.backoff = Backoff()
        # writes to replay, by full key: ("set", value, deadline) for revocations, ("incr", b"", 0) for epoch bumps
        self._kept: dict[str, tuple[str, bytes, float]] = {}
        self.answers = self.shared_answers = RedisAnswers(self)
        self.mirror = Mirror(url, prefix + "state", TIMEOUT_SECONDS, answers_channel=self.answers.channel,
                             answer_ttl=self.answers.ttl)
        self._down_since = -float("inf")  # when this outage's first failure was seen

    def _call(self, fn: Callable[[], T]) -> T:
        if self.backoff.closed():
            raise SharedStateUnavailable("Redis is unreachable")
        try:
            if self._kept:
                self._replay_kept()
            result = fn()
        except redis.RedisError as exc:
            if self.backoff.failed():
                self._down_since = time.monotonic()
                log.warning("Redis unreachable (%s); falling back until it answers", exc)
            raise SharedStateUnavailable("Redis is unreachable") from exc
        if self.backoff.succeeded():
            log.warning("Redis answers again")
        return result

    def _replay_kept(self) -> None:
        with self._lock:
            kept = list(self._kept.items())
        for key, (op, value, deadline) in kept:
            if op == "incr":
                self._announced("incr", key, b"", 0, wait=False)
            elif (remaining := int(deadline - time.monotonic())) > 0:
                self._announced("set", key, value, remaining, wait=False)
            with self._lock:
                self._kept.pop(key, None)
        log.info("replayed %d writes kept while Redis was unreachable", len(kept))

    def _keep(self, key: str, op: str, value: bytes = b"", deadline: float = 0.0) -> None:
        with self._lock:
            self._kept[key] = (op, value, deadline)

    def get(self, key: str) -> bytes | None:
        value = self._call(lambda: self.client.get(self.prefix + key))
        return value if value is None else bytes(value)  # type: ignore[arg-type]

    def set(self, key: str, value: bytes, ttl_seconds: float) -> None:
        self._call(lambda: self.client.set(self.prefix + key, value, ex=max(1, int(ttl_seconds))))

    def delete(self, key: str) -> None:
        self._call(lambda: self.client.delete(self.prefix + key))

    def incr(self, key: str) -> int:
        return int(self._call(lambda: self.client.incr(self.prefix + key)))  # type: ignore[arg-type]

    def set_first(self, key: str, value: bytes, ttl_seconds: float) -> bytes:
        full = self.prefix + key
        self._call(lambda: self.client.set(full, value, nx=True, px=max(1, int(ttl_seconds * 1000))))
        return self._call(lambda: self.client.get(full)) or value  # type: ignore[return-value]

    def lock(self, key: str, token: str, ttl_seconds: int) -> bool:
        full = self.prefix + key
        return bool(self._call(lambda: self.client.set(full, token, nx=True, ex=ttl_seconds)))

    def unlock(self, key: str, token: str) -> None:
        with contextlib.suppress(SharedStateUnavailable):  # else the lock expires
            self._call(lambda: self.client.eval(_UNLOCK, 1, self.prefix + key, token))

    # ------------------------------------------------------------------ pushed values
    def _announced(self, op: str, full: str, value: bytes, ttl_seconds: int, *, wait: bool = True) -> int:
        """Write ``full`` and publish its change in one transaction; then (``wait``) wait until every
        listener dropped it (see :mod:`control_plane.state.pushed`). The incremented value for "incr"."""
        ack = f"{self.prefix}ack:{secrets.token_hex(8)}" if wait else ""
        pipe = self.client.pipeline(transaction=True)
        if op == "incr":
            pipe.incr(full)
        else:
            pipe.set(full, value, ex=max(1, ttl_seconds))
        pipe.publish(self.mirror.channel, f"{full}\n{ack}".encode())
        result, listeners = pipe.execute()
        if wait:
            self._await_acks(ack, int(listeners))
        return int(result) if op == "incr" else 0

    def _await_acks(self, ack: str, listeners: int) -> None:
        deadline = time.monotonic() + ACK_WAIT
        for _ in range(listeners):
            remaining = deadline - time.monotonic()
            if remaining <= 0.001 or self.client.blpop([ack], timeout=remaining) is None:
                log.warning("a process did not acknowledge a change within %.2f s; it reads Redis until it "
                            "catches up", ACK_WAIT)
                break
        self.client.delete(ack)

    def _outlive_mirrors(self) -> None:
        """A change that could not be published: return only once no process can still use a mirror
        that missed it. Every listener's last answered ping was sent before Redis failed, so before
        this outage's first failure here: ``ACK_WAIT`` after it, no mirror is fresh (they read Redis,
        fail, and fall back: revocations to the database, epochs to no cached answers)."""
        wait = self._down_since + ACK_WAIT - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def get_pushed(self, key: str) -> bytes | None:
        full = self.prefix + key
        known, value, generation = self.mirror.lookup(full)
        if known:
            return value

        def read() -> tuple[bytes | None, int]:
            pipe = self.client.pipeline(transaction=False)
            pipe.get(full)
            pipe.pttl(full)
            found, ttl = pipe.execute()
            return (None if found is None else bytes(found)), int(ttl)

        value, ttl_ms = self._call(read)
        self.mirror.remember(full, value, ttl_ms, generation)
        return value

    def set_eventually(self, key: str, value: bytes, ttl_seconds: float) -> None:
        full = self.prefix + key
        try:
            self._call(lambda: self._announced("set", full, value, int(max(1, ttl_seconds))))
        except SharedStateUnavailable:
            self._keep(full, "set", value, time.monotonic() + max(1, ttl_seconds))
            self._outlive_mirrors()

    def incr_eventually(self, key: str) -> int | None:
        full = self.prefix + key
        try:
            return self._call(lambda: self._announced("incr", full, b"", 0))
        except SharedStateUnavailable:
            self._keep(full, "incr")
            self._outlive_mirrors()
            return None

    def start(self) -> None:
        self.mirror.start()
        self.shared_answers.start()

    def stop(self) -> None:
        self.mirror.stop()
        self.shared_answers.stop()

    def replay(self) -> None:
        if self._kept:
            self.ping()

    def ping(self) -> bool:
        try:
            return bool(self._call(self.client.ping))
        except SharedStateUnavailable:
            return False

    def limits_storage(self, namespace: str) -> Storage | None:
        return RedisStorage(self.url, key_prefix=f"{self.prefix}{namespace}limits", wrap_exceptions=True,
                            socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS)


class RedisAnswers:
    """Computed answers shared by every instance through Redis (any failure is a miss).

    Read on a local miss, and only for a key some process announced (one round trip; the listener
    hears the keys of every batch written, :mod:`control_plane.state.pushed`); written off the
    request path by a thread of its own, in pipelined batches with their keys published, dropped
    when Redis is unreachable or the queue is full."""

    MAX_QUEUED = 4096
    BATCH = 128
    #: after a wake-up the writer waits this long for more answers, so that a busy process sends one
    #: pipeline and one announcement for many answers rather than for each (every listener handles
    #: every announcement: at 500 uncached searches/s, one each cost both processes' listeners 500
    #: messages/s, taken from the requests' GIL). 100 ms rather than 20: on the real-query mix at
    #: ~1,100 searches/s the writers' CPU went from 0.40 to 0.20 s and the listeners' from 0.16 to
    #: 0.09 s per process over 15 s, with the same share of answers computed (a popular answer is
    #: computed once per process at most while it waits to be shared)
    COALESCE_S = 0.1

    def __init__(self, state: RedisState, ttl_seconds: int = 300) -> None:
        self.state = state
        self.ttl = ttl_seconds
        self.channel = f"{state.prefix}answers"
        self._queue: deque[tuple[bytes, bytes, int]] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = False

    def _key(self, key: bytes) -> str:
        return f"{self.state.prefix}answer:{key.hex()}"

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        if self.state.mirror.answer_announced(key) is False:
            return None  # no process has put it: no round trip
        try:
            raw = self.state._call(lambda: self.state.client.get(self._key(key)))
        except SharedStateUnavailable:
            return None
        if not isinstance(raw, bytes) or len(raw) < 8:
            return None
        return raw[8:], struct.unpack("<q", raw[:8])[0]

    def put(self, key: bytes, body: bytes, total: int) -> None:
        if len(self._queue) >= self.MAX_QUEUED or self._stopping:
            return
        self._queue.append((key, body, total))
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._write, name=f"{THREAD_PREFIX}-answers", daemon=True)
                    self._thread.start()
        self._wake.set()

    def _write(self) -> None:
        while not self._stopping:
            self._wake.wait(1.0)
            if self._queue and not self._stopping:
                time.sleep(self.COALESCE_S)
            self._wake.clear()
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self.BATCH, len(self._queue)))]

                def send(batch: list[tuple[bytes, bytes, int]] = batch) -> None:
                    pipe = self.state.client.pipeline(transaction=False)
                    for key, body, total in batch:
                        pipe.set(self._key(key), struct.pack("<q", total) + body, ex=self.ttl)
                    pipe.publish(self.channel, b"".join(key for key, _, _ in batch))
                    pipe.execute()

                try:
                    self.state._call(send)
                except SharedStateUnavailable:
                    self._queue.clear()

    def start(self) -> None:
        self._stopping = False

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=5)
