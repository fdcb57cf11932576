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
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import orjson

from control_plane.runtime import Runtime
from control_plane.state import SharedState, SharedStateUnavailable
from control_plane.status.checks import SERVICES, run_checks, worst
from control_plane.status.process import ProcessStatus

CACHE_SECONDS = 15.0
LOCK_SECONDS = 20
WAIT_SECONDS = 10.0
ANSWER_KEY = "status:answer"
LOCK_KEY = "status:computing"


def _fresh(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    stored = orjson.loads(raw)
    return stored["answer"] if stored.get("until", 0) > time.time() else None  # type: ignore[no-any-return]


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
    kept = state.set_first(ANSWER_KEY, raw, until - time.time())  # first writer wins
    return _fresh(kept) or answer


async def current_status(runtime: Runtime) -> dict[str, Any]:
    """The shared answer while fresh, else one computed now (by this instance or the one computing)."""
    local = runtime.status
    try:
        return await _shared_status(runtime, runtime.state, local)
    except SharedStateUnavailable:
        return await _shared_status(runtime, local.state, local)


async def _shared_status(runtime: Runtime, state: SharedState, local: ProcessStatus) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        answer = _fresh(state.get(ANSWER_KEY))
        if answer is not None:
            return answer
        if local.computing.acquire(blocking=False):
            try:
                token = secrets.token_hex(8)
                if state.lock(LOCK_KEY, token, LOCK_SECONDS):
                    try:
                        # the lock's last holder may have stored its answer and let go since the look
                        # above: computing again would run every check twice
                        return _fresh(state.get(ANSWER_KEY)) or await _compute_and_store(runtime, state)
                    finally:
                        state.unlock(LOCK_KEY, token)
            finally:
                local.computing.release()
        if time.monotonic() > deadline:  # the one computing is stuck or gone: check here
            return await _compute_and_store(runtime, state)
        await asyncio.sleep(0.05)
