"""Values read on every request and changed rarely, pushed by Redis to every process that reads them.

Index epochs and revocations are read by every storefront request; reading them from Redis cost a
round trip each. Each serving process instead keeps a :class:`Mirror` of the ones it has read, and
a listener thread subscribed to one channel (``<prefix>state``) drops a key from the mirror whenever
any process changes it (:meth:`RedisState.incr_eventually`, :meth:`RedisState.set_eventually`
publish the key in the same transaction as the write). The next read of that key goes to Redis.

Why a cached epoch is never stale when a write's task succeeds, in any process:

* the writer waits until every subscribed listener acknowledged the change (``PUBLISH`` says how
  many received it; each listener pushes an acknowledgement once the key is dropped), at most
  :data:`ACK_WAIT` seconds;
* a mirror is used only while *fresh*: its listener pings Redis every :data:`PING_EVERY` seconds on
  the subscribed connection, the ping carrying its send time, and a mirror is fresh while the last
  ping answered was sent less than :data:`FRESH_FOR` seconds ago. Redis answers a connection in
  order, so a listener that has the answer to a ping sent after a change was published has dropped
  that key; one that did not acknowledge within ``ACK_WAIT`` (> ``FRESH_FOR``) is no longer fresh
  when the writer goes on, and its process reads Redis, as before, until it catches up.

Whenever the listener's connection is lost the mirror is emptied and unused until it has
subscribed again; a value read from Redis is kept only if no change was announced while it was
being read (a generation counter), so no read can put back what a change dropped.

The same listener hears which computed answers the processes put in Redis (a second channel,
``<prefix>answers``: the keys of each written batch). A process that misses an answer locally asks
Redis only for a key it heard of, so a query nobody has computed costs no round trip. Missing an
announcement (before subscribing, while reconnecting) costs one computation, never a wrong answer:
answers are keyed by everything that decides them, their index epoch included.
"""

from __future__ import annotations

import logging
import math
import threading
import time

import redis

log = logging.getLogger("shopsearch.state")

#: how often the listener pings Redis on its subscribed connection (seconds)
PING_EVERY = 0.2
#: a mirror whose last answered ping was sent longer ago than this is not used
FRESH_FOR = 1.0
#: how long a writer waits for every listener to acknowledge a change
ACK_WAIT = FRESH_FOR + 0.25
#: a listener with no answer for this long reconnects
SILENT_FOR = 3.0
#: keys kept at most (then the mirror starts afresh)
MAX_KEYS = 200_000
#: bytes of an answer key (``AnswerCache.key``: a 128-bit digest)
ANSWER_KEY_BYTES = 16

THREAD_PREFIX = "shopsearch-state"


