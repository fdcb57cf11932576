"""Searching an index's serving generation, riding out a generation swap or a shard being reopened,
and turning what the engine and the hosts raise into the API's errors."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from search_workers.engine import EngineError, SearchTimeout
from search_workers.host import HostError, ShardNotOpen
from shared.contract import Answer, Query, ShardSpec
from shared.errors import ErrorCode, ServiceError, validation

from .bridge import ShardBridge

_RETRYABLE_ENGINE_CODES = ("SHARD_DROPPED", "ENGINE_CLOSED")
ATTEMPTS = 3

ServingSpec = Callable[[], Awaitable[ShardSpec | None]]
"""Reads the index's serving generation again (``None``: the index is gone)."""


async def _attempt(bridge: ShardBridge, spec: ShardSpec, query: Query, reload: ServingSpec) -> Answer:
    for attempt in range(ATTEMPTS):
        try:
            return await bridge.search(spec.index_id, spec.generation, query)
        except ShardNotOpen:
            await bridge.reopen(spec)
        except (HostError, EngineError) as exc:
            if isinstance(exc, EngineError) and exc.code not in _RETRYABLE_ENGINE_CODES:
                raise
            if attempt == ATTEMPTS - 1:
                raise
            # the generation may just have been swapped out: read the serving one again
            fresh = await reload()
            if fresh is None:
                raise ServiceError(ErrorCode.NOT_FOUND, "Index not found") from exc
            if isinstance(exc, HostError) and fresh.generation == spec.generation:
                raise  # the host already retried its replicas for its whole retry window
            spec = fresh
            await asyncio.sleep(0.05)
    return await bridge.search(spec.index_id, spec.generation, query)


async def search_serving(bridge: ShardBridge, spec: ShardSpec, query: Query, reload: ServingSpec) -> Answer:
    """The merged answer of the shards of ``spec``; engine refusals become 400, a search past its
    time 503 ``SEARCH_TIMEOUT``, unreachable workers 503 ``UNAVAILABLE``."""
    try:
        return await _attempt(bridge, spec, query, reload)
    except SearchTimeout as exc:
        raise ServiceError(ErrorCode.SEARCH_TIMEOUT, "The search took longer than allowed and was stopped") from exc
    except EngineError as exc:
        details = [{"path": d.get("path", ""), "message": d.get("message", "")} for d in exc.details] or None
        raise validation(exc.message, details) from exc
    except HostError as exc:
        raise ServiceError(ErrorCode.UNAVAILABLE, f"Search workers unavailable: {exc.message}") from exc
