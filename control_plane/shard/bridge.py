"""The shard host (``search_workers.host``) on its own event loop, reachable from any thread or loop.

The host keeps asyncio locks and (with Ray) awaits actor calls; it must live on one loop. The API
answers requests on the server's loop (or, under the test client, on several short-lived loops),
and the task runner works in plain threads, so the host gets a dedicated loop thread. Every method
below is the host's own, called directly: blocking ones for threads (the task runner, start-up,
after-commit work), awaitable ones for request handlers (they never block the caller's loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

import msgspec

from search_workers.engine import SearchTimeout, ShardBusy
from search_workers.host import ShardHost, ShardNotOpen
from search_workers.hosting import make_host
from search_workers.local import LocalHost
from shared.contract import Answer, Change, Query, ShardSpec
from shared.settings import Settings

log = logging.getLogger("shopsearch.shards")

T = TypeVar("T")

#: how long a generation swapped out stays open for searches that started on it
DROP_DELAY_S = 1.0


class SearchGate(Protocol):
    """Which generations this process may search (a process whose replicas follow the database
    searches a generation only once it has caught up with it)."""

    def searchable(self, index_id: str, generation: int) -> bool: ...
    async def wait(self, index_id: str, generation: int) -> None: ...


class ShardBridge:
    def __init__(self, settings: Settings, host: ShardHost | None = None, *, durable: bool = True) -> None:
        self.settings = settings
        self.durable = durable
        self.gate: SearchGate | None = None
        # Ray mode with near replicas: this process's in-memory replicas (an in-process bridge behind
        # a follower's gate); searches go there when the generation is caught up, to the actors else
        self.near: ShardBridge | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="shard-host-loop", daemon=True)
        self._thread.start()
        self._opened: set[tuple[str, int]] = set()
        self._open_lock = threading.Lock()
        self.host: ShardHost = host if host is not None else self._run(self._make(settings))
        # in-process shards can be searched on the caller's thread (see :meth:`search`)
        self._inline: LocalHost | None = self.host if isinstance(self.host, LocalHost) else None
        self.closed = False
        self._background: set[Any] = set()
        self._waiters = ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-wait")

    async def _make(self, settings: Settings) -> ShardHost:
        return make_host(settings, durable=self.durable)

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a host coroutine on the host loop and wait for it (from a thread, never from that loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await a host coroutine from any other event loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    # ------------------------------------------------------------------ generations
    def open(self, spec: ShardSpec, *, force: bool = False) -> None:
        """Open (creating when missing) every replica of ``spec``'s generation; once per process
        unless ``force`` (a search found it closed)."""
        key = (spec.index_id, spec.generation)
        with self._open_lock:
            if key in self._opened and not force:
                return
        self._run(self.host.open(spec))
        with self._open_lock:
            self._opened.add(key)

    async def reopen(self, spec: ShardSpec) -> None:
        """:meth:`open` with ``force`` from a request handler; behind a gate, wait for the gate instead."""
        if self.gate is not None:
            await self.gate.wait(spec.index_id, spec.generation)
            return
        await asyncio.get_running_loop().run_in_executor(self._waiters, lambda: self.open(spec, force=True))

    def drop(self, index_id: str, generation: int | None = None, *, delay: float = 0.0) -> None:
        """Forget a generation (``None``: the whole index) and delete its shards in the background,
        after ``delay`` seconds (searches that started on it finish first). Failures are logged."""
        with self._open_lock:
            for key in list(self._opened):
                if key[0] == index_id and generation in (None, key[1]):
                    self._opened.discard(key)

        async def run() -> None:
            if delay:
                await asyncio.sleep(delay)
            try:
                if generation is None:
                    await self.host.drop_index(index_id)
                else:
                    await self.host.drop(index_id, generation)
            except Exception:  # noqa: BLE001 - background clean-up
                log.warning("dropping shards of %s (generation %s) failed", index_id, generation, exc_info=True)

        if not self.closed:
            future = asyncio.run_coroutine_threadsafe(run(), self._loop)
            self._background.add(future)
            future.add_done_callback(self._background.discard)

    def drop_unused(self, used: Callable[[], dict[str, set[int]]]) -> list[tuple[str, int | None]]:
        """Delete the shard files on this host's disk of the generations ``used()`` does not name
        (``{index_id: {generation}}``: the ones served or being built; an index it does not name
        goes whole). The disk is listed before ``used()`` is asked, so a generation created
        meanwhile is never taken. Returns what was dropped (``(index_id, None)``: the whole index)."""
        stored = self._run(self.host.stored_generations())
        if not stored:
            return []
        keep = used()
        dropped: list[tuple[str, int | None]] = []
        for index_id, generations in sorted(stored.items()):
            if index_id not in keep:
                dropped.append((index_id, None))
                continue
            dropped.extend((index_id, g) for g in sorted(generations - keep[index_id]))
        for index_id, generation in dropped:
            try:
                if generation is None:
                    self._run(self.host.drop_index(index_id))
                else:
                    self._run(self.host.drop(index_id, generation))
            except Exception:  # noqa: BLE001 - tried again at the next start
                log.warning("dropping shards of %s (generation %s) failed", index_id, generation, exc_info=True)
        return dropped

    # ------------------------------------------------------------------ sequences and changes
    def applied_seqs(self, index_id: str, generation: int) -> dict[int, list[int]]:
        """``{shard: [applied seq per replica]}`` (``-1``: unreachable)."""
        return self._run(self.host.applied_seqs(index_id, generation))

    def missing(self, index_id: str, generation: int, target_seq: int) -> list[tuple[int, int]]:
        """``[(shard, from_seq)]`` for the shards with a replica behind ``target_seq``."""
        return self._run(self.host.missing(index_id, generation, target_seq))

    def apply(self, index_id: str, generation: int, batches: Mapping[int, Sequence[Change]],
              after: Mapping[int, int] | None = None) -> dict[int, list[int]]:
        """One batch of changes per shard, all shards in parallel; ``{shard: [seq per replica]}``.
        ``after[shard]``: the batch holds every change of that shard after this sequence (a replica
        behind it refuses the batch and reports its own sequence)."""

        async def run() -> dict[int, list[int]]:
            shard_nos = [s for s, changes in batches.items() if changes]
            results = await asyncio.gather(*(
                self.host.apply(index_id, generation, s, batches[s], after_seq=None if after is None else after.get(s))
                for s in shard_nos
            ))
            return dict(zip(shard_nos, results, strict=True))

        return self._run(run())

    # ------------------------------------------------------------------ placement
    def nodes(self) -> list[str] | None:
        """The alive nodes the replicas are placed on (``None``: in-process replicas, no nodes)."""
        return self._run(self.host.nodes())

    def rebalance(self, index_id: str, generation: int) -> list[tuple[int, int]]:
        """Move replicas of an opened generation onto nodes that hold too few; the moved
        ``(shard, replica)``, empty until re-fed (:func:`~control_plane.shard.feed.catch_up`)."""
        return self._run(self.host.rebalance(index_id, generation))

    # ------------------------------------------------------------------ reads
    async def search(self, index_id: str, generation: int, query: Query) -> Answer:
        """A search from any event loop: in-process, run right here while it is cheap; else
        through the host loop. ``query.timeout_ms`` bounds the whole search.

        In-process searches are CPU-bound under the one GIL, so a worker thread buys no
        parallelism, only hand-offs (measured: 4 clients p50 10.9 -> 8.6 ms, cached mix 1,100 ->
        1,900 searches/s when run on the event loop). So a search starts on the loop with
        ``search_loop_budget_ms``; one that needs longer (many candidates, facets over 50k
        values, long documents to highlight) stops at the engine's next check and starts again
        on a worker thread with the rest of its time, where the GIL is handed back to the loop
        every few milliseconds: other requests keep being answered. A shard busy applying a
        batch is waited for on a thread too.

        With near replicas (Ray mode) a search of a generation they have caught up with runs on them,
        as in-process; the actors answer the rest (a process starting, or one whose follower lost its
        lease)."""
        near = self.near
        if near is not None and near.gate is not None and near.gate.searchable(index_id, generation):
            return await near.search(index_id, generation, query)
        gate = self.gate
        if gate is not None and not gate.searchable(index_id, generation):
            raise ShardNotOpen(f"{index_id}/g{generation} is not caught up in this process yet")
        inline = self._inline
        if inline is None:
            # Ray: awaited right here when nothing needs the host's loop (fail-over, retries)
            answer = await self.host.search_here(index_id, generation, query)
            if answer is not None:
                return answer
            return await self._await(self.host.search(index_id, generation, query))
        timeout_ms = query.timeout_ms
        ends = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        budget = float(self.settings.search_loop_budget_ms)
        if budget > 0:
            on_loop = budget if timeout_ms is None else min(budget, timeout_ms)
            try:
                return inline.search_now(index_id, generation, msgspec.structs.replace(query, timeout_ms=on_loop),
                                         wait=False)
            except ShardBusy:  # a batch is being applied: wait for it on a thread, not on the loop
                pass
            except SearchTimeout:
                if timeout_ms is not None and on_loop >= timeout_ms:
                    raise

        def off_loop() -> Answer:  # the time left counts from the request, queueing included
            rest = None if ends is None else (ends - time.monotonic()) * 1000
            if rest is not None and rest <= 0:
                raise SearchTimeout()
            return inline.search_now(index_id, generation, msgspec.structs.replace(query, timeout_ms=rest))

        return await asyncio.get_running_loop().run_in_executor(self._waiters, off_loop)

    def persist_failures(self, timeout: float = 2.0) -> list[str]:
        """The replicas of this process whose disk refuses writes (:meth:`ShardHost.persist_failures`)."""
        return self._run(self.host.persist_failures(), timeout)

    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            return self._run(self.host.healthy(), timeout)
        except Exception:  # noqa: BLE001 - any failure is "not healthy"
            return False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._run(self.host.close(), timeout=30)
        except Exception:  # noqa: BLE001
            log.warning("closing the shard host failed", exc_info=True)
        for future in list(self._background):
            future.cancel()
        self._waiters.shutdown(wait=False, cancel_futures=True)

        async def settle() -> None:
            await asyncio.sleep(0)

        with contextlib.suppress(Exception):
            self._run(settle(), timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def near_bridge(settings: Settings) -> ShardBridge:
    """Replicas in this process's memory whatever the mode (Ray mode's near replicas, which a
    follower keeps at the database's sequences)."""
    return ShardBridge(settings, LocalHost(settings.data_dir / "shards", durable=False), durable=False)

