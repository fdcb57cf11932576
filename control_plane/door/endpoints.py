"""The secret routes that search: an index by id (spec 4.5), suggest by index id, and rules/test.
Each enters the search door (``door.service``), as the storefront and MCP do."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from control_plane.access.caller import Principal
from control_plane.access.labels import IndexRead, index_reader
from control_plane.deps import RuntimeDep, client_ip
from control_plane.door import service as door
from control_plane.rule.schemas import RuleTest, RuleTestOut
from control_plane.search.answer import FACET_VALUES_RESPONSES, SEARCH_RESPONSES
from control_plane.search.facet_values import FacetValuesRequest
from control_plane.search.profile_query import SearchRequest
from control_plane.suggestion.schemas import SuggestAnswer, SuggestRequest
from control_plane.wire import JSONBody, api_router

router = api_router(tags=["search"])


def caller_of(request: Request, principal: Principal) -> door.Caller:
    return door.Caller.of(principal, client_ip(request), request.headers.get("cache-control"))


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
    answer = await door.index_search(runtime, caller_of(request, principal), project_id, index_id, body)
    return JSONBody.raw(answer)


@router.post("/projects/{project_id}/indices/{index_id}/rules/test", tags=["rules"],
             summary="Which rules a query triggers and the hits they give (a draft `rule` too)",
             response_model=RuleTestOut, response_model_exclude_none=True)
async def rules_test(body: RuleTest, access: IndexRead, request: Request, runtime: RuntimeDep) -> Any:
    return await door.rules_test(runtime, caller_of(request, access.principal), access, body)


@router.post("/projects/{project_id}/indices/{index_id}/suggest", tags=["suggestions"],
             summary="Suggest (members, secret keys)", response_model=SuggestAnswer)
async def suggest_by_index(
    project_id: str,
    index_id: str,
    body: SuggestRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(index_reader)],
) -> Any:
    answer = await door.index_suggest(runtime, caller_of(request, principal), project_id, index_id, body)
    return JSONBody.raw(answer)


@router.post("/projects/{project_id}/indices/{index_id}/facet-values",
             summary="Facet value search (members, secret keys): `profileKey` or an inline `profile`, else defaults",
             responses=FACET_VALUES_RESPONSES)
async def facet_values(
    project_id: str,
    index_id: str,
    body: FacetValuesRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(index_reader)],
) -> Any:
    answer = await door.index_facet_values(runtime, caller_of(request, principal), project_id, index_id, body)
    return JSONBody.raw(answer)
