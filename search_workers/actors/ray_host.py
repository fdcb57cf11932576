"""Shard host on a Ray cluster: one named actor per shard replica (see :mod:`.factory`).

* Calls are ``await handle.method.remote(...)`` (ObjectRefs are awaitable) under
  ``asyncio.wait_for``; fan-out is ``asyncio.gather``; nothing blocks the event loop on
  ``ray.get``; the few blocking GCS calls (create/get actors, list nodes) run in a thread.
* Placement: at ``open`` the host lists the alive nodes (leaving out CPU-less nodes such as a
  KubeRay head started with ``num-cpus: 0`` when there are others), rotates the list by a hash of
  the index id, and puts replica ``r`` of shard ``s`` on node ``(s * replicas + r) % nodes`` with
  (hard) node affinity: the replicas of a shard are on different nodes whenever
  ``replicas <= nodes``, and the shards of an index spread over all nodes.  (Soft affinity was
  measured not to be honoured for zero-CPU actors on Ray 2.60 - several replicas of one shard
  landed on one node - hence hard affinity plus the revive path below.)
* A replica whose node left the cluster cannot be restarted by Ray under hard affinity (it fails
  with ``ActorUnschedulableError`` and its name is released); the host that opened the generation
  re-creates it on an alive node on the next call (:meth:`RayHost._revive`), empty, to be re-fed.
* A dead actor (killed, crashed, its node lost) is restarted by Ray; calls to it fail with
  ``RayActorError`` meanwhile, which the host treats as "unavailable": a search fails over to
  another replica of the shard, or retries for up to ``retry_timeout`` seconds.  The restarted
  actor re-opens its files or starts empty (``applied_seq == 0``); see :mod:`search_workers.host`
  for how the control plane re-feeds it.
* A host that did not open a generation itself (another API process did) finds its actors by
  name (``list_named_actors``) on first use.
* Searches take :meth:`RayHost.search_here` (the caller's loop; to an actor on this node over
  its channel, to others by Ray calls batched per actor - below) and fall back to
  :meth:`BaseHost.search` (the host loop: fail-over, retries, revival) whenever it declines.

What a search costs, and what limits growth on several machines
===============================================================
With near replicas (``SHOPSEARCH_RAY_NEAR_REPLICAS``, the default with a local Ray) a serving process
searches its own in-memory replicas once they caught up (``control_plane.shard.ShardBridge.near``) and
comes here only until then: on one machine that searched at 0.94-1.01x the in-process rate
(``ray_http_bench``, 2026-11-25; 0.98-1.00x in a second sitting, with 1.04-1.05x the CPU per search:
Ray's daemons and the primary's second follower, ~0.05 cores whatever the load), where searches over
the channels below did 0.80-0.84x. They hold
every index in every serving process (holding only the shards of the process's own node is not
built), so across machines memory limits them, not CPU. What follows is what a search costs when it
does come here (no near replicas: the default when joining a cluster).

The engine's work is the same in an actor as in-process (~0.75 ms per shard for the storefront
profile at 100k products in 2 shards, on a good day of this VM; the same queries in a loop take as
long in an actor as in a plain process), but every actor call
adds Ray's own work: submission, the caller's and the actor's IO threads, the task's execution
machinery - measured ~0.7-0.8 ms of CPU per call on a 2-core machine, half in the API process and
half in the actor. A search pays that once per shard, as much again as the engine.

So on the actor's own node a search does not make Ray calls: each actor also serves searches on
a Unix socket (:mod:`.channel`), and the API process's lane to that actor sends the shard query
there (pipelined, one request per shard query, answers as msgpack bytes), once it has asked the
actor for its address. Everything else - applies, probes, placement, restarts, fail-over - stays
Ray's; a broken channel (the actor died) settles its searches as "unavailable", they take the
general path, and the lane asks the restarted actor for its new address
(:attr:`RayHost.channel_retry`, doubling while it fails).

To actors on other nodes, batching amortises the per-call cost over concurrent searches, with no
added delay: per event loop and actor (a :class:`_Lane`), a shard query is sent at once when
fewer than :attr:`RayHost.max_in_flight` calls are in flight to that actor; otherwise it waits,
and when a call comes back every query waiting for that actor goes in one call
(:meth:`~.factory.ShardActor.search_many_packed`, up to :attr:`RayHost.max_batch`; one msgpack
list of answers, an engine error as that query's own entry).

``python -m benchmarks.ray_batch_bench`` (one API loop with N concurrent searchers, 8 s each, no
HTTP; CPU ms per search summed over the caller and the two actor processes; one sitting):

=============================  =========  ==========  ==========
searchers                      1          4           8
=============================  =========  ==========  ==========
Ray calls, one per shard       3.1 ms     3.2 ms      3.0 ms
                               452/s      539/s       599/s
Ray calls, batched             3.3 ms     2.6 ms      2.6 ms
  (calls per search)           2.00       1.08        0.56
channels (this node)           1.7 ms     1.7 ms      1.8 ms
                               935/s      1,063/s     1,012/s
  (caller's share)             0.23 ms    0.22 ms     0.25 ms
in-process, 1 process          1.3 ms     1.3 ms      1.3 ms
                               756/s      790/s       745/s
in-process, 2 processes                   1.4 ms      1.45 ms
                                          1,434/s     1,369/s
=============================  =========  ==========  ==========

Through HTTP (``python -m benchmarks.ray_http_bench --ray actors:1,actors:2 --rounds 4``: an in-process
server (2 serving processes) and Ray-mode servers with 1 and 2 serving processes side by side, 100k
products, 2 shards, phases interleaved because this machine's speed drifts by more than the
difference; medians, ratios paired by round):

=================================  ====================  ====================  ====================
                                   in-process            Ray, 1 process        Ray, 2 processes
=================================  ====================  ====================  ====================
uncached, 4 clients                689/s, 2.41 ms CPU    597/s, 2.59 ms CPU    560/s, 2.91 ms CPU
  (Ray/in-process)                                       0.85x, 1.09x          0.77x, 1.28x
real-query mix, 8 clients          2,209/s, 0.65 ms CPU  1,934/s, 0.71 ms CPU  1,855/s, 0.83 ms CPU
  (Ray/in-process)                                       0.88x, 1.09x          0.82x, 1.27x
the mix, all cached, 8 clients     4,116/s, 0.30 ms CPU  4,167/s, 0.24 ms CPU  4,104/s, 0.30 ms CPU
=================================  ====================  ====================  ====================

Hence ``serve``'s default of half the cores in Ray mode (``cli.serve.default_workers``): the actors
do the engine's work, and more serving processes only take turns with them. Before channels (Ray
calls, batched; ``search_bench`` runs one after the other) Ray mode did 0.42x the uncached rate and
0.50x the mix's. What an uncached search still costs more: the query pickled and two answers
decoded in the API process, ~6% of an actor's time in the channel and the answer's encoding, and
three processes woken per search on two cores where in-process wakes one. That last one costs CPU,
not only latency (``python -m benchmarks.ray_actor_cost``, thread CPU timed inside the actors, on a
slower day of this VM): the engine took 1.13-1.24 ms per shard query served over the channel against
1.05 ms for the same queries in a loop, in the actor as in a plain process (1.25 against 1.0 in
another sitting) - caches are cold after every switch between the API process and the two actors;
the channel's handler and the socket add ~0.12 ms; GC runs once per ~4,000 queries. Closing that on
one node needs another layout (an actor holding several shards, so that a search wakes one; or shard
data the API processes read themselves), not a cheaper protocol. In the mix, the computed answers wait in both actors' queues (every
search needs every shard, so each actor serialises all of them) - hence the p99. So on one machine
in-process stays the cheaper mode: by 10-15% on computed answers through HTTP in that sitting, by
more on a slower day of this VM (channels at 4 searchers did 0.62x the rate of two in-process
processes in another); Ray mode is what grows past one machine.
Two Ray calls in flight per actor cost more CPU than one and were no faster on one machine, hence
``max_in_flight = 1``; across machines, where a round trip leaves the actor idle, 2 may pay (not
measured).

* Read capacity grows with replicas and nodes (every search asks one replica of every shard), but
  the per-search cost grows with the number of shards: each shard is one more request (~0.1 ms
  over a channel; a Ray call to another node ~0.4 ms more CPU in the API process and ~0.4 ms in
  the actor, less when batched), and one more chance to wait for the slowest (the fan-out's
  latency is the maximum of the shards'). Shard for size (memory per actor, engine time per
  shard), not for speed; add replicas for read traffic.
* Channels are node-local (a Unix socket, the peer's user checked): searches of actors on other
  nodes are Ray calls. A TCP channel between nodes would save the same there, but needs its own
  authentication and encryption (Ray's calls have the cluster's); not built.
* The API processes are Ray drivers: each holds a core worker with its threads and a connection
  to the GCS, and spends ~0.4 ms CPU per Ray call; the merge (hits, facet counts) is theirs too,
  growing with shards x facet values. The API tier must grow with the search rate.
* The head node's GCS is one process: actor creation, name lookups (``list_named_actors`` on
  first use in every API process), node liveness, and the task events calls report. Search calls
  report none (``ShardActor.search_packed``: ~0.2 ms CPU less per two-shard search here, and no
  central load growing with the search rate); applies, opens and probes still do.
* Across machines a search also pays a network round trip per shard (in parallel), and every shard
  ships its whole top page (20 documents, ~9 KB) of which the merge keeps 1/shards. Fetching
  documents and highlights in a second phase for the merged page only would halve the decoding
  and the bytes with two shards, but costs a second call to (typically) every shard; on one
  machine that is ~+1.5 ms for ~-0.2 ms saved, so the single phase stays (it pays only with
  many shards, big pages or big documents over a slow network).
* Placement is static: hard node affinity chosen at ``open`` (``num_cpus=0`` actors, so Ray does
  not balance them by load); a node that leaves costs its replicas a rebuild from the database
  (see ``_revive``); a hot shard cannot be split - resharding is a full
  rebuild. Scores use per-shard statistics (see :mod:`search_workers.merge`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as rex
from ray.util.client import ray as client_ray

from search_workers.engine import ShardEngine
from search_workers.host import BaseHost, ShardNotOpen, check_index_id, replica_dir_name
from search_workers.merge import merge_answers
from shared.contract import Answer, Query, ShardSpec, shard_query
from shared.routing import shard_hash

from . import channel as channel_module
from .channel import ChannelClient
from .factory import (
    NAMESPACE,
    actor_name,
    pack_query,
    parse_actor_name,
    shard_actor,
    unpack_answer,
    unpack_many,
)

log = logging.getLogger(__name__)

_UNAVAILABLE = (
    rex.RayActorError,  # ActorDiedError, ActorUnavailableError (restarting)
    rex.ActorUnschedulableError,  # its node is gone (hard node affinity): revived elsewhere
    rex.GetTimeoutError,
    rex.WorkerCrashedError,
    rex.NodeDiedError,
    rex.ObjectLostError,
    rex.RaySystemError,
    asyncio.TimeoutError,
    TimeoutError,
)


class RayHost(BaseHost):
    #: how long ``open`` waits for new actors to start (worker processes take a while on small nodes)
    open_timeout: float = 120.0
    #: :meth:`search_here` batches the shard queries that arrive while calls to an actor are in flight
    batching: bool = True
    #: calls in flight from one event loop to one actor before further queries wait for a batch
    #: (1 measured best on one machine: bigger batches, and the cores are busy anyway; see above)
    max_in_flight: int = 1
    #: shard queries per batched call at most
    max_batch: int = 32
    #: searches go over the actors' channels (:mod:`.channel`) to the actors on this node
    channels: bool = True
    #: seconds before a lane asks again for a channel that broke or could not be opened
    channel_retry: float = 1.0

    def __init__(self, shards_dir: str | os.PathLike, *, namespace: str = NAMESPACE, detached: bool = True,
                 owns_ray: bool = False) -> None:
        super().__init__()
        self.shards_dir = Path(shards_dir).resolve()
        self.namespace = namespace
        self.detached = detached
        self._owns_ray = owns_ray
        # (index_id, generation) -> handles[shard][replica]
        self._handles: dict[tuple[str, int], list[list[Any]]] = {}
        self._open_lock = asyncio.Lock()
        self._specs: dict[tuple[str, int], ShardSpec] = {}
        self._placed: dict[tuple[str, int], dict[tuple[int, int], str | None]] = {}
        self._revive_lock = asyncio.Lock()
        # the fast path's lanes: per event loop, per (index_id, generation, shard, replica)
        self._lanes: dict[asyncio.AbstractEventLoop, dict[tuple[str, int, int, int], _Lane]] = {}
        #: fast-path actor calls made and shard queries they carried (calls < queries: batches formed)
        self.fast_calls = 0
        self.fast_queries = 0
        #: fast-path shard queries sent over a channel instead
        self.channel_queries = 0
        self._node: str | None | bool = False  # False: not looked up yet

    @classmethod
    def connect(cls, address: str, shards_dir: str | os.PathLike, *, namespace: str = NAMESPACE) -> RayHost:
        """``"local"``: start a Ray instance here (actors owned by this process); anything else
        (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``): join that cluster (detached actors)."""
        os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        if address == "local":
            # address="local": a new instance even when a `ray start` cluster runs on this machine
            # (an address-less ray.init() joins that one, and then refuses num_cpus)
            if not ray.is_initialized():
                ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, namespace=namespace,
                         log_to_driver=False)
            return cls(shards_dir, namespace=namespace, detached=False, owns_ray=True)
        if not ray.is_initialized():
            ray.init(address=address, namespace=namespace, log_to_driver=False)
        return cls(shards_dir, namespace=namespace, detached=True, owns_ray=False)

    @staticmethod
    def start_cluster(namespace: str = NAMESPACE) -> str:
        """Start a Ray instance here for several serving processes to join (``serve --workers`` with
        ``SHOPSEARCH_RAY_ADDRESS=local``); its address. It lives as long as this process."""
        os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, namespace=namespace,
                 log_to_driver=False)
        return str(ray.get_runtime_context().gcs_address)

    def node_id(self) -> str | None:
        """The Ray node this process is on (``None``: unknown, or a Ray client connection - a
        ``ray://`` driver runs on the cluster, not here, so no actor shares this machine)."""
        if self._node is False:
            try:
                self._node = None if client_ray.is_connected() else str(ray.get_runtime_context().get_node_id())
            except Exception:
                self._node = None
        return self._node  # type: ignore[return-value]

    # -- primitives ----------------------------------------------------------------------
    def _unavailable(self, exc: BaseException) -> bool:
        return isinstance(exc, _UNAVAILABLE)

    async def _generation(self, index_id: str, generation: int) -> list[list[Any]]:
        handles = self._handles.get((index_id, generation))
        if handles is None:
            handles = await asyncio.to_thread(self._discover, index_id, generation)
            if not handles:
                raise ShardNotOpen(f"{index_id}/g{generation} has no shard actors")
            self._handles[(index_id, generation)] = handles
        return handles

    def _named(self, index_id: str, generation: int | None = None) -> list[tuple[int, int, int, str]]:
        out = []
        for entry in ray.util.list_named_actors(all_namespaces=True):
            if entry.get("namespace") != self.namespace:
                continue
            parsed = parse_actor_name(entry["name"])
            if parsed and parsed[0] == index_id and (generation is None or parsed[1] == generation):
                out.append((parsed[1], parsed[2], parsed[3], entry["name"]))
        return out

    def _discover(self, index_id: str, generation: int) -> list[list[Any]]:
        named = self._named(index_id, generation)
        if not named:
            return []
        shards = max(s for _, s, _, _ in named) + 1
        replicas = max(r for _, _, r, _ in named) + 1
        return [[ray.get_actor(actor_name(index_id, generation, s, r), namespace=self.namespace)
                 for r in range(replicas)] for s in range(shards)]

    async def _layout(self, index_id: str, generation: int) -> tuple[int, int]:
        handles = await self._generation(index_id, generation)
        return len(handles), len(handles[0])

    async def _call(self, index_id: str, generation: int, shard_no: int, replica_no: int, method: str,
                    *args: Any, timeout: float) -> Any:
        handle = (await self._generation(index_id, generation))[shard_no][replica_no]
        ref = getattr(handle, method).remote(*args)
        try:
            return await asyncio.wait_for(_awaitable(ref), timeout)
        except (rex.ActorDiedError, rex.ActorUnschedulableError):
            await self._revive(index_id, generation, shard_no, replica_no, handle)
            raise  # unavailable: the caller fails over / retries (on the new actor)
        except rex.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None  # EngineError & co. reach the caller as themselves
            raise

    async def search_here(self, index_id: str, generation: int, query: Query) -> Answer | None:
        """The search's fast path, awaited on the caller's loop (any thread, any loop): one replica
        of every shard (round-robin) answers, as msgpack bytes, then the merge. ``None`` - call
        :meth:`search` on the host's loop, which fails over, retries and revives - when the
        generation's actors are not known here yet, a replica did not answer in ``read_timeout``,
        or one answered from behind the shard's known seq. The engine's refusals (EngineError &
        co.) are raised as themselves.

        With :attr:`batching` (see the module docstring), a shard query goes to its actor at once
        when fewer than :attr:`max_in_flight` calls from this loop are in flight to it; otherwise
        it waits for one of them to come back and then goes with every other query waiting for
        that actor in one call (:meth:`~.factory.ShardActor.search_many_packed`). Without, every
        search makes its own call per shard (:meth:`_search_each`)."""
        rows = self._handles.get((index_id, generation))
        if rows is None:
            return None
        if not self.batching:
            return await self._search_each(index_id, generation, query, rows)
        loop = asyncio.get_running_loop()
        lanes = self._lanes.get(loop)
        if lanes is None:
            lanes = self._loop_lanes(loop)
        sq = pack_query(shard_query(query))
        turn = next(self._rr)
        search = _Search(loop.create_future(), len(rows))
        for shard_no, row in enumerate(rows):
            replica_no = turn % len(row)
            handle = row[replica_no]
            key = (index_id, generation, shard_no, replica_no)
            lane = lanes.get(key)
            if lane is None or lane.handle is not handle:  # new, or the replica was re-created
                if lane is not None:
                    lane.close()
                lane = lanes[key] = _Lane(self, handle, loop)
            lane.submit(sq, search, shard_no)
        try:
            results = await asyncio.wait_for(search.future, self.read_timeout)
        except TimeoutError:
            return None
        answers: list[Answer] = []
        for result in results:  # the first failure in shard order decides, as in _search_each
            if isinstance(result, Answer):
                answers.append(result)
            elif result is None:
                return None
            else:
                raise result
        return self._merge_current(index_id, generation, query, answers)

    def _loop_lanes(self, loop: asyncio.AbstractEventLoop) -> dict[tuple[str, int, int, int], _Lane]:
        for old in [lp for lp in list(self._lanes) if lp.is_closed()]:
            self._lanes.pop(old, None)
        return self._lanes.setdefault(loop, {})

    def _drop_lanes(self, index_id: str, generation: int | None = None) -> None:
        for lanes in list(self._lanes.values()):
            for key in [k for k in list(lanes) if k[0] == index_id and generation in (None, k[1])]:
                lanes.pop(key).close()

    def _outcome(self, exc: BaseException) -> BaseException | None:
        """What a failed shard call means for its search: the engine's exception to raise, or
        ``None`` (unavailable: the general path takes the search)."""
        if isinstance(exc, rex.RayTaskError):
            cause = getattr(exc, "cause", None)
            return cause if isinstance(cause, BaseException) and not self._unavailable(cause) else None
        return None if self._unavailable(exc) else exc

    def _merge_current(self, index_id: str, generation: int, query: Query, answers: list[Answer]) -> Answer | None:
        for shard_no, answer in enumerate(answers):
            seq = answer.applied_seq
            self._note_seq(index_id, generation, shard_no, seq)
            if seq < self._seen.get((index_id, generation, shard_no), 0):
                return None  # a replica behind: the general path prefers a current one
        merged = merge_answers(query, answers)
        merged.partial = False
        return merged

    async def _search_each(self, index_id: str, generation: int, query: Query,
                           rows: list[list[Any]]) -> Answer | None:
        """:meth:`search_here` without batching: one call per shard for this search alone, one
        wake-up of the caller's loop when the last answer is in."""
        sq = pack_query(shard_query(query))
        turn = next(self._rr)
        try:
            refs = [row[turn % len(row)].search_packed.remote(sq) for row in rows]
        except AttributeError:  # actors made by an older version (no search_packed): the general path
            return None
        self.fast_calls += len(refs)
        self.fast_queries += len(refs)
        try:
            packed = await asyncio.wait_for(_all_results(refs), self.read_timeout)
        except Exception as exc:
            outcome = self._outcome(exc)
            if outcome is None:
                return None
            if outcome is exc:
                raise
            raise outcome from None  # EngineError & co., as :meth:`_call` raises them
        return self._merge_current(index_id, generation, query, [unpack_answer(p) for p in packed])

    async def _revive(self, index_id: str, generation: int, shard_no: int, replica_no: int, dead: Any) -> None:
        """Re-create a replica whose actor is gone for good (its node left the cluster: with hard node
        affinity Ray cannot restart it elsewhere, and releases its name; or it was killed for good).
        An actor that is merely restarting keeps its name and is left to Ray; one another process
        re-created under the name already replaces the dead handle here (without that, this process
        kept calling the dead one: its searches failed for the whole retry window, every time).
        The new actor reopens the replica's files when it lands on their node, and otherwise starts
        empty and is re-fed by the control plane like any empty replica."""
        name = actor_name(index_id, generation, shard_no, replica_no)
        async with self._revive_lock:
            rows = self._handles.get((index_id, generation))
            if rows is None or rows[shard_no][replica_no] is not dead:
                return  # dropped, or already revived by another call

            def lookup() -> Any:
                try:
                    return ray.get_actor(name, namespace=self.namespace)
                except ValueError:
                    return None

            found = await asyncio.to_thread(lookup)
            if found is not None:
                if found != dead:  # another actor under the name (handles compare by actor id)
                    rows[shard_no][replica_no] = found
                return
            spec = self._specs.get((index_id, generation))
            if spec is None:  # never opened here: the process that opened it (or a reopen) re-creates it
                return
            nodes = await asyncio.to_thread(self._alive_nodes)
            placed = self._placed.setdefault((index_id, generation), {})
            node = self.replacement_node(placed, shard_no, replica_no, nodes)
            placed[(shard_no, replica_no)] = node
            log.warning("shard actor %s is gone; re-creating it on node %s", name, node)
            rows[shard_no][replica_no] = await asyncio.to_thread(
                shard_actor, index_id, generation, shard_no, replica_no,
                path=str(self.shards_dir / index_id / replica_dir_name(generation, shard_no, replica_no)),
                mapping=spec.mapping, language=spec.language, node_id=node, namespace=self.namespace,
                detached=self.detached)

    # -- placement -----------------------------------------------------------------------
    @staticmethod
    def _alive_nodes() -> list[str]:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        with_cpu = [n for n in nodes if float((n.get("Resources") or {}).get("CPU", 0)) > 0]
        return sorted(n["NodeID"] for n in (with_cpu or nodes))

    @staticmethod
    def placement(index_id: str, shards: int, replicas: int, nodes: list[str]) -> dict[tuple[int, int], str | None]:
        """Node per ``(shard, replica)``: replicas of a shard on different nodes, shards round-robin."""
        if not nodes:
            return {(s, r): None for s in range(shards) for r in range(replicas)}
        off = shard_hash(index_id) % len(nodes)
        return {(s, r): nodes[(off + s * replicas + r) % len(nodes)] for s in range(shards) for r in range(replicas)}

    @staticmethod
    def replacement_node(placed: dict[tuple[int, int], str | None], shard_no: int, replica_no: int,
                         nodes: list[str]) -> str | None:
        """An alive node for a re-created replica: not one holding another replica of its shard if
        possible, then the one holding fewest replicas of the index."""
        if not nodes:
            return None
        siblings = {n for (s, r), n in placed.items() if s == shard_no and r != replica_no}
        load = {n: 0 for n in nodes}
        for (s, r), n in placed.items():
            if n in load and (s, r) != (shard_no, replica_no):
                load[n] += 1
        return min(nodes, key=lambda n: (n in siblings, load[n], n))

    # -- interface -----------------------------------------------------------------------
    async def open(self, spec: ShardSpec) -> None:
        """Create (or get) every replica actor of the generation and wait until each serves ``spec``'s
        mapping.  Idempotent; also the way to change the mapping of live replicas in place."""
        ShardEngine.validate_mapping(spec.mapping, spec.language)
        async with self._open_lock:
            nodes = await asyncio.to_thread(self._alive_nodes)
            where = self.placement(spec.index_id, spec.shards, spec.replicas, nodes)

            def create() -> list[list[Any]]:
                return [[shard_actor(
                    spec.index_id, spec.generation, s, r,
                    path=str(self.shards_dir / spec.index_id / replica_dir_name(spec.generation, s, r)),
                    mapping=spec.mapping, language=spec.language, node_id=where[(s, r)],
                    namespace=self.namespace, detached=self.detached,
                ) for r in range(spec.replicas)] for s in range(spec.shards)]

            self._specs[(spec.index_id, spec.generation)] = spec
            known = self._handles.get((spec.index_id, spec.generation))
            if known is None or len(known) != spec.shards or len(known[0]) != spec.replicas:
                self._placed[(spec.index_id, spec.generation)] = dict(where)
                # keep the first handles: for actors owned by this process (not detached) they are what
                # keeps the actors alive - replacing them would let Ray collect the actors
                self._handles[(spec.index_id, spec.generation)] = await asyncio.to_thread(create)
        await asyncio.gather(*(
            self._call_retrying(spec.index_id, spec.generation, s, r, "ensure", spec.mapping, spec.language,
                                timeout=self.open_timeout, retry_timeout=self.open_timeout)
            for s in range(spec.shards) for r in range(spec.replicas)
        ))

    async def replica_info(self, index_id: str, generation: int) -> dict[int, list[dict]]:
        """``{shard: [info per replica]}`` (node id, pid, applied seq, doc count) - for status pages and tests."""
        handles = await self._generation(index_id, generation)
        infos = await asyncio.gather(*(
            self._call_retrying(index_id, generation, s, r, "info", timeout=self.read_timeout)
            for s in range(len(handles)) for r in range(len(handles[0]))
        ))
        n = len(handles[0])
        return {s: list(infos[s * n:(s + 1) * n]) for s in range(len(handles))}

    async def actor(self, index_id: str, generation: int, shard_no: int, replica_no: int) -> Any:
        """The actor handle of one replica (for operators and tests)."""
        return (await self._generation(index_id, generation))[shard_no][replica_no]

    async def _destroy(self, handles: list[Any]) -> None:
        async def one(h: Any) -> None:
            try:
                await asyncio.wait_for(_awaitable(h.destroy.remote()), 30)
            except Exception as exc:  # dead actor: its files go with its node (or stay as garbage)
                log.warning("could not delete shard files of %s: %r", h, exc)
            try:
                await asyncio.to_thread(ray.kill, h, no_restart=True)
            except Exception as exc:  # pragma: no cover - already gone
                log.debug("kill failed: %r", exc)

        await asyncio.gather(*(one(h) for h in handles))

    def _find(self, index_id: str, generation: int | None) -> list[Any]:
        """Handles of every actor of the index (or generation): the ones held here plus any other named one."""
        held = {(g, s, r): h for (i, g), rows in self._handles.items() if i == index_id and generation in (None, g)
                for s, row in enumerate(rows) for r, h in enumerate(row)}
        for g, s, r, name in self._named(index_id, generation):
            if (g, s, r) not in held:
                with contextlib.suppress(ValueError):  # died meanwhile
                    held[(g, s, r)] = ray.get_actor(name, namespace=self.namespace)
        return list(held.values())

    async def drop(self, index_id: str, generation: int) -> None:
        """Delete the generation's files (each actor removes its own) and kill its actors."""
        check_index_id(index_id)
        async with self._open_lock:
            self._specs.pop((index_id, generation), None)
            self._placed.pop((index_id, generation), None)
            await self._destroy(await asyncio.to_thread(self._find, index_id, generation))
            self._handles.pop((index_id, generation), None)
            self._drop_lanes(index_id, generation)
            self._forget(index_id, generation)

    async def drop_index(self, index_id: str) -> None:
        check_index_id(index_id)
        async with self._open_lock:
            for key in [k for k in self._specs if k[0] == index_id]:
                del self._specs[key]
                self._placed.pop(key, None)
            await self._destroy(await asyncio.to_thread(self._find, index_id, None))
            for key in [k for k in self._handles if k[0] == index_id]:
                del self._handles[key]
            self._drop_lanes(index_id)
            self._forget(index_id)

    async def healthy(self) -> bool:
        if not ray.is_initialized():
            return False
        try:
            return bool(await asyncio.wait_for(asyncio.to_thread(self._alive_nodes), 5))
        except Exception:
            return False

    async def close(self) -> None:
        self._handles.clear()
        for lanes in self._lanes.values():
            for lane in lanes.values():
                lane.close()
        self._lanes.clear()
        if self._owns_ray and ray.is_initialized():
            await asyncio.to_thread(ray.shutdown)


async def _awaitable(ref: Any) -> Any:
    return await ref


def _all_results(refs: list[Any]) -> asyncio.Future[list[Any]]:
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


class _Search:
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
_Item = tuple[bytes, _Search, int]


class _Call:
    __slots__ = ("items", "started")

    def __init__(self, items: list[_Item], started: float) -> None:
        self.items = items
        self.started = started


class _Lane:
    """The fast path's calls from one event loop to one actor (touched on that loop only).

    On the actor's node, the lane sends each shard query over the actor's channel (:mod:`.channel`),
    once it has asked the actor for its address and connected; until then, and whenever the channel
    breaks (re-tried after :attr:`RayHost.channel_retry` seconds), it makes Ray calls:

    At most ``host.max_in_flight`` calls are in flight; a shard query arriving then waits, and
    when a call comes back the waiting queries go together in one call (up to ``host.max_batch``).
    A call older than ``host.read_timeout`` (its searches gave up) no longer counts as in flight,
    so an actor that never answers one call does not hold back the next searches for good."""

    __slots__ = ("batches", "channel", "channel_failures", "channel_state", "channel_task", "flight", "handle",
                 "host", "loop", "retry_at", "waiting")

    def __init__(self, host: RayHost, handle: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.host = host
        self.handle = handle
        self.loop = loop
        self.flight: list[_Call] = []
        self.waiting: list[_Item] = []
        self.batches = True  # False: an actor of an older version (no search_many_packed)
        self.channel: ChannelClient | None = None
        #: "idle" (ask for the address from ``retry_at`` on), "asking" or "none" (never: another node,
        #: no channel support, an older actor); an open channel is :attr:`channel`
        self.channel_state = "idle"
        self.channel_task: asyncio.Task[None] | None = None
        self.retry_at = 0.0
        self.channel_failures = 0

    def submit(self, sq: bytes, search: _Search, shard_no: int) -> None:
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
    def _over_channel(self, sq: bytes, search: _Search, shard_no: int) -> bool:
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

    def _reply(self, search: _Search, shard_no: int, reply: channel_module.Reply) -> None:
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
        search.settle(shard_no, result if isinstance(result, Answer) else self.host._outcome(result))

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

    def _send(self, items: list[_Item]) -> None:
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
            outcome = self.host._outcome(exc)
            self._settle(items, [outcome] * len(items))
            return
        host = self.host
        host.fast_calls += 1
        host.fast_queries += len(items)
        call = _Call(items, self.loop.time())
        self.flight.append(call)
        loop = self.loop

        def done(fut: concurrent.futures.Future[Any]) -> None:  # on a Ray thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(self._done, call, fut)

        ref.future().add_done_callback(done)

    def _done(self, call: _Call, fut: concurrent.futures.Future[Any]) -> None:
        with contextlib.suppress(ValueError):  # already dropped as stale
            self.flight.remove(call)
        self._pump()  # the actor gets its next batch before the answers are decoded
        items = call.items
        exc = fut.exception()
        if exc is not None:
            self._settle(items, [self.host._outcome(exc)] * len(items))
            return
        try:
            packed = fut.result()
            results: list[Answer | BaseException | None] = (
                [unpack_answer(packed)] if len(items) == 1 else
                [r if isinstance(r, Answer) else self.host._outcome(r) for r in unpack_many(packed)])
            if len(results) != len(items):  # pragma: no cover - defensive
                raise RuntimeError(f"{len(results)} answers for {len(items)} queries")
        except Exception as err:  # pragma: no cover - an answer that does not decode
            results = [err] * len(items)
        self._settle(items, results)

    @staticmethod
    def _settle(items: list[_Item], results: list[Answer | BaseException | None]) -> None:
        for (_, search, shard_no), result in zip(items, results, strict=True):
            search.settle(shard_no, result)
