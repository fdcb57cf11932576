"""Storefront routes (spec 4.1): what shop pages call from the browser with a public key."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from control_plane.access import (
    Principal,
    access_for_key_project,
    bearer_token,
    principal_from_token,
    storefront_principal,
)
from control_plane.deps import RuntimeDep, client_ip
from control_plane.search.answer import SEARCH_RESPONSES
from control_plane.search.exposure import check_public_request
from control_plane.search.profile_query import SearchRequest
from control_plane.search.quota import charge_search
from control_plane.search.service import resolve_storefront, run_search, wants_fresh
from control_plane.security import PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX
from control_plane.suggestion.endpoints import suggest_response
from control_plane.suggestion.schemas import SuggestAnswer, SuggestRequest
from control_plane.suggestion.serving import loaded_for_key, refuse_user
from control_plane.wire import JSONBody, api_router
from shared.errors import ErrorCode, ServiceError

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
    body: SearchRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(storefront_caller)],
) -> Any:
    if body.profile is not None or body.profile_key is not None:
        raise ServiceError(
            ErrorCode.VALIDATION_ERROR,
            "The storefront route takes its profile from the path",
            [{"path": "profile" if body.profile is not None else "profileKey", "message": "not allowed here"}],
        )
    resolved = await resolve_storefront(runtime, profile_key)
    access_for_key_project(principal, resolved.project_id)
    if principal.key is not None and principal.key.index_id not in (None, resolved.index.id):
        raise ServiceError(ErrorCode.NOT_FOUND, "Search profile not found")
    charge_search(runtime, resolved.project_id, resolved.searches_per_second, principal, client_ip(request))
    if principal.kind == "public_key":
        index = resolved.index
        check_public_request(resolved.settings, body, index.serving_mapping or index.mapping)
    answer = await run_search(runtime, resolved, body, source="storefront", use_cache=not wants_fresh(request.headers, principal))
    return JSONBody.raw(answer)


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
    loaded = await loaded_for_key(runtime, suggest_key)
    access_for_key_project(principal, loaded.project_id)
    if principal.key is not None and principal.key.index_id not in (None, loaded.index_id):
        raise ServiceError(ErrorCode.NOT_FOUND, "Suggest handle not found")
    return await suggest_response(runtime, loaded, body, principal, request, "storefront")
