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

Every process that re-creates a replica picks the node with :func:`replacement_node` from where the
index's other replicas are at that moment (the replicas say: ``info()["nodeId"]``), so two processes
reviving the same replica pick the same node. A node that joins takes replicas through
:func:`rebalance_moves` (run by the control plane's replica keeper): a moved replica is re-created
on its new node by the same rule, empty, and re-fed from the database, while its shard's other
replicas serve.

Placement is otherwise static: ``num_cpus=0`` actors, so Ray does not balance them by load; a node
that leaves costs its replicas a rebuild from the database; a hot shard cannot be split (resharding
is a full rebuild).
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


def rebalance_moves(placed: dict[tuple[int, int], str | None], nodes: list[str],
                    movable: set[int]) -> list[tuple[tuple[int, int], str]]:
    """``[((shard, replica), node)]``: replicas to re-create elsewhere, at most one per shard and
    only of ``movable`` shards (every replica up and current: the others serve while the moved one
    is re-fed). First a replica that shares its node with another replica of its shard, when a node
    without one is alive; then, while the alive node holding most replicas of the index holds two more
    than another, one of its replicas. Each goes where :func:`replacement_node` would re-create it."""
    placed = dict(placed)
    moves: list[tuple[tuple[int, int], str]] = []

    def move(key: tuple[int, int], node: str) -> None:
        placed[key] = node
        moves.append((key, node))

    for key, node in sorted(placed.items(), key=lambda kv: kv[0]):
        s, r = key
        if s not in movable or s in {k[0] for k, _ in moves} or node not in nodes:
            continue
        if any(n == node for (s2, r2), n in placed.items() if s2 == s and r2 < r):  # shares with an earlier one
            target = replacement_node(placed, s, r, nodes)
            if target is not None and target != node and not _holds_shard(placed, target, s):
                move(key, target)
    for _ in range(len(placed)):
        found = _evening_move(placed, nodes, movable - {k[0] for k, _ in moves})
        if found is None:
            break
        move(*found)
    return moves


def _evening_move(placed: dict[tuple[int, int], str | None], nodes: list[str],
                  movable: set[int]) -> tuple[tuple[int, int], str] | None:
    """A replica of a movable shard from the most loaded node that has one, to a node holding at
    least two fewer replicas of the index and none of that shard; None when there is none."""
    load = {n: 0 for n in nodes}
    for n in placed.values():
        if n in load:
            load[n] += 1
    for busiest in sorted(nodes, key=lambda n: (-load[n], n)):
        for key, node in sorted(placed.items(), key=lambda kv: kv[0]):
            if node != busiest or key[0] not in movable:
                continue
            target = replacement_node(placed, key[0], key[1], nodes)
            if target is not None and load[target] + 1 < load[busiest] and not _holds_shard(placed, target, key[0]):
                return key, target
    return None


def _holds_shard(placed: dict[tuple[int, int], str | None], node: str, shard_no: int) -> bool:
    return any(n == node for (s, _), n in placed.items() if s == shard_no)
