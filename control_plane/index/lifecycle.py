"""Runtime pieces of indexing, started and stopped with the app (``STARTUP_HOOKS``/``SHUTDOWN_HOOKS``).

Start: the shard host (``make_host``) on its own loop thread, then in the background the serving
generation of every index is opened and re-fed from the database where a replica is behind; the
in-process task runner starts when ``settings.run_task_runner``. A readiness check (host healthy,
shards opened) joins ``runtime.extras["readiness_checks"]``.

The hooks are reference-counted: the app may be entered more than once (several test clients on one
app), and only the last exit stops the runner and closes the host.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import select

from control_plane.document.sync import catch_up
from control_plane.index.models import Index
from control_plane.index.shards import ShardBridge, spec_for
from control_plane.runtime import Runtime

log = logging.getLogger("shopsearch.indexing")

_LOCK = threading.Lock()


def get_bridge(runtime: Runtime) -> ShardBridge:
    bridge = runtime.extras.get("shards")
    if bridge is None:
        with _LOCK:
            bridge = runtime.extras.get("shards")
            if bridge is None:
                bridge = runtime.extras["shards"] = ShardBridge(runtime.settings)
    return bridge  # type: ignore[no-any-return]


def open_serving_generations(runtime: Runtime, bridge: ShardBridge) -> None:
    """Open every index's serving generation and re-feed replicas that are behind the database."""
    with runtime.sessions() as db:
        indices = [
            (i.id, i.shards, i.replicas, i.language, i.serving_generation, i.serving_mapping, i.seq, i.flush_seq)
            for i in db.scalars(select(Index))
        ]
    for index_id, shards, replicas, language, generation, mapping, seq, flush_seq in indices:
        try:
            spec = spec_for(_Shape(index_id, shards, replicas, language), generation, mapping)
            bridge.ensure_open(spec)
            if bridge.call("missing", index_id, generation, seq):
                catch_up(
                    runtime.sessions, bridge, index_id=index_id, generation=generation, shards=shards,
                    upto=seq, flush_seq=flush_seq,
                )
        except Exception:  # noqa: BLE001 - one broken index must not stop the others
            log.warning("opening index %s failed", index_id, exc_info=True)


class _Shape:
    def __init__(self, index_id: str, shards: int, replicas: int, language: str) -> None:
        self.id = index_id
        self.shards = shards
        self.replicas = replicas
        self.language = language


def start_indexing(runtime: Runtime) -> None:
    with _LOCK:
        refs = runtime.extras.get("indexing_refs", 0)
        runtime.extras["indexing_refs"] = refs + 1
        if refs:
            return
    bridge = get_bridge(runtime)
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
        from control_plane.task.runner import TaskRunner

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
    bridge = runtime.extras.pop("shards", None)
    if bridge is not None:
        bridge.close()
