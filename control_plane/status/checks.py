"""The four checks behind ``GET /v1/status`` (spec 4.12, section 3), and their thresholds.

Each check answers ``operational``, ``degraded`` or ``down``; the overall state is the worst of them.

- search: degraded when the probe query took over ``SEARCH_SLOW_MS``, or Redis is configured but
  unreachable (no cached answers); down when the probe fails (shard hosts unreachable, this
  instance's ``/ready`` checks failing).
- indexing: degraded when the oldest waiting task has waited over ``TASK_WAIT_DEGRADED_S`` or over
  ``QUEUE_LAG_DEGRADED`` tasks wait, or a runner's shard replicas cannot write to the disk (they serve
  and take changes from memory and retry; ``heartbeats.report_disk``); down when the database is unreachable, no task runner was heard
  from within ``heartbeats.LIVE_SECONDS``, or the oldest waiting task has waited over
  ``TASK_WAIT_DOWN_S``.
- dashboard: degraded when the database round trip took over ``DB_SLOW_MS``, or Redis is configured
  but unreachable (sign-ins and revocations fall back to the database); down when the database is
  unreachable or the cabinet's page is not there to serve.
- mcp: degraded when the database is unreachable (keys not cached, and every tool but search needs
  it); down when a ``tools/list`` exchange with the MCP app does not answer its tools within
  ``MCP_TIMEOUT_S``.

The search probe is a one-hit query through the shard hosts (:mod:`control_plane.shard`) on the
serving generation of one index (the last one probed, read again from the database at most every
minute, so a database outage alone does not take search down, as the storefront's caches keep it
up); with no index at all, the hosts' health call stands in for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from anyio import to_thread

from control_plane.cabinet import STATIC
from control_plane.db import ping
from control_plane.index import service as indices
from control_plane.runtime import Runtime
from control_plane.shard import search_serving
from control_plane.task import heartbeats
from control_plane.task import service as tasks
from shared.contract import Query, ShardSpec

log = logging.getLogger("shopsearch.status")

OPERATIONAL, DEGRADED, DOWN = "operational", "degraded", "down"
RANK = {OPERATIONAL: 0, DEGRADED: 1, DOWN: 2}
SERVICES = ("search", "indexing", "dashboard", "mcp")

SEARCH_SLOW_MS = 1000.0
SEARCH_TIMEOUT_S = 5.0
TASK_WAIT_DEGRADED_S = 60.0
TASK_WAIT_DOWN_S = 600.0
QUEUE_LAG_DEGRADED = 1000
DB_SLOW_MS = 500.0
MCP_TIMEOUT_S = 2.0
PROBE_TARGET_SECONDS = 60.0


def worst(states: list[str]) -> str:
    return max(states, key=RANK.__getitem__) if states else OPERATIONAL


@dataclass
class Database:
    """What one database round trip found (shared by the checks that need the database)."""

    up: bool
    took_ms: float = 0.0
    waiting: int = 0
    oldest_wait_s: float = 0.0
    runners: int = 0
    target: ShardSpec | None = None
    disk_refuses: bool = False  # a runner's replicas cannot write to the disk


def _read_database(runtime: Runtime, want_target: bool) -> Database:
    started = time.perf_counter()
    try:
        ping(runtime.engine)
        took_ms = (time.perf_counter() - started) * 1000
        with runtime.sessions() as db:
            waiting, oldest = tasks.waiting(db)
            runners = heartbeats.live_runners(db)
            target = None
            if want_target:
                index = indices.newest_index(db)
                target = None if index is None else index.shard_spec()
    except Exception:  # noqa: BLE001 - any failure means the database is not usable
        log.info("status: the database check failed", exc_info=True)
        return Database(up=False)
    oldest_wait = 0.0
    if oldest is not None:
        oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=UTC)
        oldest_wait = max(0.0, (datetime.now(UTC) - oldest).total_seconds())
    return Database(up=True, took_ms=took_ms, waiting=int(waiting), oldest_wait_s=oldest_wait, runners=runners,
                    target=target)


def _local_runner_running(runtime: Runtime) -> bool:
    runner = runtime.task_runner
    return runner is not None and getattr(runner, "_thread", None) is not None  # None once stopped


def _redis_down(runtime: Runtime) -> bool:
    """Redis is configured and does not answer (always False without Redis)."""
    return bool(runtime.settings.redis_url) and not runtime.state.ping()


async def _probe_search(runtime: Runtime, target: ShardSpec | None) -> tuple[str, float]:
    """(state, milliseconds) of a one-hit query on ``target``, or of the hosts' health call."""
    for check in runtime.readiness_checks:
        if not await to_thread.run_sync(check):
            return DOWN, 0.0
    started = time.perf_counter()
    try:
        bridge = runtime.shard_bridge()  # not started: search is down here
        if target is None:
            if not await to_thread.run_sync(bridge.healthy):
                return DOWN, (time.perf_counter() - started) * 1000
        else:
            query = Query(q="", limit=1, retrieve=(), timeout_ms=SEARCH_TIMEOUT_S * 1000)

            async def same() -> ShardSpec | None:
                return target

            await asyncio.wait_for(search_serving(bridge, target, query, same), SEARCH_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a probe that fails for any reason: search does not work
        log.info("status: the search probe failed", exc_info=True)
        return DOWN, (time.perf_counter() - started) * 1000
    took_ms = (time.perf_counter() - started) * 1000
    return (DEGRADED if took_ms > SEARCH_SLOW_MS else OPERATIONAL), took_ms


async def _mcp_answers(runtime: Runtime) -> bool:
    """``tools/list`` through the MCP app's HTTP transport (:meth:`control_plane.mcp.server.MCPEndpoint.answers`)."""
    check = runtime.mcp_check
    if check is None:
        return False
    try:
        return bool(await asyncio.wait_for(check(), MCP_TIMEOUT_S))
    except Exception:  # noqa: BLE001
        log.info("status: the MCP app did not answer", exc_info=True)
        return False


def _disk_refuses(runtime: Runtime) -> bool:
    """A runner reported replicas whose disk refuses writes, or this process's own replicas say so."""
    try:
        if heartbeats.disk_failures(runtime.state):
            return True
    except Exception:  # noqa: BLE001 - the shared state unreachable: this process's own replicas
        log.info("status: the runners' disk reports could not be read", exc_info=True)
    bridge = runtime.shards
    try:
        return bridge is not None and bridge.durable and bool(bridge.persist_failures())
    except Exception:  # noqa: BLE001 - the shard host not answering is the search probe's business
        return False


def indexing_state(db: Database) -> str:
    if not db.up or db.runners == 0 or db.oldest_wait_s > TASK_WAIT_DOWN_S:
        return DOWN
    if db.oldest_wait_s > TASK_WAIT_DEGRADED_S or db.waiting > QUEUE_LAG_DEGRADED or db.disk_refuses:
        return DEGRADED
    return OPERATIONAL


def dashboard_state(db: Database, redis_down: bool) -> str:
    if not db.up or not (STATIC / "index.html").is_file():
        return DOWN
    if db.took_ms > DB_SLOW_MS or redis_down:
        return DEGRADED
    return OPERATIONAL


async def run_checks(runtime: Runtime) -> dict[str, str]:
    """Every service's state, checked now."""
    remembered = runtime.status.probe_target
    want_target = remembered is None or time.monotonic() - remembered[0] > PROBE_TARGET_SECONDS
    db = await to_thread.run_sync(_read_database, runtime, want_target)
    if db.up and not db.runners and _local_runner_running(runtime):
        db.runners = 1  # this process's runner, started before its first heartbeat was written
    db.disk_refuses = await to_thread.run_sync(_disk_refuses, runtime)
    if want_target and db.up:
        remembered = runtime.status.probe_target = (time.monotonic(), db.target)
    target = None if remembered is None else remembered[1]
    redis_down = await to_thread.run_sync(_redis_down, runtime)
    search, _took = await _probe_search(runtime, target)
    if search == DOWN and target is not None and not want_target:
        # the remembered index may be gone (deleted, rebuilt): probe the latest one before saying down
        fresh = await to_thread.run_sync(_read_database, runtime, True)
        if fresh.up:
            runtime.status.probe_target = (time.monotonic(), fresh.target)
            search, _took = await _probe_search(runtime, fresh.target)
    if search == OPERATIONAL and redis_down:
        search = DEGRADED
    mcp = OPERATIONAL if await _mcp_answers(runtime) else DOWN
    if mcp == OPERATIONAL and not db.up:
        mcp = DEGRADED
    return {"search": search, "indexing": indexing_state(db), "dashboard": dashboard_state(db, redis_down), "mcp": mcp}
