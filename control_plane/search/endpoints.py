"""The basic secret search route: the body goes straight to the serving generation's shards.

(The profile-based search replaces this route later; keep it thin.)
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from control_plane.access import IndexRead
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index.lifecycle import get_bridge
from control_plane.index.models import Index
from control_plane.index.service import get_index
from control_plane.index.shards import ShardBridge, spec_for
from control_plane.responses import JSONBody
from control_plane.runtime import Runtime
from search_workers.engine import EngineError
from search_workers.host import HostError, ShardNotOpen
from shared.errors import ErrorCode, ServiceError, validation
from shared.ids import new_id

router = APIRouter(tags=["search"])


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    q: str = Field(default="", max_length=1000)
    filters: dict[str, Any] | None = None
    facets: list[str | dict[str, Any]] | None = None
    sort: str | list[str] | None = None
    page: int = Field(default=1, ge=1, le=10_000)
    per_page: int = Field(default=20, ge=1, le=100, alias="perPage")


class SearchHit(BaseModel):
    id: str
    score: float
    document: dict[str, Any]
    highlights: dict[str, Any]


class SearchOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    hits: list[SearchHit]
    total: int
    page: int
    per_page: int = Field(alias="perPage")
    facets: dict[str, list[dict[str, Any]]]
    query_id: str = Field(alias="queryId")
    took_ms: float = Field(alias="tookMs")


@dataclass(frozen=True)
class Serving:
    index: Index


def serving_index(access: IndexRead, db: SessionDep) -> Serving:
    index = get_index(db, access, access.index_id)
    db.expunge(index)
    return Serving(index)


ServingDep = Annotated[Serving, Depends(serving_index)]


def _facet_defs(index: Index, requested: list[str | dict[str, Any]] | None) -> list[dict[str, Any]]:
    configured = {f["field"]: f for f in index.facets or []}
    if requested is None:
        return list(configured.values())
    out = []
    for i, item in enumerate(requested):
        if isinstance(item, str):
            out.append(configured.get(item) or {"field": item, "type": "terms", "size": 10, "sort": "count"})
        elif isinstance(item.get("field"), str):
            out.append(item)
        else:
            raise validation("The facets are not valid", [{"path": f"facets.{i}.field", "message": "a field name is required"}])
    return out


def _facets_out(defs: list[dict[str, Any]], raw: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    by_field = {d["field"]: d for d in defs}
    for name, value in (raw or {}).items():
        facet = by_field.get(name, {})
        if isinstance(value, list) and facet.get("type") == "range":
            ranges = facet.get("ranges") or []
            out[name] = [
                {"from": r.get("from"), "to": r.get("to"), "label": r.get("label"), "count": int(c)}
                for r, c in zip(ranges, value, strict=False)
            ]
        elif isinstance(value, dict):
            entries = [{"value": v, "count": int(c)} for v, c in value.items()]
            if facet.get("sort", "count") == "count":
                entries.sort(key=lambda e: (-e["count"], str(e["value"])))
            out[name] = entries[: int(facet.get("size") or 10)]
        elif isinstance(value, list):
            out[name] = value
    return out


def _reload(runtime: Runtime, index_id: str) -> Index | None:
    with runtime.sessions() as db:
        index = db.get(Index, index_id)
        if index is not None:
            db.expunge(index)
        return index


async def _search(runtime: Runtime, bridge: ShardBridge, index: Index, query: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(3):
        try:
            return await bridge.acall("search", index.id, index.serving_generation, query)  # type: ignore[no-any-return]
        except ShardNotOpen:
            await run_in_threadpool(bridge.ensure_open, spec_for(index, index.serving_generation, index.serving_mapping), True)
        except (HostError, EngineError) as exc:
            if isinstance(exc, EngineError) and exc.code not in ("SHARD_DROPPED", "ENGINE_CLOSED"):
                raise
            if attempt == 2:
                raise
            # the generation may just have been swapped out: read the serving one again
            fresh = await run_in_threadpool(_reload, runtime, index.id)
            if fresh is None:
                raise ServiceError(ErrorCode.NOT_FOUND, "Index not found") from exc
            index = fresh
            await asyncio.sleep(0.05)
    return await bridge.acall("search", index.id, index.serving_generation, query)  # type: ignore[no-any-return]


@router.post("/projects/{project_id}/indices/{index_id}/search", summary="Search an index (secret keys, members)",
             response_model=SearchOut)
async def search(body: SearchIn, serving: ServingDep, runtime: RuntimeDep) -> Any:
    started = time.perf_counter()
    index = serving.index
    defs = _facet_defs(index, body.facets)
    sort = [body.sort] if isinstance(body.sort, str) else list(body.sort or [])
    query: dict[str, Any] = {
        "q": body.q,
        "filters": body.filters,
        "facets": defs,
        "sort": sort,
        "limit": body.per_page,
        "offset": (body.page - 1) * body.per_page,
    }
    bridge = get_bridge(runtime)
    try:
        answer = await _search(runtime, bridge, index, query)
    except EngineError as exc:
        details = [{"path": d.get("path", ""), "message": d.get("message", "")} for d in exc.details] or None
        raise validation(exc.message, details) from exc
    except HostError as exc:
        raise ServiceError(ErrorCode.UNAVAILABLE, f"Search workers unavailable: {exc.message}") from exc
    hits = [
        {"id": h["id"], "score": h.get("score", 0.0), "document": h.get("document") or {}, "highlights": h.get("highlights") or {}}
        for h in answer.get("hits", [])
    ]
    return JSONBody(
        {
            "hits": hits,
            "total": int(answer.get("total", 0)),
            "page": body.page,
            "perPage": body.per_page,
            "facets": _facets_out(defs, answer.get("facets") or {}),
            "queryId": new_id("q"),
            "tookMs": round((time.perf_counter() - started) * 1000, 2),
        }
    )
