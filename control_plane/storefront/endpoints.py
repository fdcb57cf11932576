"""Storefront routes (spec 4.1): what shop pages call from the browser with a public key."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from control_plane.access.caller import Principal, principal_from_token
from control_plane.access.labels import bearer_token
from control_plane.access.storefront import storefront_principal
from control_plane.deps import RuntimeDep
from control_plane.door import service as door
from control_plane.door.endpoints import caller_of
from control_plane.search.answer import FACET_VALUES_RESPONSES, MULTI_SEARCH_RESPONSES, SEARCH_RESPONSES
from control_plane.search.facet_values import FacetValuesRequest
from control_plane.search.profile_query import MultiSearchRequest, StorefrontSearchRequest
from control_plane.security import PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX
from control_plane.suggestion.schemas import SuggestAnswer, SuggestRequest
from control_plane.suggestion.serving import refuse_user
from control_plane.wire import JSONBody, api_router

router = api_router(tags=["storefront"])


async def storefront_caller(request: Request, runtime: RuntimeDep) -> Principal:
    """The key and origin, checked before the body (401/403 before 400), on the event loop."""
    return storefront_principal(runtime, request)


@router.post(
    "/search/{profile_key}",
    summary="Storefront search by profile handle (public key from an allowed origin, or a secret key)",
    responses=SEARCH_RESPONSES,
)
async def storefront_search(
    profile_key: str,
    body: StorefrontSearchRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    return JSONBody.raw(await door.storefront_search(runtime, caller_of(request, principal), profile_key,
                                                     body.for_search()))


@router.post(
    "/search/{profile_key}/facet-values",
    summary="Storefront facet value search: a facet's values matching what the shopper typed, with counts",
    responses=FACET_VALUES_RESPONSES,
)
async def storefront_facet_values(
    profile_key: str,
    body: FacetValuesRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    caller = caller_of(request, principal)
    return JSONBody.raw(await door.storefront_facet_values(runtime, caller, profile_key, body))


@router.post(
    "/multi-search",
    summary="A page's storefront searches in one round trip (1-20 queries, each naming its profileKey)",
    responses=MULTI_SEARCH_RESPONSES,
)
async def multi_search(
    body: MultiSearchRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    return JSONBody.raw(await door.multi_search(runtime, caller_of(request, principal), body.queries))


async def refuse_sessions_by_handle(suggest_key: str, request: Request, runtime: RuntimeDep) -> None:
    """Runs before :func:`storefront_caller`: a signed-in session gets 404 for a suggest handle of
    another organization, else 403 (storefront search decides this by its profile handle)."""
    header = request.headers.get("authorization") or ""
    token = header.partition(" ")[2].strip()
    if not token or token.startswith((SECRET_KEY_PREFIX, PUBLIC_KEY_PREFIX)):
        return  # keys (and missing or malformed credentials) are storefront_caller's to decide
    principal = principal_from_token(runtime, None, bearer_token(request))
    if principal.kind == "user":
        await run_in_threadpool(refuse_user, runtime, principal, suggest_key)


@router.post(
    "/suggest/{suggest_key}",
    summary="Storefront suggest by suggest handle (public key from an allowed origin, or a secret key)",
    response_model=SuggestAnswer,
)
async def storefront_suggest(
    suggest_key: str,
    body: SuggestRequest,
    request: Request,
    runtime: RuntimeDep,
    _sessions: Annotated[None, Depends(refuse_sessions_by_handle)],
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    return JSONBody.raw(await door.storefront_suggest(runtime, caller_of(request, principal), suggest_key, body))
