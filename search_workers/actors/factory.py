"""The one factory for shard actors.

A shard actor is :class:`ShardActor` made remote here: :class:`~search_workers.replica.ShardReplica`
(the class the in-process host uses) with three more methods: a search that answers msgpack bytes,
the same for a batch of queries (the searches of one API process that queued while its calls to the
actor were in flight, see :meth:`~search_workers.actors.ray_host.RayHost.search_here`), and the
address of its channel, where it also answers searches of API processes on its node
(:mod:`.channel`). Options:

* named ``shard:<index_id>:g<generation>:s<shard>:r<replica>`` in namespace ``shopsearch`` with
  ``get_if_exists=True``, so every API process / task runner that opens an index gets the same
  actors, and a host can find the actors of an index it never opened (``list_named_actors``);
* ``num_cpus=0``: an actor is mostly idle memory, so any number fit on a small node (memory, not
  CPU, is the limit - roughly the engine's in-memory size plus ~100 MB per worker process);
* ``max_restarts=-1``: Ray restarts a dead actor forever; the constructor re-opens the replica's
  files, or starts empty (``applied_seq == 0``) when they are gone, and the control plane re-feeds
  it from the database.  ``max_task_retries=0``: calls are retried (and failed over to another
  replica) by the host, which bounds how long a caller waits for a restarting actor;
* ``max_concurrency=4`` (a threaded actor): liveness probes and reads are not queued behind a long
  apply; the engine serialises apply and search itself;
* placement: node affinity to the node chosen by the host (replicas of one shard on different
  nodes, shards round-robin over the alive nodes).  Hard affinity: Ray 2.60 did not honour
  soft affinity for zero-CPU actors; a replica whose node is gone is re-created on another node by
  the host (``RayHost._revive``), where it starts empty and is rebuilt; ``SPREAD`` when the host
  knows no nodes;
* ``lifetime="detached"`` when joining a shared cluster (the actors outlive the process that made
  them; ``RayHost.drop``/``drop_index`` kill them), owned by the driver for a local Ray.
"""

from __future__ import annotations

import pickle
import threading
from functools import lru_cache
from typing import Any

import msgspec
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from search_workers.actors import channel
from search_workers.replica import ShardReplica, ray_node_id
from shared.contract import Answer, Query

NAMESPACE = "shopsearch"
NAME_PREFIX = "shard:"


def actor_name(index_id: str, generation: int, shard_no: int, replica_no: int) -> str:
    return f"{NAME_PREFIX}{index_id}:g{generation}:s{shard_no}:r{replica_no}"


def parse_actor_name(name: str) -> tuple[str, int, int, int] | None:
    """Inverse of :func:`actor_name` (``None`` for other names)."""
    if not name.startswith(NAME_PREFIX):
        return None
    parts = name[len(NAME_PREFIX):].split(":")
    if len(parts) != 4 or parts[1][:1] != "g" or parts[2][:1] != "s" or parts[3][:1] != "r":
        return None
    try:
        return parts[0], int(parts[1][1:]), int(parts[2][1:]), int(parts[3][1:])
    except ValueError:
        return None


_ENCODER = msgspec.msgpack.Encoder()
_CHANNEL_LOCK = threading.Lock()


