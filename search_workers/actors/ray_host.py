"""Shard host on a Ray cluster: one named actor per shard replica (:mod:`.factory`), placed on the
cluster's nodes (:mod:`.placement`), searched over its transport (:mod:`.transport`).

* Calls are ``await handle.method.remote(...)`` (ObjectRefs are awaitable) under
  ``asyncio.wait_for``; fan-out is ``asyncio.gather``; nothing blocks the event loop on
  ``ray.get``; the few blocking GCS calls (create/get actors, list nodes) run in a thread.
* A dead actor (killed, crashed, its node lost) is restarted by Ray; calls to it fail with
  ``RayActorError`` meanwhile, which the host treats as "unavailable": a search fails over to
  another replica of the shard, or retries for up to ``retry_timeout`` seconds. The restarted actor
  re-opens its files or starts empty (``applied_seq == 0``); see :mod:`search_workers.host` for how
  the control plane re-feeds it. A replica whose node left the cluster (hard node affinity: Ray
  cannot restart it elsewhere, and releases its name) is re-created by the host that opened the
  generation on the next call (:meth:`RayHost._revive`), on the node
  :func:`~.placement.replacement_node` picks from where the other replicas are.
* :meth:`RayHost.rebalance` moves replicas onto a node that joined (the control plane's replica
  keeper calls it, then re-feeds what moved).
* A host that did not open a generation itself (another API process did) finds its actors by
  name (``list_named_actors``) on first use.
* Searches take :meth:`RayHost.search_here` (the caller's loop, through the lanes of
  :mod:`.transport`: each actor call costs Ray's machinery as much CPU as the engine's work, so
  searches go over a channel to actors on this node and batched to others) and fall back to
  :meth:`BaseHost.search` (the host loop: fail-over, retries, revival) whenever it declines.

Read capacity grows with replicas and nodes (every search asks one replica of every shard), but
the per-search cost grows with the number of shards: shard for size, add replicas for read
traffic. What a search costs in each layout, and what limits growth across machines, is measured
in ``benchmarks/README.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as rex
from ray.util.client import ray as client_ray

from search_workers.engine import ShardEngine
from search_workers.host import BaseHost, ShardNotOpen, check_index_id, replica_dir_name
from search_workers.merge import merge_answers
from shared.contract import Answer, Query, ShardSpec, shard_query

from .factory import NAMESPACE, actor_name, pack_query, parse_actor_name, shard_actor
from .placement import alive_nodes, place_replicas, rebalance_moves, replacement_node
from .transport import UNAVAILABLE, Lanes

log = logging.getLogger(__name__)


class RayHost(BaseHost):
    #: how long ``open`` waits for new actors to start (worker processes take a while on small nodes)
    open_timeout: float = 120.0
    #: :meth:`search_here` batches the shard queries that arrive while calls to an actor are in flight
    batching: bool = True
    #: calls in flight from one event loop to one actor before further queries wait for a batch
    #: (1 measured best on one machine: bigger batches, and the cores are busy anyway: benchmarks/README.md)
    max_in_flight: int = 1
    #: shard queries per batched call at most
    max_batch: int = 32
    #: searches go over the actors' channels (:mod:`.channel`) to the actors on this node
    channels: bool = True
    #: seconds before a lane asks again for a channel that broke or could not be opened
    channel_retry: float = 1.0
    #: how long a drop looks again for actors of the dropped index that still hold a name
    drop_timeout: float = 30.0
    #: how long a replica has to say where it runs before a placement decision goes without it
    probe_timeout: float = 5.0

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
        self._lanes = Lanes(self)  # the fast path's transport
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
        return isinstance(exc, UNAVAILABLE)

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

        With :attr:`batching` (see :mod:`.transport`), a shard query goes to its actor at once
        when fewer than :attr:`max_in_flight` calls from this loop are in flight to it; otherwise
        it waits for one of them to come back and then goes with every other query waiting for
        that actor in one call (:meth:`~.factory.ShardActor.search_many_packed`). Without, every
        search makes its own call per shard."""
        rows = self._handles.get((index_id, generation))
        if rows is None:
            return None
        sq = pack_query(shard_query(query))
        answers = await self._lanes.search(index_id, generation, rows, sq, next(self._rr))
        return None if answers is None else self._merge_current(index_id, generation, query, answers)

    def _merge_current(self, index_id: str, generation: int, query: Query, answers: list[Answer]) -> Answer | None:
        for shard_no, answer in enumerate(answers):
            seq = answer.applied_seq
            self._note_seq(index_id, generation, shard_no, seq)
            if seq < self._seen.get((index_id, generation, shard_no), 0):
                return None  # a replica behind: the general path prefers a current one
        merged = merge_answers(query, answers)
        merged.partial = False
        return merged

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
            nodes = await asyncio.to_thread(alive_nodes)
            placed = self._placed.setdefault((index_id, generation), {})
            for key, (where, _) in (await self._where(index_id, generation)).items():
                if where is not None:  # as the replicas say: other processes may have moved some
                    placed[key] = where
            node = replacement_node(placed, shard_no, replica_no, nodes)
            placed[(shard_no, replica_no)] = node
            log.warning("shard actor %s is gone; re-creating it on node %s", name, node)
            rows[shard_no][replica_no] = await asyncio.to_thread(
                shard_actor, index_id, generation, shard_no, replica_no,
                path=str(self.shards_dir / index_id / replica_dir_name(generation, shard_no, replica_no)),
                mapping=spec.mapping, language=spec.language, node_id=node, namespace=self.namespace,
                detached=self.detached)

    async def _where(self, index_id: str, generation: int) -> dict[tuple[int, int], tuple[str | None, int | None]]:
        """``{(shard, replica): (node id, applied seq)}`` as each replica answers, ``(None, None)``
        for one that does not within :attr:`probe_timeout`. Asked directly: no fail-over, no revival
        (:meth:`_revive` asks this under its lock)."""
        rows = await self._generation(index_id, generation)

        async def one(handle: Any) -> tuple[str | None, int | None]:
            try:
                info = await asyncio.wait_for(_awaitable(handle.info.remote()), self.probe_timeout)
                return info.get("nodeId"), int(info["appliedSeq"])
            except Exception:
                return None, None

        keys = [(s, r) for s in range(len(rows)) for r in range(len(rows[s]))]
        return dict(zip(keys, await asyncio.gather(*(one(rows[s][r]) for s, r in keys)), strict=True))

    async def nodes(self) -> list[str]:
        return await asyncio.to_thread(alive_nodes)

    async def rebalance(self, index_id: str, generation: int) -> list[tuple[int, int]]:
        """Move replicas of a generation opened here where :func:`~.placement.rebalance_moves` says (a
        node that joined takes its share; two replicas of a shard on one node are parted), only of
        shards whose every replica answers at one sequence; the moved ``(shard, replica)``.

        A move deletes the replica's files and kills its actor for good; it is then revived like a
        replica whose node left (:meth:`_revive`, by this or any other process: all pick the same
        node), empty, and the control plane re-feeds it (:meth:`missing`) while the shard's other
        replicas serve."""
        spec = self._specs.get((index_id, generation))
        if spec is None or spec.replicas < 2:
            return []
        nodes = await asyncio.to_thread(alive_nodes)
        where = await self._where(index_id, generation)
        movable = {s for s in range(spec.shards)
                   if len({where[(s, r)][1] for r in range(spec.replicas)}) == 1
                   and all(where[(s, r)][0] is not None for r in range(spec.replicas))}
        moves = rebalance_moves({k: n for k, (n, _) in where.items()}, nodes, movable)
        for (shard_no, replica_no), node in moves:
            log.warning("moving shard actor %s to node %s", actor_name(index_id, generation, shard_no, replica_no), node)
            await self._move(spec, shard_no, replica_no)
        return [key for key, _ in moves]

    async def _move(self, spec: ShardSpec, shard_no: int, replica_no: int) -> None:
        key = (spec.index_id, spec.generation)
        rows = await self._generation(*key)
        old = rows[shard_no][replica_no]
        try:  # from now on it sends callers to the shard's other replicas
            await asyncio.wait_for(_awaitable(old.retire.remote()), 30)
        except Exception as exc:  # its files stay where they are; the new replica starts empty elsewhere
            log.warning("could not delete shard files of %s: %r", old, exc)
        await asyncio.to_thread(ray.kill, old, no_restart=True)
        deadline = time.monotonic() + self.drop_timeout
        while rows[shard_no][replica_no] is old:  # until Ray releases the name and the revival takes it
            await self._revive(spec.index_id, spec.generation, shard_no, replica_no, old)
            if self._handles.get(key) is not rows:
                return  # dropped meanwhile
            if rows[shard_no][replica_no] is old:
                if time.monotonic() > deadline:
                    log.warning("the name of %s was not released; it is re-created at its next call", old)
                    return
                await asyncio.sleep(0.05)
        await self._call_retrying(spec.index_id, spec.generation, shard_no, replica_no, "ensure", spec.mapping,
                                  spec.language, timeout=self.open_timeout, retry_timeout=self.open_timeout)

    # -- interface -----------------------------------------------------------------------
    async def open(self, spec: ShardSpec) -> None:
        """Create (or get) every replica actor of the generation and wait until each serves ``spec``'s
        mapping.  Idempotent; also the way to change the mapping of live replicas in place."""
        ShardEngine.validate_mapping(spec.mapping, spec.language)
        async with self._open_lock:
            nodes = await asyncio.to_thread(alive_nodes)
            where = place_replicas(spec.index_id, spec.shards, spec.replicas, nodes)

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
        """Handles of every actor of the index (or generation): the ones held here plus any other
        named one (another process's, or a different actor under a held one's name)."""
        found = [h for (i, g), rows in self._handles.items() if i == index_id and generation in (None, g)
                 for row in rows for h in row]
        for _, _, _, name in self._named(index_id, generation):
            with contextlib.suppress(ValueError):  # died meanwhile
                named = ray.get_actor(name, namespace=self.namespace)
                if named not in found:  # handles compare by actor id
                    found.append(named)
        return found

    async def _destroy_all(self, index_id: str, generation: int | None) -> None:
        """Destroy every actor of the index (or generation), then look again until none holds a name:
        only then can the same names be created afresh (``get_if_exists`` would otherwise hand back an
        actor being killed). Bounded: a name Ray has not released by then is logged and left."""
        deadline = time.monotonic() + self.drop_timeout
        handles = await asyncio.to_thread(self._find, index_id, generation)
        while handles:
            await self._destroy(handles)
            for key in [k for k in self._handles if k[0] == index_id and generation in (None, k[1])]:
                del self._handles[key]
            left = await asyncio.to_thread(self._named, index_id, generation)
            if not left:
                return
            if time.monotonic() > deadline:
                log.warning("shard actors still named after dropping %s: %s", index_id, [n for *_, n in left])
                return
            await asyncio.sleep(0.2)
            handles = await asyncio.to_thread(self._find, index_id, generation)

    async def drop(self, index_id: str, generation: int) -> None:
        """Delete the generation's files (each actor removes its own) and kill its actors."""
        check_index_id(index_id)
        async with self._open_lock:
            self._specs.pop((index_id, generation), None)
            self._placed.pop((index_id, generation), None)
            await self._destroy_all(index_id, generation)
            self._lanes.drop(index_id, generation)
            self._forget(index_id, generation)

    async def drop_index(self, index_id: str) -> None:
        check_index_id(index_id)
        async with self._open_lock:
            for key in [k for k in self._specs if k[0] == index_id]:
                del self._specs[key]
                self._placed.pop(key, None)
            await self._destroy_all(index_id, None)
            self._lanes.drop(index_id)
            self._forget(index_id)

    async def healthy(self) -> bool:
        if not ray.is_initialized():
            return False
        try:
            return bool(await asyncio.wait_for(asyncio.to_thread(alive_nodes), 5))
        except Exception:
            return False

    async def close(self) -> None:
        self._handles.clear()
        self._lanes.close()
        if self._owns_ray and ray.is_initialized():
            await asyncio.to_thread(ray.shutdown)


async def _awaitable(ref: Any) -> Any:
    return await ref
