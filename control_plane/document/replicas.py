"""Every index's serving replicas kept placed and complete on a cluster of nodes: a task runner's
watch job (:data:`TASKS`).

On a Ray cluster a node that leaves takes its replicas with it: the host re-creates each one on
another node at its next call, empty, and it stays empty until the next write to its index re-feeds
it; a node that joins would only hold generations opened later. So whenever the alive nodes differ
from what the last pass saw, and every :data:`FULL_PASS_S` in any case (a replica that restarted
behind), a pass takes every index's serving generation: opens it (which re-creates lost replicas),
moves replicas onto nodes that hold too few (the host's ``rebalance``), and re-feeds from the
database every replica that is behind its index. A pass that left work undone (a replica that did
not answer, moves that call for more) runs again after :data:`RETRY_S`. Hosts without nodes
(in-process replicas) have nothing to keep: the job returns at once.
"""

from __future__ import annotations

import logging
import time
import weakref

from sqlalchemy.orm import Session, sessionmaker

from control_plane.document import service as documents
from control_plane.index import service as indices
from control_plane.shard import DROP_DELAY_S, ShardBridge, catch_up
from control_plane.task.registry import TaskModule
from shared.contract import ShardSpec

log = logging.getLogger("shopsearch.replicas")

#: a pass even when the nodes did not change
FULL_PASS_S = 300.0
#: the next pass after one that left work undone
RETRY_S = 3.0

# per bridge (one per process, more in tests): the nodes the last pass saw, and when the next is due
_passes: weakref.WeakKeyDictionary[ShardBridge, tuple[frozenset[str], float]] = weakref.WeakKeyDictionary()


def catch_up_serving(sessions: sessionmaker[Session], bridge: ShardBridge, spec: ShardSpec) -> bool:
    """Open the serving generation ``spec`` and re-feed its replicas that are behind the database;
    whether every replica holds the index's sequence now."""
    bridge.open(spec)
    with documents.serving_feed(sessions, spec.index_id) as feed:
        if feed is None or not bridge.missing(spec.index_id, spec.generation, feed.seq):
            return True
        low = catch_up(bridge, feed.rows, index_id=spec.index_id, generation=spec.generation, shards=spec.shards,
                       upto=feed.seq, flush_seq=feed.flush_seq)
    return all(seq >= feed.seq for seq in low.values())


def keep_replicas(sessions: sessionmaker[Session], bridge: ShardBridge) -> None:
    """One pass over every index when due (see the module's docstring)."""
    if bridge.closed:
        return
    nodes = bridge.nodes()
    if nodes is None:
        return
    seen, now = frozenset(nodes), time.monotonic()
    last = _passes.get(bridge)
    if last is not None and last[0] == seen and now < last[1]:
        return
    if last is not None and last[0] != seen:
        log.warning("the nodes changed (%d alive): placing and re-feeding replicas", len(seen))
    with sessions() as db:
        specs = [index.shard_spec() for index in indices.all_indices(db)]
    done = True
    for spec in specs:
        try:
            done = _keep(sessions, bridge, spec) and done
        except Exception:  # noqa: BLE001 - one index must not stop the others; the pass runs again
            log.warning("keeping the replicas of %s failed", spec.index_id, exc_info=True)
            done = False
    _passes[bridge] = (seen, now + (FULL_PASS_S if done else RETRY_S))


def _keep(sessions: sessionmaker[Session], bridge: ShardBridge, spec: ShardSpec) -> bool:
    bridge.open(spec)
    moved = bridge.rebalance(spec.index_id, spec.generation)
    complete = catch_up_serving(sessions, bridge, spec)
    with sessions() as db:
        index = indices.detached_index(db, spec.index_id)
    if index is None or spec.generation not in (index.serving_generation, index.building_generation):
        # swapped out or deleted since the pass read it: what the open above re-created goes again
        bridge.drop(spec.index_id, None if index is None else spec.generation, delay=DROP_DELAY_S)
        return True
    return complete and not moved


TASKS = TaskModule(watches=(keep_replicas,))