class Mirror:
    """The values of watched keys this process has read, valid while the listener is fresh."""

    def __init__(self, url: str, channel: str, connect_timeout: float, answers_channel: str | None = None,
                 answer_ttl: float = 300.0) -> None:
        self.channel = channel
        self.answers_channel = answers_channel
        self._answer_ttl = answer_ttl
        self._answers: dict[bytes, float] = {}  # announced answer key -> monotonic deadline
        self._url = url
        self._connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._values: dict[str, tuple[bytes | None, float]] = {}  # key -> (value, monotonic deadline)
        self._generation = 0
        self._subscribed = False
        self._fresh_as_of = -math.inf  # send time of the last ping answered
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: redis.Redis | None = None  # for acknowledgements

    # ------------------------------------------------------------------ reading
    def fresh(self) -> bool:
        return self._subscribed and time.monotonic() - self._fresh_as_of < FRESH_FOR

    def lookup(self, key: str) -> tuple[bool, bytes | None, int]:
        """(known here, value, generation to pass to :meth:`remember` after reading Redis)."""
        generation = self._generation
        if not self.fresh():
            return False, None, generation
        entry = self._values.get(key)
        if entry is None or entry[1] <= time.monotonic():
            return False, None, generation
        return True, entry[0], generation

    def answer_announced(self, key: bytes) -> bool | None:
        """Whether a process announced ``key``'s answer within its time to live (None: this listener
        is not fresh, so it may have missed the announcement)."""
        if not self.fresh():
            return None
        deadline = self._answers.get(key)
        return deadline is not None and deadline > time.monotonic()

    def remember(self, key: str, value: bytes | None, ttl_ms: int, generation: int) -> None:
        """Keep what Redis answered (``ttl_ms`` as PTTL answers), unless a change was announced since
        ``generation`` was read or the listener is not fresh."""
        deadline = math.inf if ttl_ms < 0 or value is None else time.monotonic() + ttl_ms / 1000
        with self._lock:
            if generation != self._generation or not self.fresh():
                return
            if len(self._values) >= MAX_KEYS:
                self._values.clear()
            self._values[key] = (value, deadline)

    def _forget(self, key: str | None) -> None:
        with self._lock:
            self._generation += 1
            if key is None:
                self._values.clear()
            else:
                self._values.pop(key, None)

    # ------------------------------------------------------------------ listening
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._client = redis.Redis.from_url(self._url, socket_timeout=self._connect_timeout,
                                            socket_connect_timeout=self._connect_timeout)
        self._thread = threading.Thread(target=self._run, name=f"{THREAD_PREFIX}-listener", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def wait_fresh(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.fresh():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _run(self) -> None:
        delay = 0.5
        while not self._stop.is_set():
            connection = redis.ConnectionPool.from_url(
                self._url, socket_timeout=self._connect_timeout, socket_connect_timeout=self._connect_timeout, protocol=2,
            ).make_connection()
            try:
                self._listen(connection)
                delay = 0.5
            except (redis.RedisError, OSError, ValueError) as exc:
                log.debug("state listener lost Redis (%r); reading it on each request until back", exc)
            finally:
                self._subscribed = False
                self._fresh_as_of = -math.inf
                self._forget(None)
                connection.disconnect()
            if self._stop.wait(delay):
                return
            delay = min(8.0, delay * 2)

    def _listen(self, connection: redis.connection.ConnectionInterface) -> None:
        connection.connect()
        channels = [self.channel] if self.answers_channel is None else [self.channel, self.answers_channel]
        connection.send_command("SUBSCRIBE", *channels)
        for _ in channels:
            connection.read_response()  # each subscription's confirmation: from here on, no change is missed
        self._forget(None)
        self._subscribed = True
        last_ping = last_answer = -math.inf
        while not self._stop.is_set():
            now = time.monotonic()
            if now - last_ping >= PING_EVERY:
                connection.send_command("PING", repr(now))
                last_ping = now
                if last_answer == -math.inf:
                    last_answer = now
            if now - last_answer > SILENT_FOR:
                raise redis.TimeoutError("no answer to the listener's pings")
            if connection.can_read(timeout=PING_EVERY / 2):
                reply = connection.read_response()
                last_answer = time.monotonic()
                self._handle(reply)

    def _handle(self, reply: object) -> None:
        if not isinstance(reply, list) or len(reply) < 2:
            return
        kind = bytes(reply[0])
        if kind == b"pong":
            self._fresh_as_of = max(self._fresh_as_of, float(reply[1]))
        elif kind == b"message" and len(reply) == 3 and self.answers_channel is not None \
                and bytes(reply[1]).decode() == self.answers_channel:
            self._heard_answers(bytes(reply[2]))
        elif kind == b"message" and len(reply) == 3:
            key, _, ack = bytes(reply[2]).decode().partition("\n")
            self._forget(key)
            if ack and self._client is not None:
                try:
                    pipe = self._client.pipeline(transaction=False)
                    pipe.rpush(ack, 1)
                    pipe.expire(ack, 30)
                    pipe.execute()
                except redis.RedisError as exc:  # the writer waits ACK_WAIT; by then this mirror is not fresh
                    log.debug("acknowledging a change failed: %r", exc)

    def _heard_answers(self, keys: bytes) -> None:
        deadline = time.monotonic() + self._answer_ttl
        if len(self._answers) >= MAX_KEYS:
            now = time.monotonic()
            self._answers = {k: d for k, d in self._answers.items() if d > now}
            if len(self._answers) >= MAX_KEYS:
                self._answers = {}
        for i in range(0, len(keys) - ANSWER_KEY_BYTES + 1, ANSWER_KEY_BYTES):
            self._answers[keys[i: i + ANSWER_KEY_BYTES]] = deadline
