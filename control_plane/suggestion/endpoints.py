"""Autocomplete settings (spec 4.8): the config, custom suggestions and rebuilds.

Suggesting is a search: ``POST /v1/suggest/{suggestKey}`` (storefront) and ``.../suggest`` by index
id enter the search door with the other searching routes (``door.service``)."""

from __future__ import annotations

from typing import Any

from fastapi import Response

from control_plane.access.labels import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index.schemas import TaskAccepted
from control_plane.index.service import get_index
from control_plane.suggestion import service
from control_plane.suggestion.schemas import (
    CustomSuggestionIn,
    CustomSuggestionList,
    CustomSuggestionOut,
    SuggestionConfigOut,
    SuggestionSettings,
)
from control_plane.wire import Cursor, Limit, api_router

router = api_router(tags=["suggestions"])

BASE = "/projects/{project_id}/indices/{index_id}"


@router.get(BASE + "/suggestions/config", summary="Get the autocomplete settings", response_model=SuggestionConfigOut)
def get_config(access: IndexRead, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    return service.to_out(service.config_row(db, index))


@router.put(BASE + "/suggestions/config", summary="Replace the autocomplete settings (a rebuild follows)",
            response_model=SuggestionConfigOut)
def put_config(body: SuggestionSettings, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id)
    row = service.put(db, index, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.to_out(row)


@router.get(BASE + "/suggestions/custom", summary="List custom suggestions", response_model=CustomSuggestionList)
def list_custom(access: IndexRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    get_index(db, access, access.index_id)
    rows, next_cursor = service.list_custom_page(db, access.project_id, access.index_id, limit, cursor)
    return {"items": [service.custom_out(r) for r in rows], "nextCursor": next_cursor}


@router.post(BASE + "/suggestions/custom", status_code=201, response_model=CustomSuggestionOut,
             summary="Add a custom suggestion (served from the rebuild it enqueues on, whatever the catalog holds)")
def add_custom(body: CustomSuggestionIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id)
    row = service.add_custom(db, index, body)
    runtime.epochs.bump_after_commit(db, index.id)
    return service.custom_out(row)


@router.delete(BASE + "/suggestions/custom/{suggestion_id}", status_code=204, response_class=Response,
               summary="Delete a custom suggestion (gone from answers at once)")
def delete_custom(suggestion_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = get_index(db, access, access.index_id)
    service.delete_custom(db, index, suggestion_id)
    runtime.epochs.bump_after_commit(db, index.id)
    return Response(status_code=204)


@router.post(BASE + "/suggestions/rebuild", status_code=202, summary="Rebuild the suggestions (a task)",
             response_model=TaskAccepted)
def rebuild(access: IndexWrite, db: SessionDep) -> Any:
    index = get_index(db, access, access.index_id)
    task = service.request_rebuild(db, index, coalesce=False)
    assert task is not None
    return {"taskId": task.id}