class ShardActor(ShardReplica):
    """:class:`ShardReplica` as the actor runs it, plus a search that answers bytes.

    Ray pickles a returned :class:`Answer` with cloudpickle (a Python-level pickler): for 20 hits
    with their documents that cost ~0.1 ms in the actor and again to unpickle in the caller, per
    shard and search. msgpack through msgspec's typed encoder costs ~5 us each way and decodes
    straight into the contract's Structs (see :func:`unpack_answer`).
    """

    _channel: channel.ChannelServer | None = None

    # no task events for searches (each call would report its state changes to the GCS: measured
    # ~0.2 ms CPU per search of two shards); applies, opens and probes keep theirs
    @ray.method(enable_task_events=False)  # type: ignore[misc]
    def search_packed(self, query: bytes | Query) -> bytes | Answer:
        """:meth:`search`'s answer as msgpack bytes; the Answer itself if something in it has no
        msgpack form (the engine only puts JSON values in answers, so that is a safety net).
        ``query`` may come pickled (:func:`pack_query`: once per search for every shard, with the
        C pickler, where Ray would cloudpickle it per call: ~9 us instead of ~35 us)."""
        answer = self.search(pickle.loads(query) if isinstance(query, bytes) else query)
        try:
            return _ENCODER.encode(answer)
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # pragma: no cover - defensive
            return answer

    @ray.method(enable_task_events=False)  # type: ignore[misc]
    def search_many_packed(self, queries: list[bytes]) -> bytes | list[Answer | bytes]:
        """:meth:`search_packed` for several queries in one call (the host batches the searches
        that queue while its calls to this actor are in flight): one msgpack list with, per query
        in order, its Answer or - when the engine refused it - the pickled exception (bytes), so
        one query's error reaches only its own caller (:func:`unpack_many`)."""
        return self._answer_many(queries)

    def channel_address(self) -> dict[str, Any] | None:
        """Where this actor also serves searches for callers on its node (:mod:`.channel`):
        ``{"address", "nodeId"}``, the channel started on first ask; ``None`` where there is none."""
        if not channel.supported():
            return None
        with _CHANNEL_LOCK:  # not the replica's lock: an apply holds that one for long
            if self._channel is None:
                self._channel = channel.ChannelServer(self._answer_many)
        return {"address": self._channel.address, "nodeId": ray_node_id()}

    def _answer_many(self, queries: list[bytes]) -> bytes | list[Answer | bytes]:
        out: list[Answer | bytes] = []
        for query in queries:
            try:
                out.append(self.search(pickle.loads(query)))
            except Exception as exc:
                out.append(_pack_error(exc))
        try:
            return _ENCODER.encode(out)
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):  # pragma: no cover - defensive
            return out


def _pack_error(exc: Exception) -> bytes:
    """``exc`` pickled for :func:`unpack_many`; a RuntimeError with its repr if it does not round-trip."""
    try:
        raw = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(raw)
        return raw
    except Exception:  # pragma: no cover - an exception type that cannot be pickled
        return pickle.dumps(RuntimeError(repr(exc)), protocol=pickle.HIGHEST_PROTOCOL)


_DECODER = msgspec.msgpack.Decoder(Answer)
_MANY_DECODER = msgspec.msgpack.Decoder(list[Answer | bytes])


def pack_query(query: Query) -> bytes:
    """``query`` for :meth:`ShardActor.search_packed` (pickle keeps every value's type as it is -
    a tuple stays a tuple - so the engine reads exactly what the in-process host passes)."""
    return pickle.dumps(query, protocol=pickle.HIGHEST_PROTOCOL)


def unpack_answer(packed: bytes | Answer) -> Answer:
    """The :class:`Answer` of :meth:`ShardActor.search_packed`."""
    return packed if isinstance(packed, Answer) else _DECODER.decode(packed)


def unpack_many(packed: bytes | list[Answer | bytes]) -> list[Answer | BaseException]:
    """The answers of :meth:`ShardActor.search_many_packed`, in query order: an Answer, or the
    exception the engine raised for that query."""
    entries = packed if isinstance(packed, list) else _MANY_DECODER.decode(packed)
    return [e if isinstance(e, Answer) else pickle.loads(e) for e in entries]


@lru_cache(maxsize=1)
def _remote_class() -> Any:
    return ray.remote(ShardActor)


def shard_actor(
    index_id: str,
    generation: int,
    shard_no: int,
    replica_no: int,
    *,
    path: str,
    mapping: dict,
    language: str,
    node_id: str | None = None,
    namespace: str = NAMESPACE,
    detached: bool = True,
) -> Any:
    """Create (or get, if it already exists) the actor of one shard replica.  Blocking GCS call."""
    options: dict[str, Any] = {
        "name": actor_name(index_id, generation, shard_no, replica_no),
        "namespace": namespace,
        "get_if_exists": True,
        "num_cpus": 0,
        "max_restarts": -1,
        "max_task_retries": 0,
        "max_concurrency": 4,
        "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False) if node_id else "SPREAD",
    }
    if detached:
        options["lifetime"] = "detached"
    return _remote_class().options(**options).remote(path, mapping, language)
