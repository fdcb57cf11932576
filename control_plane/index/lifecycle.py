"""Runtime pieces of indexing, started and stopped with the app (``STARTUP_HOOKS``/``SHUTDOWN_HOOKS``).

Start: the shard bridge (``control_plane.shard``), then in the background the serving generation of
every index is opened and re-fed from the database where a replica is behind; the in-process task
runner starts when ``settings.run_task_runner``. A readiness check (host healthy, shards opened)
joins ``runtime.extras["readiness_checks"]``.

With several serving processes (``settings.serving_processes > 1``, ``shopsearch serve --workers``)
only the primary (the one holding ``DATA_DIR/serving.lock``) does that; every other process holds
in-memory replicas that follow the database (:mod:`control_plane.serving.follower`) and starts
answering only once they caught up. With Ray the shards are shared: no process needs to follow, but
with near replicas (``settings.near_replicas``, the default with ``SHOPSEARCH_RAY_ADDRESS=local``)
every serving process follows as well, and searches what it caught up with in memory
(:attr:`ShardBridge.near`); the actors get every change first and answer the rest.

The hooks are reference-counted: the app may be entered more than once (several test clients on one
app), and only the last exit stops the runner and closes the host.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from control_plane.document.repository import row_source
from control_plane.index.repository import all_indices
from control_plane.runtime import Runtime
from control_plane.serving.follower import Follower, take_primary
from control_plane.shard import ShardBridge, catch_up, close_shard_bridge, near_bridge, shard_bridge
from control_plane.task.runner import TaskRunner

log = logging.getLogger("shopsearch.indexing")

_LOCK = threading.Lock()


def open_serving_generations(runtime: Runtime, bridge: ShardBridge) -> None:
    """Open every index's serving generation and re-feed replicas that are behind the database."""
    with runtime.sessions() as db:
        indices = [(i.shard_spec(), i.seq, i.flush_seq) for i in all_indices(db)]
    for spec, seq, flush_seq in indices:
        try:
            bridge.open(spec)
            if bridge.missing(spec.index_id, spec.generation, seq):
                catch_up(bridge, row_source(runtime.sessions, spec.index_id), index_id=spec.index_id,
                         generation=spec.generation, shards=spec.shards, upto=seq, flush_seq=flush_seq)
        except Exception:  # noqa: BLE001 - one broken index must not stop the others
            log.warning("opening index %s failed", spec.index_id, exc_info=True)


def start_indexing(runtime: Runtime) -> None:
    with _LOCK:
        refs = runtime.extras.get("indexing_refs", 0)
        runtime.extras["indexing_refs"] = refs + 1
        if refs:
            return
    settings = runtime.settings
    primary = True
    if settings.serving_processes > 1:
        lock = take_primary(settings.data_dir)
        primary = lock is not None
        runtime.extras["primary_lock"] = lock
    if not primary:
        _replay_kept_writes(runtime)
        if not settings.ray_address:
            _start_following(runtime)
            return
    bridge = shard_bridge(runtime)
    ready = threading.Event()
    runtime.extras["shards_ready"] = ready

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
        runner = TaskRunner(runtime.sessions, bridge, settings, state=runtime.state)
        runtime.extras["task_runner"] = runner
        runner.start()


def _replay_kept_writes(runtime: Runtime) -> None:
    """Writes to Redis kept while it was unreachable (revocations, epoch bumps) are replayed when it
    answers again: the task runner's loop does that in the primary, this thread in the others (which
    may get no request that would try Redis for a while)."""
    stop = runtime.extras["replay_stop"] = threading.Event()

    def loop() -> None:
        while not stop.wait(0.5):
            try:
                runtime.state.replay()
            except Exception:  # noqa: BLE001 - tried again on the next round
                log.debug("replaying kept writes failed", exc_info=True)

    threading.Thread(target=loop, name="replay-kept-writes", daemon=True).start()


def _start_following(runtime: Runtime) -> None:
    """A follower: memory replicas kept at the database's sequences; returns once they caught up."""
    bridge = runtime.extras["shards"] = ShardBridge(runtime.settings, durable=False)
    follower = Follower(runtime.sessions, bridge)
    runtime.extras["follower"] = follower
    follower.start()
    while not follower.wait_synced(30):
        log.info("serving process %s is still catching up with the database", follower.id)

    def shards_ready() -> bool:
        return follower.fresh() and bridge.healthy()

    _add_check(runtime, shards_ready)


def _start_near_replicas(runtime: Runtime, bridge: ShardBridge) -> None:
    """Ray mode: in-memory replicas here too, searched once caught up. Nothing waits for them:
    until then (and whenever the follower's lease lapses) searches go to the actors."""
    near = near_bridge(runtime.settings)
    follower = Follower(runtime.sessions, near)
    runtime.extras["near_shards"] = near
    runtime.extras["follower"] = follower
    follower.start()
    bridge.near = near


def _add_check(runtime: Runtime, check: Any) -> None:
    checks: list[Any] = runtime.extras.setdefault("readiness_checks", [])
    checks.append(check)
    runtime.extras["shards_check"] = check


def stop_indexing(runtime: Runtime) -> None:
    with _LOCK:
        refs = runtime.extras.get("indexing_refs", 0) - 1
        runtime.extras["indexing_refs"] = max(0, refs)
        if refs > 0:
            return
    runner = runtime.extras.pop("task_runner", None)
    if runner is not None:
        runner.stop()
    replaying = runtime.extras.pop("replay_stop", None)
    if replaying is not None:
        replaying.set()
    follower = runtime.extras.pop("follower", None)
    if follower is not None:
        follower.stop()
    near = runtime.extras.pop("near_shards", None)
    if near is not None:
        bridge = runtime.extras.get("shards")
        if bridge is not None:
            bridge.near = None
        near.close()
    check = runtime.extras.pop("shards_check", None)
    checks = runtime.extras.get("readiness_checks", [])
    if check in checks:
        checks.remove(check)
    close_shard_bridge(runtime)
    lock = runtime.extras.pop("primary_lock", None)
    if lock is not None:
        lock.close()
