"""Shard hosts: where the shard replicas of every index live, behind one async interface.

* :class:`~search_workers.local.LocalHost` - engines in the API process (the embedded default).
* :class:`~search_workers.actors.ray_host.RayHost` - one named Ray actor per shard replica.

:func:`search_workers.hosting.make_host` picks one from the settings (``SHOPSEARCH_RAY_ADDRESS``);
this module is what both share: the interface (:class:`ShardHost`), its errors, and
:class:`BaseHost`, which holds everything that is not about *where* a replica runs: writes to every
replica of a shard, the query fan-out to one replica of every shard with fail-over, the merge
(:mod:`search_workers.merge`) and the catch-up bookkeeping.

Sequences, restarts and re-feeding (contract with the control plane)
====================================================================
Each replica persists its applied seq (in the index's global sequence) with its files.  A replica
whose files are gone (new node, lost disk, actor restarted elsewhere) starts empty at seq ``0``.
The host never reads the database; the control plane keeps replicas complete
(``control_plane.shard.feed.catch_up``)::

    for shard, from_seq in await host.missing(index_id, gen, S):
        changes = <that shard's changes with seq > from_seq, from the database, in seq order>
        await host.apply(index_id, gen, shard, changes, after_seq=from_seq)
    # a shard that got none of the changes still moves to S: Change(seq=S, op="advance")

``missing`` computes ``from_seq``: the lowest seq among the shard's replicas (``0`` for an empty or
unreachable one).  ``after_seq`` guards against gaps: a replica behind it (it restarted meanwhile)
refuses the batch and reports its own seq, so the caller feeds it again from there.  Replicas
already further skip what they have: ``apply`` is idempotent by seq.
:meth:`BaseHost.applied_seqs` shows the raw numbers (``-1`` for a replica that stayed unreachable).

Search prefers up-to-date replicas: every shard answer carries the replica's ``applied_seq``; the
host remembers the highest seq seen per shard (from applies and answers) and skips a replica that
is behind it when another replica of that shard is current.  When none is, the stale answer is
used and the merged answer says ``partial``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from search_workers.merge import merge_answers
from shared.contract import Answer, Change, Query, ShardSpec, shard_query
from shared.routing import shard_for

log = logging.getLogger(__name__)

__all__ = [
    "ShardHost",
    "BaseHost",
    "HostError",
    "ShardNotOpen",
    "ShardUnavailable",
    "replica_dir_name",
]


class HostError(Exception):
    """A failure of the shard host itself (not of the query); ``code`` maps to an API error code."""

    code = "UNAVAILABLE"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ShardNotOpen(HostError):
    """The generation was never opened on this host (call ``open(spec)`` first)."""

    code = "SHARD_NOT_OPEN"


class ShardUnavailable(HostError):
    """No replica of a shard answered within the retry window."""

    code = "UNAVAILABLE"


@runtime_checkable
class ShardHost(Protocol):
    async def open(self, spec: ShardSpec) -> None: ...
    async def applied_seqs(self, index_id: str, generation: int) -> dict[int, list[int]]: ...
    async def missing(self, index_id: str, generation: int, target_seq: int) -> list[tuple[int, int]]: ...
    async def apply(self, index_id: str, generation: int, shard_no: int, changes: Sequence[Change], *,
                    after_seq: int | None = None) -> list[int]: ...
    async def search(self, index_id: str, generation: int, query: Query) -> Answer: ...
    async def search_here(self, index_id: str, generation: int, query: Query) -> Answer | None: ...
    async def get(self, index_id: str, generation: int, doc_id: str) -> dict[str, Any] | None: ...
    async def drop(self, index_id: str, generation: int) -> None: ...
    async def drop_index(self, index_id: str) -> None: ...
    async def stored_generations(self) -> dict[str, set[int]]: ...
    async def persist_failures(self) -> list[str]: ...
    async def nodes(self) -> list[str] | None: ...
    async def rebalance(self, index_id: str, generation: int) -> list[tuple[int, int]]: ...
    async def healthy(self) -> bool: ...
    async def close(self) -> None: ...


def check_index_id(index_id: str) -> None:
    """Index ids name directories and actors: refuse what could escape them."""
    if not index_id or "/" in index_id or "\\" in index_id or ":" in index_id or index_id in (".", ".."):
        raise ValueError(f"invalid index id {index_id!r}")


def replica_dir_name(generation: int, shard_no: int, replica_no: int) -> str:
    """``g<generation>/s<shard>r<replica>`` (below ``<shards dir>/<index_id>``)."""
    return f"g{generation}/s{shard_no}r{replica_no}"


class BaseHost:
    """Fan-out, fail-over and merge on top of four primitives a concrete host provides."""

    #: how long a shard may stay without any answering replica before a call fails
    retry_timeout: float = 15.0
    #: per-call timeouts (a hung replica counts as unavailable)
    read_timeout: float = 10.0
    write_timeout: float = 300.0

    def __init__(self) -> None:
        self._rr = itertools.count()
        self._seen: dict[tuple[str, int, int], int] = {}
        self._apply_locks: dict[tuple[str, int, int], asyncio.Lock] = {}

    # -- primitives ----------------------------------------------------------------------
    async def _layout(self, index_id: str, generation: int) -> tuple[int, int]:
        """``(shards, replicas)`` of an opened generation, or :class:`ShardNotOpen`."""
        raise NotImplementedError

    async def _call(self, index_id: str, generation: int, shard_no: int, replica_no: int, method: str,
                    *args: Any, timeout: float) -> Any:
        """Run ``ShardReplica.<method>(*args)`` on one replica."""
        raise NotImplementedError

    def _unavailable(self, exc: BaseException) -> bool:
        """Whether ``exc`` from :meth:`_call` means "this replica is down, try another"."""
        return isinstance(exc, asyncio.TimeoutError | TimeoutError)

    # -- helpers -------------------------------------------------------------------------
    def _note_seq(self, index_id: str, generation: int, shard_no: int, seq: int) -> None:
        key = (index_id, generation, shard_no)
        if seq > self._seen.get(key, 0):
            self._seen[key] = seq

    def _forget(self, index_id: str, generation: int | None = None) -> None:
        for d in (self._seen, self._apply_locks):
            for k in [k for k in d if k[0] == index_id and (generation is None or k[1] == generation)]:
                del d[k]

    async def _call_retrying(self, index_id: str, generation: int, shard_no: int, replica_no: int,
                             method: str, *args: Any, timeout: float, retry_timeout: float | None = None) -> Any:
        """One replica, retried while it is unavailable (e.g. restarting) up to ``retry_timeout``."""
        deadline = time.monotonic() + (self.retry_timeout if retry_timeout is None else retry_timeout)
        delay = 0.05
        while True:
            try:
                return await self._call(index_id, generation, shard_no, replica_no, method, *args, timeout=timeout)
            except Exception as exc:
                if not self._unavailable(exc) or time.monotonic() + delay > deadline:
                    raise
                log.info("replica %s/g%s/s%sr%s unavailable (%s); retrying", index_id, generation, shard_no,
                         replica_no, type(exc).__name__)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def _read_shard(self, index_id: str, generation: int, shard_no: int, replicas: int, method: str,
                          *args: Any, seq_of: Callable[[Any], int] | None = None) -> tuple[Any, bool]:
        """Call ``method`` on one replica of a shard, round-robin, failing over to the others.

        ``seq_of(result)`` gives the replica's applied seq for a result (answers of replicas behind the
        shard's known seq are only used when no current replica answers).  Returns
        ``(result, stale)``.
        """
        start = next(self._rr)
        deadline = time.monotonic() + self.retry_timeout
        delay = 0.05
        known = self._seen.get((index_id, generation, shard_no), 0)
        last_exc: BaseException | None = None
        while True:
            stale: tuple[int, Any] | None = None
            for i in range(replicas):
                r = (start + i) % replicas
                try:
                    res = await self._call(index_id, generation, shard_no, r, method, *args, timeout=self.read_timeout)
                except Exception as exc:
                    if not self._unavailable(exc):
                        raise
                    last_exc = exc
                    continue
                if seq_of is None:
                    return res, False
                seq = int(seq_of(res))
                self._note_seq(index_id, generation, shard_no, seq)
                if seq >= known:
                    return res, False
                if stale is None or seq > stale[0]:
                    stale = (seq, res)
            if stale is not None:
                return stale[1], True
            if time.monotonic() + delay > deadline:
                raise ShardUnavailable(
                    f"no replica of shard {shard_no} of {index_id}/g{generation} answered ({last_exc!r})"
                ) from last_exc
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _lock(self, index_id: str, generation: int, shard_no: int) -> asyncio.Lock:
        key = (index_id, generation, shard_no)
        lock = self._apply_locks.get(key)
        if lock is None:
            lock = self._apply_locks[key] = asyncio.Lock()
        return lock

    # -- the interface -------------------------------------------------------------------
    async def applied_seqs(self, index_id: str, generation: int) -> dict[int, list[int]]:
        """``{shard_no: [applied_seq per replica]}``; ``0`` for a fresh/rebuilt replica, ``-1`` if unreachable."""
        shards, replicas = await self._layout(index_id, generation)

        async def one(s: int, r: int) -> int:
            try:
                seq = int(await self._call_retrying(index_id, generation, s, r, "applied_seq",
                                                    timeout=self.read_timeout))
            except Exception as exc:
                if not self._unavailable(exc):
                    raise
                return -1
            self._note_seq(index_id, generation, s, seq)
            return seq

        seqs = await asyncio.gather(*(one(s, r) for s in range(shards) for r in range(replicas)))
        return {s: list(seqs[s * replicas:(s + 1) * replicas]) for s in range(shards)}

    async def missing(self, index_id: str, generation: int, target_seq: int) -> list[tuple[int, int]]:
        """``[(shard_no, from_seq)]`` for every shard with a replica behind ``target_seq``.

        ``from_seq`` is the lowest applied seq among that shard's replicas (``0`` when one is empty or
        unreachable): re-feed the shard's changes with ``seq > from_seq``.
        """
        out = []
        for s, seqs in sorted((await self.applied_seqs(index_id, generation)).items()):
            if min(seqs) < target_seq:
                out.append((s, max(0, min(seqs))))
        return out

    async def apply(self, index_id: str, generation: int, shard_no: int, changes: Sequence[Change], *,
                    after_seq: int | None = None) -> list[int]:
        """Apply ``changes`` (all for ``shard_no``, in seq order) to every replica of the shard.

        Returns the applied seq per replica (``-1`` for a replica that stayed unreachable; raises
        :class:`ShardUnavailable` if none was reachable).  Search reflects the changes on return.
        See the module docstring for ``after_seq``.
        """
        shards, replicas = await self._layout(index_id, generation)
        if not 0 <= shard_no < shards:
            raise ValueError(f"shard {shard_no} out of range (index has {shards})")
        batch = list(changes)

        async def one(r: int) -> int | BaseException:
            try:
                return int(await self._call_retrying(index_id, generation, shard_no, r, "apply", batch, after_seq,
                                                     timeout=self.write_timeout))
            except Exception as exc:
                if not self._unavailable(exc):
                    raise
                return exc

        async with self._lock(index_id, generation, shard_no):
            results = await asyncio.gather(*(one(r) for r in range(replicas)))
        seqs = [r if isinstance(r, int) else -1 for r in results]
        if all(s < 0 for s in seqs):
            raise ShardUnavailable(f"no replica of shard {shard_no} of {index_id}/g{generation} is reachable")
        self._note_seq(index_id, generation, shard_no, max(seqs))
        return seqs

    async def search(self, index_id: str, generation: int, query: Query) -> Answer:
        """Fan the query out to one replica of every shard and merge (:func:`merge_answers`);
        ``partial`` when some shard only had replicas behind the latest known seq."""
        shards, replicas = await self._layout(index_id, generation)
        sq = shard_query(query)
        results = await asyncio.gather(*(
            self._read_shard(index_id, generation, s, replicas, "search", sq, seq_of=_answer_seq)
            for s in range(shards)
        ))
        merged = merge_answers(query, [a for a, _ in results])
        merged.partial = any(stale for _, stale in results)
        return merged

    async def stored_generations(self) -> dict[str, set[int]]:
        """``{index_id: {generation}}`` of the shard files this host keeps on its own disk (so the
        control plane can delete those no index serves or builds); none by default (a Ray actor
        keeps its own files wherever it runs)."""
        return {}

    async def persist_failures(self) -> list[str]:
        """``"<index>/g<gen>/s<shard>r<replica>: <why>"`` for every replica here whose disk refuses
        writes (it serves from memory and retries); none by default."""
        return []

    async def nodes(self) -> list[str] | None:
        """The ids of the alive nodes replicas are placed on; ``None`` for a host without nodes
        (in-process replicas)."""
        return None

    async def rebalance(self, index_id: str, generation: int) -> list[tuple[int, int]]:
        """Move replicas of an opened generation onto nodes that hold too few (one that joined);
        the moved ``(shard, replica)``, which start empty: re-feed them (:meth:`missing`). None
        move by default (a host without nodes)."""
        return []

    async def search_here(self, index_id: str, generation: int, query: Query) -> Answer | None:
        """:meth:`search` awaited on the caller's own event loop, when the host can answer without
        its own loop (no fail-over, no retry, every replica current); ``None`` when it cannot: then
        call :meth:`search` on the host's loop. The base host never can."""
        return None

    async def get(self, index_id: str, generation: int, doc_id: str) -> dict[str, Any] | None:
        """The stored document from the shard that owns ``doc_id``."""
        shards, replicas = await self._layout(index_id, generation)
        shard_no = shard_for(doc_id, shards)
        # with the replica's seq, so a restarted, still empty replica does not answer "not found"
        pair, _ = await self._read_shard(index_id, generation, shard_no, replicas, "get_with_seq", doc_id,
                                         seq_of=lambda p: p[1])
        return pair[0]  # type: ignore[no-any-return]


def _answer_seq(answer: Answer) -> int:
    return answer.applied_seq
