"""What runs beside the API, started and stopped with the app (``STARTUP_HOOKS``/``SHUTDOWN_HOOKS``).

Start: the shard bridge (``control_plane.shard``), then in the background the serving generation of
every index is opened and re-fed from the database where a replica is behind; the in-process task
runner starts when ``settings.run_task_runner``. A readiness check (host healthy, shards opened)
joins ``runtime.readiness_checks``.

With several serving processes (``settings.serving_processes > 1``, ``shopsearch serve --workers``)
only the primary (the one holding ``DATA_DIR/serving.lock``) does that; every other process holds
in-memory replicas that follow the database (:mod:`control_plane.serving.follower`) and starts
answering only once they caught up. With Ray the shards are shared: no process needs to follow, but
with near replicas (``settings.near_replicas``, the default with ``SHOPSEARCH_RAY_ADDRESS=local``)
every serving process follows as well, and searches what it caught up with in memory
(:attr:`ShardBridge.near`); the actors get every change first and answer the rest.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from control_plane.document import replicas
from control_plane.document import service as documents
from control_plane.index import service as indices
from control_plane.runtime import Runtime
from control_plane.serving.follower import Follower, SyncState, take_primary
from control_plane.shard import ShardBridge, near_bridge
from control_plane.shard.feed import Feed, RowSource
from control_plane.task.runner import TaskRunner
from shared.contract import ShardSpec

log = logging.getLogger("shopsearch.indexing")

class Catalog:
    """What a follower reads of the database (:class:`control_plane.serving.follower.Catalog`),
    answered by the index and document domains."""

    def sync_states(self, db: Session) -> list[SyncState]:
        return indices.sync_states(db)

    def shard_spec(self, db: Session, index_id: str, generation: int | None,
                   mapping: dict[str, Any] | None) -> ShardSpec | None:
        index = indices.detached_index(db, index_id)
        return None if index is None else index.shard_spec(generation, mapping)

    def rows(self, sessions: sessionmaker[Session], index_id: str, session_id: str | None) -> RowSource:
        return documents.row_source(sessions, index_id, session_id)

    def feed(self, sessions: sessionmaker[Session], index_id: str) -> AbstractContextManager[Feed | None]:
        return documents.serving_feed(sessions, index_id)


def open_serving_generations(runtime: Runtime, bridge: ShardBridge) -> None:
    """Open every index's serving generation and re-feed replicas that are behind the database."""
    with runtime.sessions() as db:
        specs = [i.shard_spec() for i in indices.all_indices(db)]
    for spec in specs:
        try:
            replicas.catch_up_serving(runtime.sessions, bridge, spec)
        except Exception:  # noqa: BLE001 - one broken index must not stop the others
            log.warning("opening index %s failed", spec.index_id, exc_info=True)
    drop_unused_generations(runtime, bridge)


def drop_unused_generations(runtime: Runtime, bridge: ShardBridge) -> None:
    """Delete the shard files no index serves or builds: a generation swapped out whose delayed drop
    a crash cut short, a build that was abandoned, an index deleted meanwhile."""

    def used() -> dict[str, set[int]]:
        with runtime.sessions() as db:
            return {i.id: {i.serving_generation, *([i.building_generation] if i.building_generation else [])}
                    for i in indices.all_indices(db)}

    try:
        dropped = bridge.drop_unused(used)
    except Exception:  # noqa: BLE001 - the files stay until the next start
        log.warning("looking for unused shard files failed", exc_info=True)
        return
    if dropped:
        log.info("deleted the shard files of generations no index uses: %s", dropped)


def start_indexing(runtime: Runtime) -> None:
    indexing = runtime.indexing
    settings = runtime.settings
    primary = True
    if settings.serving_processes > 1:
        lock = take_primary(settings.data_dir)
        primary = lock is not None
        indexing.primary_lock = lock
    if not primary:
        _replay_kept_writes(runtime)
        if not settings.ray_address:
            _start_following(runtime)
            return
    bridge = runtime.shards = ShardBridge(settings)
    ready = threading.Event()

    def warm_up() -> None:
        try:
            open_serving_generations(runtime, bridge)
        finally:
            ready.set()

    threading.Thread(target=warm_up, name="shards-warm-up", daemon=True).start()

    def shards_ready() -> bool:
        return ready.is_set() and bridge.healthy()

    _add_check(runtime, shards_ready)
    if settings.near_replicas:
        _start_near_replicas(runtime, bridge)
    if settings.run_task_runner and primary:
        runner = runtime.task_runner = TaskRunner(runtime.sessions, bridge, settings, state=runtime.state)
        runner.start()


def _replay_kept_writes(runtime: Runtime) -> None:
    """Writes to Redis kept while it was unreachable (revocations, epoch bumps) are replayed when it
    answers again: the task runner's loop does that in the primary, this thread in the others (which
    may get no request that would try Redis for a while)."""
    stop = runtime.indexing.replay_stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.5):
            try:
                runtime.state.replay()
            except Exception:  # noqa: BLE001 - tried again on the next round
                log.debug("replaying kept writes failed", exc_info=True)

    threading.Thread(target=loop, name="replay-kept-writes", daemon=True).start()


def _start_following(runtime: Runtime) -> None:
    """A follower: memory replicas kept at the database's sequences; returns once they caught up."""
    bridge = runtime.shards = ShardBridge(runtime.settings, durable=False)
    follower = runtime.follower = Follower(runtime.sessions, bridge, Catalog())
    follower.start()
    while not follower.wait_synced(30):
        log.info("serving process %s is still catching up with the database", follower.id)

    def shards_ready() -> bool:
        return follower.fresh() and bridge.healthy()

    _add_check(runtime, shards_ready)


def _start_near_replicas(runtime: Runtime, bridge: ShardBridge) -> None:
    """Ray mode: in-memory replicas here too, searched once caught up. Nothing waits for them:
    until then (and whenever the follower's lease lapses) searches go to the actors."""
    near = runtime.indexing.near = near_bridge(runtime.settings)
    follower = runtime.follower = Follower(runtime.sessions, near, Catalog())
    follower.start()
    bridge.near = near


def _add_check(runtime: Runtime, check: Callable[[], bool]) -> None:
    runtime.readiness_checks.append(check)
    runtime.indexing.check = check


def stop_indexing(runtime: Runtime) -> None:
    indexing = runtime.indexing
    runner, runtime.task_runner = runtime.task_runner, None
    if runner is not None:
        runner.stop()
    replaying, indexing.replay_stop = indexing.replay_stop, None
    if replaying is not None:
        replaying.set()
    follower, runtime.follower = runtime.follower, None
    if follower is not None:
        follower.stop()
    near, indexing.near = indexing.near, None
    if near is not None:
        if runtime.shards is not None:
            runtime.shards.near = None
        near.close()
    check, indexing.check = indexing.check, None
    if check in runtime.readiness_checks:
        runtime.readiness_checks.remove(check)
    bridge, runtime.shards = runtime.shards, None
    if bridge is not None:
        bridge.close()
    lock, indexing.primary_lock = indexing.primary_lock, None
    if lock is not None:
        lock.close()
