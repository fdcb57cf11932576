"""Querying an index's serving generation, riding out a generation swap or a shard being reopened."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.concurrency import run_in_threadpool

from control_plane.index.models import Index
from control_plane.index.shards import ShardBridge, spec_for
from control_plane.runtime import Runtime
from search_workers.engine import EngineError, SearchTimeout
from search_workers.host import HostError, ShardNotOpen
from shared.errors import ErrorCode, ServiceError, validation

_RETRYABLE_ENGINE_CODES = ("SHARD_DROPPED", "ENGINE_CLOSED")


def _reload(runtime: Runtime, index_id: str) -> Index | None:
    with runtime.sessions() as db:
        index = db.get(Index, index_id)
        if index is not None:
            db.expunge(index)
        return index


async def _attempt(runtime: Runtime, bridge: ShardBridge, index: Index, query: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(3):
        try:
            return await bridge.search(index.id, index.serving_generation, query)
        except ShardNotOpen:
            spec = spec_for(index, index.serving_generation, index.serving_mapping)
            await run_in_threadpool(bridge.ensure_open, spec, True)
        except (HostError, EngineError) as exc:
            if isinstance(exc, EngineError) and exc.code not in _RETRYABLE_ENGINE_CODES:
                raise
            if attempt == 2:
                raise
            # the generation may just have been swapped out: read the serving one again
            fresh = await run_in_threadpool(_reload, runtime, index.id)
            if fresh is None:
                raise ServiceError(ErrorCode.NOT_FOUND, "Index not found") from exc
            index = fresh
            await asyncio.sleep(0.05)
    return await bridge.search(index.id, index.serving_generation, query)


async def search_serving(runtime: Runtime, bridge: ShardBridge, index: Index, query: dict[str, Any]) -> dict[str, Any]:
    """The merged shard answer; engine refusals become 400, unreachable workers 503."""
    try:
        return await _attempt(runtime, bridge, index, query)
    except SearchTimeout as exc:
        raise ServiceError(ErrorCode.SEARCH_TIMEOUT, "The search took longer than allowed and was stopped") from exc
    except EngineError as exc:
        details = [{"path": d.get("path", ""), "message": d.get("message", "")} for d in exc.details] or None
        raise validation(exc.message, details) from exc
    except HostError as exc:
        raise ServiceError(ErrorCode.UNAVAILABLE, f"Search workers unavailable: {exc.message}") from exc
