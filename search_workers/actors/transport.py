"""The Ray host's transport for searches: lanes from an event loop to each shard actor.

An actor call costs Ray's own machinery, ~0.7 ms of CPU per call on a 2-core machine, as much as
the engine's work for a storefront query (figures: ``benchmarks/README.md``). So a lane sends a
shard query to an actor on its own node over the actor's Unix-socket channel (:mod:`.channel`),
once it has asked the actor for its address, and to actors elsewhere as Ray calls batched per actor:
a query goes at once when fewer than ``max_in_flight`` calls are in flight to that actor; otherwise
it waits, and when a call comes back every query waiting for that actor goes in one call
(:meth:`~.factory.ShardActor.search_many_packed`, up to ``max_batch``). A broken channel (the actor
died) settles its searches as "unavailable": they take the host's general path (fail-over,
retries, revival), and the lane asks the restarted actor for its new address later.

Everything else - applies, probes, placement, restarts - is the host's (:mod:`.ray_host`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import pickle
import threading
from typing import Any, Protocol

from ray import exceptions as rex

from search_workers.replica import ReplicaRetired
from shared.contract import Answer

from . import channel as channel_module
from .channel import ChannelClient
from .factory import unpack_answer, unpack_many

log = logging.getLogger(__name__)

#: what a failed call to a replica raises when the replica is down (try another, or retry)
UNAVAILABLE = (
    rex.RayActorError,  # ActorDiedError, ActorUnavailableError (restarting)
    rex.ActorUnschedulableError,  # its node is gone (hard node affinity): revived elsewhere
    rex.GetTimeoutError,
    rex.WorkerCrashedError,
    rex.NodeDiedError,
    rex.ObjectLostError,
    rex.RaySystemError,
    asyncio.TimeoutError,
    TimeoutError,
    ReplicaRetired,  # moving to another node (RayHost.rebalance): ask the shard's other replicas
)


def outcome(exc: BaseException) -> BaseException | None:
    """What a failed shard call means for its search: the engine's exception to raise, or
    ``None`` (unavailable: the general path takes the search)."""
    if isinstance(exc, rex.RayTaskError):
        cause = getattr(exc, "cause", None)
        return cause if isinstance(cause, BaseException) and not isinstance(cause, UNAVAILABLE) else None
    return None if isinstance(exc, UNAVAILABLE) else exc


class LaneHost(Protocol):
    """What the lanes read of their host (its settings, its node) and count on it."""

    read_timeout: float
    batching: bool
    max_in_flight: int
    max_batch: int
    channels: bool
    channel_retry: float
    fast_calls: int
    fast_queries: int
    channel_queries: int

    def node_id(self) -> str | None: ...


class Lanes:
    """A host's lanes: per event loop, per replica ``(index_id, generation, shard, replica)``."""

    def __init__(self, host: LaneHost) -> None:
        self.host = host
        self._by_loop: dict[asyncio.AbstractEventLoop, dict[tuple[str, int, int, int], Lane]] = {}

    async def search(self, index_id: str, generation: int, rows: list[list[Any]], sq: bytes,
                     turn: int) -> list[Answer] | None:
        """Every shard's answer to the packed shard query ``sq`` from replica ``turn`` (modulo the
        replicas) of each row of actor handles, in shard order; ``None`` when a replica did not
        answer in ``read_timeout`` or was unavailable. The engine's refusals are raised as
        themselves (the first in shard order).

        With ``host.batching``, through the lanes; without, one call per shard for this search
        alone (:meth:`search_each`)."""
        host = self.host
        if not host.batching:
            return await self.search_each(rows, sq, turn)
        loop = asyncio.get_running_loop()
        lanes = self._by_loop.get(loop)
        if lanes is None:
            lanes = self._loop_lanes(loop)
        search = Search(loop.create_future(), len(rows))
        for shard_no, row in enumerate(rows):
            replica_no = turn % len(row)
            handle = row[replica_no]
            key = (index_id, generation, shard_no, replica_no)
            lane = lanes.get(key)
            if lane is None or lane.handle is not handle:  # new, or the replica was re-created
                if lane is not None:
                    lane.close()
                lane = lanes[key] = Lane(host, handle, loop)
            lane.submit(sq, search, shard_no)
        try:
            results = await asyncio.wait_for(search.future, host.read_timeout)
        except TimeoutError:
            return None
        answers: list[Answer] = []
        for result in results:  # the first failure in shard order decides, as in search_each
            if isinstance(result, Answer):
                answers.append(result)
            elif result is None:
                return None
            else:
                raise result
        return answers

    async def search_each(self, rows: list[list[Any]], sq: bytes, turn: int) -> list[Answer] | None:
        """:meth:`search` without batching: one call per shard for this search alone, one wake-up
        of the caller's loop when the last answer is in."""
        host = self.host
        try:
            refs = [row[turn % len(row)].search_packed.remote(sq) for row in rows]
        except AttributeError:  # actors made by an older version (no search_packed): the general path
            return None
        host.fast_calls += len(refs)
        host.fast_queries += len(refs)
        try:
            packed = await asyncio.wait_for(all_results(refs), host.read_timeout)
        except Exception as exc:
            result = outcome(exc)
            if result is None:
                return None
            if result is exc:
                raise
            raise result from None  # EngineError & co., as the host's calls raise them
        return [unpack_answer(p) for p in packed]

    def _loop_lanes(self, loop: asyncio.AbstractEventLoop) -> dict[tuple[str, int, int, int], Lane]:
        for old in [lp for lp in list(self._by_loop) if lp.is_closed()]:
            self._by_loop.pop(old, None)
        return self._by_loop.setdefault(loop, {})

    def drop(self, index_id: str, generation: int | None = None) -> None:
        """Close the lanes to the index's (or generation's) actors."""
        for lanes in list(self._by_loop.values()):
            for key in [k for k in list(lanes) if k[0] == index_id and generation in (None, k[1])]:
                lanes.pop(key).close()

    def close(self) -> None:
        for lanes in self._by_loop.values():
            for lane in lanes.values():
                lane.close()
        self._by_loop.clear()


