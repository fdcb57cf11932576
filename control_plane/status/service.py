"""The status answer (spec 4.12): computed by one API instance at a time, shared by all for 15 s.

The answer lives in the shared state (Redis when configured; without it the machine's state file
when several serving processes run, else memory) under :data:`ANSWER_KEY` with the time it expires.
An instance that finds no fresh answer takes the :data:`LOCK_KEY` lock (``SET NX``) and runs the
checks; the others wait for its answer. The answer is stored first-writer-wins, so two instances
that computed at once still hand out the same one, and it changes only when it expires.
``checkedAt`` is when its checks started, so an answer is never older than :data:`CACHE_SECONDS`.
While Redis is unreachable each instance keeps its own answer (in memory) for the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Any

import orjson
import redis

from control_plane.runtime import Runtime
from control_plane.sharedstate import FileState, MemoryState, RedisState, SharedState, SharedStateUnavailable
from control_plane.status.checks import SERVICES, run_checks, worst

CACHE_SECONDS = 15.0
LOCK_SECONDS = 20
WAIT_SECONDS = 10.0
ANSWER_KEY = "status:answer"
LOCK_KEY = "status:computing"


class _Local:
    """This process's part: the fallback state while Redis is unreachable, and the computing flag."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self.computing = threading.Lock()


def _local(runtime: Runtime) -> _Local:
    local: _Local | None = runtime.extras.get("status_local")
    if local is None:
        local = runtime.extras.setdefault("status_local", _Local())
    return local


def _redis_call(state: RedisState, fn: Any) -> Any:
    """A raw Redis command (``SET NX``), honouring the shared state's back-off while Redis is away."""
    if state.backoff.closed():
        raise SharedStateUnavailable("Redis is unreachable")
    try:
        return fn(state.client)
    except redis.RedisError as exc:
        state.backoff.failed()
        raise SharedStateUnavailable("Redis is unreachable") from exc


def _fresh(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    stored = orjson.loads(raw)
    return stored["answer"] if stored.get("until", 0) > time.time() else None  # type: ignore[no-any-return]


def _store_first(state: SharedState, raw: bytes, ttl: float) -> bytes:
    """Store ``raw`` unless a fresh answer is there already; returns the one that stays."""
    if isinstance(state, RedisState):
        key = state.prefix + ANSWER_KEY
        _redis_call(state, lambda client: client.set(key, raw, nx=True, px=max(1, int(ttl * 1000))))
        return _redis_call(state, lambda client: client.get(key)) or raw  # type: ignore[no-any-return]
    if isinstance(state, FileState):
        with state.file.connection() as db:
            db.execute(
                "INSERT INTO kv (key, value, expires) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                "value = excluded.value, expires = excluded.expires WHERE kv.expires < ?",
                (ANSWER_KEY, raw, time.time() + ttl, time.time()),
            )
        return state.get(ANSWER_KEY) or raw
    current = state.get(ANSWER_KEY)
    if _fresh(current) is not None:
        return current  # type: ignore[return-value]
    state.set(ANSWER_KEY, raw, max(1, int(ttl + 1)))
    return raw


def _lock(state: SharedState, token: str) -> bool:
    if isinstance(state, RedisState):
        key = state.prefix + LOCK_KEY
        return bool(_redis_call(state, lambda client: client.set(key, token, nx=True, ex=LOCK_SECONDS)))
    return True  # one process (memory), or processes of one machine storing first-writer-wins (file)


def _unlock(state: SharedState, token: str) -> None:
    if isinstance(state, RedisState):
        key = state.prefix + LOCK_KEY
        with contextlib.suppress(SharedStateUnavailable):  # else it expires
            _redis_call(state, lambda client: client.eval(
                "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
                1, key, token))


async def compute(runtime: Runtime) -> dict[str, Any]:
    """The answer, checked now."""
    checked_at = datetime.now(UTC)
    states = await run_checks(runtime)
    services = [{"name": name, "state": states[name]} for name in SERVICES]
    return {
        "status": worst([s["state"] for s in services]),
        "services": services,
        "checkedAt": checked_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }


def _until(answer: dict[str, Any]) -> float:
    checked = datetime.fromisoformat(answer["checkedAt"].replace("Z", "+00:00")).timestamp()
    return checked + CACHE_SECONDS


async def _compute_and_store(runtime: Runtime, state: SharedState) -> dict[str, Any]:
    answer = await compute(runtime)
    until = _until(answer)
    raw = orjson.dumps({"answer": answer, "until": until})
    kept = _store_first(state, raw, until - time.time())
    return _fresh(kept) or answer


async def current_status(runtime: Runtime) -> dict[str, Any]:
    """The shared answer while fresh, else one computed now (by this instance or the one computing)."""
    local = _local(runtime)
    try:
        return await _shared_status(runtime, runtime.state, local)
    except SharedStateUnavailable:
        return await _shared_status(runtime, local.state, local)


async def _shared_status(runtime: Runtime, state: SharedState, local: _Local) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        answer = _fresh(state.get(ANSWER_KEY))
        if answer is not None:
            return answer
        if local.computing.acquire(blocking=False):
            try:
                token = secrets.token_hex(8)
                if _lock(state, token):
                    try:
                        return await _compute_and_store(runtime, state)
                    finally:
                        _unlock(state, token)
            finally:
                local.computing.release()
        if time.monotonic() > deadline:  # the one computing is stuck or gone: check here
            return await _compute_and_store(runtime, state)
        await asyncio.sleep(0.05)
