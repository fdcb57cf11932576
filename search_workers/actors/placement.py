"""Where a Ray host puts shard replicas: which nodes, and where a lost replica goes.

At ``open`` the host lists the alive nodes (leaving out CPU-less nodes such as a KubeRay head
started with ``num-cpus: 0`` when there are others), rotates the list by a hash of the index id,
and puts replica ``r`` of shard ``s`` on node ``(s * replicas + r) % nodes`` with (hard) node
affinity: the replicas of a shard are on different nodes whenever ``replicas <= nodes``, and the
shards of an index spread over all nodes. Soft affinity was measured not to be honoured for
zero-CPU actors on Ray 2.60 (several replicas of one shard landed on one node), hence hard affinity
plus re-creation: a replica whose node left the cluster cannot be restarted by Ray under hard
affinity, so the host re-creates it on :func:`replacement_node`, where it starts empty and is
re-fed from the database.

Placement is static: ``num_cpus=0`` actors, so Ray does not balance them by load; a node that
leaves costs its replicas a rebuild from the database; a hot shard cannot be split (resharding is a
full rebuild).
"""

from __future__ import annotations

import ray

from shared.routing import shard_hash


def alive_nodes() -> list[str]:
    """The ids of the cluster's alive nodes that have CPUs (all alive nodes when none has). A
    blocking GCS call."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    with_cpu = [n for n in nodes if float((n.get("Resources") or {}).get("CPU", 0)) > 0]
    return sorted(n["NodeID"] for n in (with_cpu or nodes))


def place_replicas(index_id: str, shards: int, replicas: int, nodes: list[str]) -> dict[tuple[int, int], str | None]:
    """Node per ``(shard, replica)``: replicas of a shard on different nodes, shards round-robin."""
    if not nodes:
        return {(s, r): None for s in range(shards) for r in range(replicas)}
    off = shard_hash(index_id) % len(nodes)
    return {(s, r): nodes[(off + s * replicas + r) % len(nodes)] for s in range(shards) for r in range(replicas)}


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