def all_results(refs: list[Any]) -> asyncio.Future[list[Any]]:
    """The results of ``refs`` (in order) as one future of the running loop, woken once when the
    last is in (awaiting each ref wakes the loop once per ref). The first failure, in ``refs``
    order, is raised."""
    loop = asyncio.get_running_loop()
    out: asyncio.Future[list[Any]] = loop.create_future()
    futures = [ref.future() for ref in refs]
    left = [len(futures)]
    lock = threading.Lock()

    def settle() -> None:
        if out.done():  # cancelled (timed out)
            return
        for f in futures:
            exc = f.exception()
            if exc is not None:
                out.set_exception(exc)
                return
        out.set_result([f.result() for f in futures])

    def one_done(_: concurrent.futures.Future[Any]) -> None:  # on a Ray thread
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(settle)

    for f in futures:
        f.add_done_callback(one_done)
    return out


class Search:
    """One fast-path search waiting for its shards (touched on its own loop only)."""

    __slots__ = ("future", "left", "results")

    def __init__(self, future: asyncio.Future[list[Any]], shards: int) -> None:
        self.future = future
        self.results: list[Answer | BaseException | None] = [None] * shards
        self.left = shards

    def settle(self, shard_no: int, result: Answer | BaseException | None) -> None:
        """``result``: the shard's Answer, the engine's exception, or ``None`` (unavailable)."""
        self.results[shard_no] = result
        self.left -= 1
        if self.left == 0 and not self.future.done():  # done: timed out meanwhile
            self.future.set_result(self.results)


#: a shard query waiting in, or carried by, a lane's call: (pickled query, its search, shard number)
Item = tuple[bytes, Search, int]


