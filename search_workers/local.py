"""In-process shard host (the embedded default).

Replicas are :class:`~search_workers.replica.ShardReplica` objects keyed by
``(index_id, generation, shard, replica)``, with files under
``<shards_dir>/<index_id>/g<generation>/s<shard>r<replica>``.  Engine calls are blocking and
CPU-bound, so the async interface runs them on a dedicated thread pool; applies to one shard are
serialised by :class:`~search_workers.host.BaseHost` (an asyncio lock per shard), and each engine
serialises its own apply/search.  Searches have a synchronous path too (:meth:`LocalHost.search_now`):
the control plane runs a cheap search on its event loop and a long one on a thread of its own.

After a process restart nothing is open: the control plane calls ``open(spec)`` for every serving
generation (it re-opens the files; ``applied_seqs`` tells what is missing).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from search_workers.engine import ShardEngine
from search_workers.engine.errors import Deadline
from search_workers.host import BaseHost, ShardNotOpen, check_index_id, replica_dir_name
from search_workers.memory import release_freed_memory
from search_workers.merge import merge_answers
from search_workers.replica import ShardReplica
from shared.contract import Answer, Query, ShardSpec, shard_query


class LocalHost(BaseHost):
    def __init__(self, shards_dir: str | os.PathLike[str], max_workers: int | None = None, *,
                 durable: bool = True) -> None:
        super().__init__()
        self.shards_dir = Path(shards_dir)
        # False: replicas in memory only, nothing written or deleted under ``shards_dir`` (a serving
        # process whose replicas follow the database beside the one that owns the files)
        self.durable = durable
        self._specs: dict[tuple[str, int], ShardSpec] = {}
        self._replicas: dict[tuple[str, int, int, int], ShardReplica] = {}
        self._open_lock = asyncio.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_workers or min(8, (os.cpu_count() or 1) + 2),
                                        thread_name_prefix="shard")
        self._closed = False
        self._applying: dict[tuple[str, int], threading.Lock] = {}
        self._apply_locks_lock = threading.Lock()

    def replica_path(self, index_id: str, generation: int, shard_no: int, replica_no: int) -> Path:
        return self.shards_dir / index_id / replica_dir_name(generation, shard_no, replica_no)

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, partial(fn, *args))

    # -- primitives ----------------------------------------------------------------------
    async def _layout(self, index_id: str, generation: int) -> tuple[int, int]:
        spec = self._specs.get((index_id, generation))
        if spec is None:
            raise ShardNotOpen(f"{index_id}/g{generation} is not open on this host")
        return spec.shards, spec.replicas

    async def _call(self, index_id: str, generation: int, shard_no: int, replica_no: int, method: str,
                    *args: Any, timeout: float) -> Any:
        rep = self._replicas.get((index_id, generation, shard_no, replica_no))
        if rep is None:
            raise ShardNotOpen(f"{index_id}/g{generation}/s{shard_no}r{replica_no} is not open on this host")
        # no timeout in-process: the thread can't be interrupted, and there is no other process to fail over to
        if method == "apply":
            return await self._run(self._apply_in_turn, index_id, generation, rep, *args)
        return await self._run(getattr(rep, method), *args)

    def _apply_in_turn(self, index_id: str, generation: int, rep: ShardReplica, *args: Any) -> Any:
        """``rep.apply``, one shard of a generation at a time. An apply is Python under the GIL: the
        bridge hands every shard's batch over at once, and 4 threads taking turns every 0.5 ms (the
        serving processes' switch interval) spent more on the turns than they gained, and starved the
        upload requests of the GIL (300k products in 4 shards, indexing_bench: 2,930 -> 3,670 docs/s,
        the upload requests done in 23 s instead of 53-63 s). Other indexes' applies still share
        the process."""
        with self._apply_locks_lock:
            lock = self._applying.setdefault((index_id, generation), threading.Lock())
        with lock:
            return rep.apply(*args)

    def search_now(self, index_id: str, generation: int, query: Query, wait: bool = True) -> Answer:
        """The fan-out and merge of :meth:`search`, run on the calling thread.

        In-process every replica is always up, so there is nothing to fail over to; searching the
        shards one after the other on one thread saves the hops between the event loop and the pool,
        which cost more than the searches themselves on a small machine. Per shard, the replica that
        holds the most changes answers (round-robin among equals). ``wait=False``: raise
        :class:`ShardBusy` rather than wait for a shard whose memory is being updated.
        ``timeout_ms`` covers all the shards: each gets what the ones before it left.
        """
        spec = self._specs.get((index_id, generation))
        if spec is None:
            raise ShardNotOpen(f"{index_id}/g{generation} is not open on this host")
        sq = shard_query(query)
        deadline = Deadline(query.timeout_ms)
        turn = next(self._rr)
        answers = []
        stale = False
        for shard_no in range(spec.shards):
            reps = [self._replicas.get((index_id, generation, shard_no, (turn + r) % spec.replicas))
                    for r in range(spec.replicas)]
            live = [rep for rep in reps if rep is not None]
            if not live:
                raise ShardNotOpen(f"{index_id}/g{generation}/s{shard_no} is not open on this host")
            seqs = [rep.applied_seq() for rep in live]
            best = max(seqs)
            if deadline.at is not None:
                deadline.check()
                sq = msgspec.structs.replace(sq, timeout_ms=(deadline.at - time.monotonic()) * 1000)
            answer = live[seqs.index(best)].search(sq, wait)
            self._note_seq(index_id, generation, shard_no, answer.applied_seq)
            stale = stale or best < self._seen.get((index_id, generation, shard_no), 0)
            answers.append(answer)
        deadline.check()
        merged = merge_answers(query, answers)
        merged.partial = stale
        return merged

    # -- interface -----------------------------------------------------------------------
    async def open(self, spec: ShardSpec) -> None:
        """Open (creating when missing) every replica of ``spec``'s generation.  Idempotent."""
        ShardEngine.validate_mapping(spec.mapping, spec.language)
        async with self._open_lock:
            old = self._specs.get((spec.index_id, spec.generation))
            if old is not None and old == spec:
                return
            if old is not None:  # same generation re-opened with another layout/mapping: reopen
                await self._close_generation(spec.index_id, spec.generation)
            todo = [(s, r) for s in range(spec.shards) for r in range(spec.replicas)]
            reps = await asyncio.gather(*(
                self._run(ShardReplica, str(self.replica_path(spec.index_id, spec.generation, s, r)),
                          spec.mapping, spec.language, self.durable)
                for s, r in todo
            ))
            for (s, r), rep in zip(todo, reps, strict=True):
                self._replicas[(spec.index_id, spec.generation, s, r)] = rep
            self._specs[(spec.index_id, spec.generation)] = spec

    async def _close_generation(self, index_id: str, generation: int, destroy: bool = False) -> None:
        keys = [k for k in self._replicas if k[0] == index_id and k[1] == generation]
        reps = [self._replicas.pop(k) for k in keys]
        self._specs.pop((index_id, generation), None)
        with self._apply_locks_lock:
            self._applying.pop((index_id, generation), None)
        await asyncio.gather(*(self._run(rep.destroy if destroy else rep.close) for rep in reps))

    async def drop(self, index_id: str, generation: int) -> None:
        """Close the generation's replicas and delete their files (also when not open here)."""
        check_index_id(index_id)
        async with self._open_lock:
            await self._close_generation(index_id, generation, destroy=True)
            self._forget(index_id, generation)
            if self.durable:
                await self._run(shutil.rmtree, str(self.shards_dir / index_id / f"g{generation}"), True)
            # the generation that replaced it was built among its memory: packed now, the pages of
            # both can be given back (a reindex kept ~20 % more memory than a first indexing)
            kept = [rep for key, rep in self._replicas.items() if key[0] == index_id]
        await asyncio.gather(*(self._run(rep.settle) for rep in kept))
        await self._run(release_freed_memory)

    async def drop_index(self, index_id: str) -> None:
        check_index_id(index_id)
        async with self._open_lock:
            for gen in sorted({k[1] for k in self._specs if k[0] == index_id}):
                await self._close_generation(index_id, gen, destroy=True)
            self._forget(index_id)
            if self.durable:
                await self._run(shutil.rmtree, str(self.shards_dir / index_id), True)
        await self._run(release_freed_memory)

    async def stored_generations(self) -> dict[str, set[int]]:
        """``{index_id: {generation}}`` of the ``g<N>`` directories under :attr:`shards_dir`."""
        if not self.durable:
            return {}
        return await self._run(self._list_generations)

    def _list_generations(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        if not self.shards_dir.is_dir():
            return out
        for index_dir in self.shards_dir.iterdir():
            if not index_dir.is_dir():
                continue
            gens = {int(g.name[1:]) for g in index_dir.iterdir()
                    if g.is_dir() and g.name.startswith("g") and g.name[1:].isdigit()}
            if gens or not any(index_dir.iterdir()):
                out[index_dir.name] = gens
        return out

    async def persist_failures(self) -> list[str]:
        out = []
        for (index_id, gen, shard_no, replica_no), rep in list(self._replicas.items()):
            why = rep.persist_error()
            if why is not None:
                out.append(f"{index_id}/g{gen}/s{shard_no}r{replica_no}: {why}")
        return out

    async def healthy(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._open_lock:
            for index_id, gen in list(self._specs):
                await self._close_generation(index_id, gen)
        self._pool.shutdown(wait=True)
