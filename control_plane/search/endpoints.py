"""The secret search route (spec 4.5): search an index by id with a saved profile, an inline one, or defaults."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from control_plane.access import IndexRead
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index.service import get_index
from control_plane.search.profile_query import SearchRequest
from control_plane.search.service import Resolved, resolve_for_index, run_search, wants_fresh

router = APIRouter(tags=["search"])


def resolved_search(body: SearchRequest, access: IndexRead, db: SessionDep, runtime: RuntimeDep) -> Resolved:
    """Database work of a search, in the thread pool: the index and the profile settings."""
    return resolve_for_index(runtime, db, get_index(db, access, access.index_id), body)


@router.post(
    "/projects/{project_id}/indices/{index_id}/search",
    summary="Search an index (members, secret keys); `profileKey` picks a saved profile, `profile` tries settings",
    responses={200: {"description": "Search answer: hits, total, page, perPage, facets, sort, appliedRules, queryId, tookMs"}},
)
async def search(
    body: SearchRequest,
    request: Request,
    runtime: RuntimeDep,
    resolved: Annotated[Resolved, Depends(resolved_search)],
) -> Any:
    return await run_search(runtime, resolved, body, source="api", use_cache=not wants_fresh(request.headers))