class Call:
    __slots__ = ("items", "started")

    def __init__(self, items: list[Item], started: float) -> None:
        self.items = items
        self.started = started


class Lane:
    """The fast path's calls from one event loop to one actor (touched on that loop only).

    On the actor's node, the lane sends each shard query over the actor's channel (:mod:`.channel`),
    once it has asked the actor for its address and connected; until then, and whenever the channel
    breaks (re-tried after ``host.channel_retry`` seconds), it makes Ray calls:

    At most ``host.max_in_flight`` calls are in flight; a shard query arriving then waits, and
    when a call comes back the waiting queries go together in one call (up to ``host.max_batch``).
    A call older than ``host.read_timeout`` (its searches gave up) no longer counts as in flight,
    so an actor that never answers one call does not hold back the next searches for good."""

    __slots__ = ("batches", "channel", "channel_failures", "channel_state", "channel_task", "flight", "handle",
                 "host", "loop", "retry_at", "waiting")

    def __init__(self, host: LaneHost, handle: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.host = host
        self.handle = handle
        self.loop = loop
        self.flight: list[Call] = []
        self.waiting: list[Item] = []
        self.batches = True  # False: an actor of an older version (no search_many_packed)
        self.channel: ChannelClient | None = None
        #: "idle" (ask for the address from ``retry_at`` on), "asking" or "none" (never: another node,
        #: no channel support, an older actor); an open channel is :attr:`channel`
        self.channel_state = "idle"
        self.channel_task: asyncio.Task[None] | None = None
        self.retry_at = 0.0
        self.channel_failures = 0

    def submit(self, sq: bytes, search: Search, shard_no: int) -> None:
        if self.host.channels and self._over_channel(sq, search, shard_no):
            return
        self.waiting.append((sq, search, shard_no))
        self._pump()

    def close(self) -> None:
        """Close the channel (from any thread: on the lane's loop)."""
        try:
            here = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            here = False
        if here:
            self._close_here()
        else:
            with contextlib.suppress(RuntimeError):  # that loop is closed: so is its transport
                self.loop.call_soon_threadsafe(self._close_here)

    def _close_here(self) -> None:
        self.channel_state = "none"
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.channel_task is not None:
            self.channel_task.cancel()

    # -- the channel -----------------------------------------------------------------------
    def _over_channel(self, sq: bytes, search: Search, shard_no: int) -> bool:
        """Send the shard query over the channel if one is open (else maybe start opening one)."""
        ch = self.channel
        if ch is None:
            if self.channel_state == "idle" and self.loop.time() >= self.retry_at:
                self._ask_address()
            return False
        if ch.send(sq, functools.partial(self._reply, search, shard_no), self.loop.time()):
            self.host.channel_queries += 1
            return True
        self.channel = None  # broken: Ray calls until it is re-opened
        self._retry_later()
        return False

    def _ask_address(self) -> None:
        self.channel_state = "asking"
        try:
            ref = self.handle.channel_address.remote()
        except AttributeError:  # an actor of an older version
            self.channel_state = "none"
            return
        except Exception:  # pragma: no cover - submission failed
            self._retry_later()
            return
        loop = self.loop

        def done(fut: concurrent.futures.Future[Any]) -> None:  # on a Ray thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._got_address, fut)

        ref.future().add_done_callback(done)

    def _retry_later(self) -> None:
        """Ask again later: after ``channel_retry`` seconds, doubling while attempts keep failing (to 60)."""
        if self.channel_state != "none":
            self.channel_state = "idle"
            self.retry_at = self.loop.time() + min(60.0, self.host.channel_retry * 2 ** self.channel_failures)
            self.channel_failures += 1

    def _got_address(self, fut: concurrent.futures.Future[Any]) -> None:
        if self.channel_state != "asking":
            return  # closed meanwhile
        if fut.exception() is not None:
            self._retry_later()  # restarting, say
            return
        where = fut.result()
        if not where or where.get("nodeId") is None or where.get("nodeId") != self.host.node_id():
            self.channel_state = "none"  # another node (or no channel there): Ray calls
            return
        self.channel_task = self.loop.create_task(self._connect(where["address"]))

    async def _connect(self, address: str) -> None:
        try:
            client = await ChannelClient.connect(address, self.host.read_timeout)
        except (OSError, TimeoutError) as exc:
            log.warning("shard channel %r: %r; Ray calls meanwhile", address, exc)
            self._retry_later()
            return
        if self.channel_state != "asking":  # closed meanwhile
            client.close()
            return
        self.channel = client
        self.channel_state = "idle"
        self.channel_failures = 0

    def _reply(self, search: Search, shard_no: int, reply: channel_module.Reply) -> None:
        if reply is None:  # the channel broke: the general path takes the search
            search.settle(shard_no, None)
            return
        kind, payload = reply
        try:
            entries = unpack_many(payload if kind == channel_module.KIND_MSGPACK else pickle.loads(payload))
            result = entries[0]
        except Exception as err:  # pragma: no cover - an answer that does not decode
            search.settle(shard_no, err)
            return
        search.settle(shard_no, result if isinstance(result, Answer) else outcome(result))

    # -- Ray calls -------------------------------------------------------------------------
    def _room(self) -> bool:
        if len(self.flight) < self.host.max_in_flight or not self.batches:
            return True
        now = self.loop.time()
        self.flight = [c for c in self.flight if now - c.started < self.host.read_timeout]
        return len(self.flight) < self.host.max_in_flight

    def _pump(self) -> None:
        while self.waiting and self._room():
            n = self.host.max_batch if self.batches else 1
            items = [it for it in self.waiting[:n] if not it[1].future.done()]  # done: gave up
            del self.waiting[:n]
            if items:
                self._send(items)

    def _send(self, items: list[Item]) -> None:
        try:
            if len(items) == 1:
                ref = self.handle.search_packed.remote(items[0][0])
            else:
                ref = self.handle.search_many_packed.remote([sq for sq, _, _ in items])
        except AttributeError:
            if len(items) > 1 and self.batches:  # no search_many_packed: one call per query from now on
                self.batches = False
                self.waiting[:0] = items
                return
            self._settle(items, [None] * len(items))  # no search_packed either: the general path
            return
        except Exception as exc:  # pragma: no cover - submission failed: the same for every query
            result = outcome(exc)
            self._settle(items, [result] * len(items))
            return
        host = self.host
        host.fast_calls += 1
        host.fast_queries += len(items)
        call = Call(items, self.loop.time())
        self.flight.append(call)
        loop = self.loop

        def done(fut: concurrent.futures.Future[Any]) -> None:  # on a Ray thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(self._done, call, fut)

        ref.future().add_done_callback(done)

    def _done(self, call: Call, fut: concurrent.futures.Future[Any]) -> None:
        with contextlib.suppress(ValueError):  # already dropped as stale
            self.flight.remove(call)
        self._pump()  # the actor gets its next batch before the answers are decoded
        items = call.items
        exc = fut.exception()
        if exc is not None:
            self._settle(items, [outcome(exc)] * len(items))
            return
        try:
            packed = fut.result()
            results: list[Answer | BaseException | None] = (
                [unpack_answer(packed)] if len(items) == 1 else
                [r if isinstance(r, Answer) else outcome(r) for r in unpack_many(packed)])
            if len(results) != len(items):  # pragma: no cover - defensive
                raise RuntimeError(f"{len(results)} answers for {len(items)} queries")
        except Exception as err:  # pragma: no cover - an answer that does not decode
            results = [err] * len(items)
        self._settle(items, results)

    @staticmethod
    def _settle(items: list[Item], results: list[Answer | BaseException | None]) -> None:
        for (_, search, shard_no), result in zip(items, results, strict=True):
            search.settle(shard_no, result)

