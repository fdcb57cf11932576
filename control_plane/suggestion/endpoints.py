"""Autocomplete routes (spec 4.8): settings, custom suggestions, rebuilds, and suggest by index id.

The storefront route ``POST /v1/suggest/{suggestKey}`` lives with the storefront search
(``control_plane.storefront.endpoints``) and shares :func:`suggest_response`.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Response

from control_plane.access import IndexRead, IndexWrite, Principal, index_reader
from control_plane.deps import RuntimeDep, SessionDep, client_ip
from control_plane.epochs import bump_after_commit
from control_plane.index.schemas import TaskAccepted
from control_plane.index.service import get_index
from control_plane.runtime import Runtime
from control_plane.search.quota import charge_search
from control_plane.suggestion import repository, service
from control_plane.suggestion import tasks as _tasks  # noqa: F401 - registers suggestions.rebuild
from control_plane.suggestion.schemas import (
    CustomSuggestionIn,
    CustomSuggestionList,
    CustomSuggestionOut,
    SuggestAnswer,
    SuggestionConfigOut,
    SuggestionSettings,
    SuggestRequest,
)
from control_plane.suggestion.serving import Loaded, loaded_for_index, suggest
from control_plane.wire import Cursor, JSONBody, Limit, api_router, decode_cursor, encode_cursor
from shared.errors import not_found

router = api_router(tags=["suggestions"])

BASE = "/projects/{project_id}/indices/{index_id}"


def _bump_after_commit(db: Any, runtime: Runtime, index_id: str) -> None:
    bump_after_commit(db, runtime.state, index_id)


@router.get(BASE + "/suggestions/config", summary="Get the autocomplete settings", response_model=SuggestionConfigOut)
def get_config(access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.config_row(db, index))


@router.put(BASE + "/suggestions/config", summary="Replace the autocomplete settings (a rebuild follows)",
            response_model=SuggestionConfigOut)
def put_config(body: SuggestionSettings, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id)
    row = service.put(db, index, body)
    _bump_after_commit(db, runtime, index.id)
    return service.to_out(row)


@router.get(BASE + "/suggestions/custom", summary="List custom suggestions", response_model=CustomSuggestionList)
def list_custom(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    after = decode_cursor(cursor)[0] if cursor else None
    rows = repository.list_custom(db, access.project_id, access.index_id, after, limit + 1)
    next_cursor = encode_cursor(rows[limit - 1].id) if len(rows) > limit else None
    return {"items": [service.custom_out(r) for r in rows[:limit]], "nextCursor": next_cursor}


@router.post(BASE + "/suggestions/custom", status_code=201, response_model=CustomSuggestionOut,
             summary="Add a custom suggestion (served once the rebuild it enqueues has checked it finds something)")
def add_custom(body: CustomSuggestionIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id)
    row = service.add_custom(db, index, body)
    _bump_after_commit(db, runtime, index.id)
    return service.custom_out(row)


@router.delete(BASE + "/suggestions/custom/{suggestion_id}", status_code=204, response_class=Response,
               summary="Delete a custom suggestion (gone from answers at once)")
def delete_custom(suggestion_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id)
    service.delete_custom(db, index, suggestion_id)
    _bump_after_commit(db, runtime, index.id)
    return Response(status_code=204)


@router.post(BASE + "/suggestions/rebuild", status_code=202, summary="Rebuild the suggestions (a task)",
             response_model=TaskAccepted)
def rebuild(access: IndexWrite, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    task = service.request_rebuild(db, index, coalesce=False)
    assert task is not None
    return {"taskId": task.id}


async def suggest_response(runtime: Runtime, loaded: Loaded, body: SuggestRequest, principal: Principal,
                           request: Request, source: str) -> Response:
    charge_search(runtime, loaded.project_id, loaded.searches_per_second, principal, client_ip(request))
    return JSONBody.raw(await suggest(runtime, loaded, body.q, body.limit, source=source))


@router.post(BASE + "/suggest", summary="Suggest (members, secret keys)", response_model=SuggestAnswer)
async def suggest_by_index(
    project_id: str,
    index_id: str,
    body: SuggestRequest,
    request: Request,
    runtime: RuntimeDep,
    principal: Annotated[Principal, Depends(index_reader)],
) -> Any:
    loaded = await loaded_for_index(runtime, index_id)
    if loaded.project_id != project_id:
        raise not_found("Index")
    return await suggest_response(runtime, loaded, body, principal, request, "secret")
