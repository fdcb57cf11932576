"""The secret route (spec 4.5): search an index by id with a saved profile, an inline one, or defaults."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from control_plane.access import Principal, index_reader
from control_plane.deps import RuntimeDep, client_ip
from control_plane.outages import unavailable_part
from control_plane.search.answer import SEARCH_RESPONSES
from control_plane.search.profile_query import SearchRequest
from control_plane.search.quota import charge_search
from control_plane.search.service import cached_for_key, resolve_secret, run_search, wants_fresh
from control_plane.wire import JSONBody, api_router

router = api_router(tags=["search"])


@router.post(
    "/projects/{project_id}/indices/{index_id}/search",
    summary="Search an index (members, secret keys); `profileKey` picks a saved profile, `profile` tries settings",
    responses=SEARCH_RESPONSES,
)
async def search(
    project_id: str,
    index_id: str,
    body: SearchRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(index_reader)],
) -> Any:
    """A shop's server searching with its secret key repeats the same resolution: it is cached per
    index epoch, so the hot path touches no database (as the storefront's)."""
    resolved = cached_for_key(runtime, principal, project_id, index_id, body)
    if resolved is None:
        try:
            resolved = await run_in_threadpool(resolve_secret, runtime, principal, project_id, index_id, body)
        except Exception as exc:
            # the database is down and the index changed since this key's last search here: its last
            # resolution (access already checked by the key's project and scope) keeps it answering
            stale = cached_for_key(runtime, principal, project_id, index_id, body, any_epoch=True)
            if stale is None or unavailable_part(exc) != "database":
                raise
            resolved = stale
    charge_search(runtime, resolved.project_id, resolved.searches_per_second, principal, client_ip(request))
    answer = await run_search(runtime, resolved, body, source="api", use_cache=not wants_fresh(request.headers, principal))
    return JSONBody.raw(answer)
