"""Runtime pieces of indexing, started and stopped with the app (``STARTUP_HOOKS``/``SHUTDOWN_HOOKS``).

Start: the shard bridge (``control_plane.shard``), then in the background the serving generation of
every index is opened and re-fed from the database where a replica is behind; the in-process task
runner starts when ``settings.run_task_runner``. A readiness check (host healthy, shards opened)
joins ``runtime.extras["readiness_checks"]``.

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
from control_plane.shard import ShardBridge, catch_up, close_shard_bridge, shard_bridge
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

    checks: list[Any] = runtime.extras.setdefault("readiness_checks", [])
    checks.append(shards_ready)
    runtime.extras["shards_check"] = shards_ready
    if runtime.settings.run_task_runner:
        runner = TaskRunner(runtime.sessions, bridge, runtime.settings, state=runtime.state)
        runtime.extras["task_runner"] = runner
        runner.start()


def stop_indexing(runtime: Runtime) -> None:
    with _LOCK:
        refs = runtime.extras.get("indexing_refs", 0) - 1
        runtime.extras["indexing_refs"] = max(0, refs)
        if refs > 0:
            return
    runner = runtime.extras.pop("task_runner", None)
    if runner is not None:
        runner.stop()
    check = runtime.extras.pop("shards_check", None)
    checks = runtime.extras.get("readiness_checks", [])
    if check in checks:
        checks.remove(check)
    close_shard_bridge(runtime)
