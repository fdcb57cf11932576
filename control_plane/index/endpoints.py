"""Index routes (spec 4.2, CONTRACT §3)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Response

from control_plane.access.labels import IndexRead, IndexWrite, IntegrationKey, ProjectRead, ProjectWrite
from control_plane.db import after_commit
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.index import service
from control_plane.index.schemas import (
    FacetsIn,
    FacetsOut,
    FeedIn,
    FeedOut,
    IndexCreate,
    IndexList,
    IndexOut,
    IntegrationIn,
    IntegrationOut,
    Mapping,
    ReindexCancelOut,
    TaskAccepted,
    UsageOut,
)
from control_plane.shard import DROP_DELAY_S
from control_plane.usage import usage_by_field
from control_plane.wire import DEFAULT_LIMIT, Cursor, Limit, api_router

router = api_router(tags=["indices"])

BASE = "/projects/{project_id}/indices"
INDEX = BASE + "/{index_id}"


@router.get(BASE, summary="List indices")
def list_indices(access: ProjectRead, db: SessionDep, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> IndexList:
    rows, next_cursor = service.list_indices(db, access, limit, cursor)
    return IndexList(items=[IndexOut.model_validate(i) for i in rows], next_cursor=next_cursor)


@router.post(BASE, status_code=201, summary="Create an index")
def create_index(body: IndexCreate, access: ProjectWrite, db: SessionDep, runtime: RuntimeDep) -> IndexOut:
    index = service.create_index(db, access, body)
    spec = index.shard_spec()
    after_commit(db, lambda: runtime.shard_bridge().open(spec))
    return IndexOut.model_validate(index)


@router.get(INDEX, summary="Get an index")
def get_index(access: IndexRead, db: SessionDep) -> IndexOut:
    return IndexOut.model_validate(service.get_index(db, access, access.index_id))


@router.delete(INDEX, status_code=204, response_class=Response, summary="Delete an index (shard files go in the background)")
def delete_index(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = service.get_index(db, access, access.index_id)
    index_id = index.id
    service.delete_index(db, index)

    def retire() -> None:
        runtime.epochs.bump(index_id)
        runtime.shard_bridge().drop(index_id, delay=DROP_DELAY_S)

    after_commit(db, retire)
    return Response(status_code=204)


# --------------------------------------------------------------------------- mapping
@router.get(INDEX + "/mapping", summary="Get the mapping")
def get_mapping(access: IndexRead, db: SessionDep) -> dict[str, Any]:
    return service.get_index(db, access, access.index_id).mapping


@router.put(INDEX + "/mapping", status_code=202, summary="Change the mapping (rebuilds the index)")
def put_mapping(access: IndexWrite, db: SessionDep, body: Annotated[Mapping, Body()]) -> TaskAccepted:
    index = service.get_index(db, access, access.index_id, lock=True)
    return TaskAccepted(task_id=service.put_mapping(db, access, index, body).id)


@router.get(INDEX + "/mapping/usage", summary="Where each mapping field is used")
def mapping_usage(access: IndexRead, db: SessionDep) -> UsageOut:
    index = service.get_index(db, access, access.index_id)
    return UsageOut.model_validate({"fields": usage_by_field(db, index)})


# --------------------------------------------------------------------------- facets
@router.get(INDEX + "/facets", summary="Get the facets")
def get_facets(access: IndexRead, db: SessionDep) -> FacetsOut:
    return FacetsOut(facets=service.get_index(db, access, access.index_id).facets or [])


@router.put(INDEX + "/facets", summary="Replace the facets")
def put_facets(body: FacetsIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> FacetsOut:
    index = service.get_index(db, access, access.index_id)
    facets = [f.model_dump(by_alias=True, exclude_none=True) for f in body.facets]
    saved = service.put_facets(db, index, facets)
    index_id = index.id
    runtime.epochs.bump_after_commit(db, index_id)  # not before: searches would cache the old facets
    return FacetsOut(facets=saved)


# --------------------------------------------------------------------------- integration
@router.put(INDEX + "/integration", summary="Connect or update a platform integration (full-access secret key only)")
def put_integration(body: IntegrationIn, access: IntegrationKey, db: SessionDep) -> IntegrationOut:
    index = service.get_index(db, access, access.index_id)
    return IntegrationOut.model_validate(service.put_integration(db, access, index, body))


@router.delete(INDEX + "/integration", status_code=204, response_class=Response, summary="Disconnect the integration")
def delete_integration(access: IndexWrite, db: SessionDep) -> Response:
    service.delete_integration(db, service.get_index(db, access, access.index_id))
    return Response(status_code=204)


# --------------------------------------------------------------------------- feed
@router.get(INDEX + "/feed", summary="Get the data source")
def get_feed(access: IndexRead, db: SessionDep) -> FeedOut:
    return FeedOut.of(service.get_feed(service.get_index(db, access, access.index_id)))


@router.put(INDEX + "/feed", summary="Set the data source")
def put_feed(body: FeedIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> FeedOut:
    index = service.get_index(db, access, access.index_id)
    return FeedOut.of(service.put_feed(db, index, body, runtime.settings))


@router.delete(INDEX + "/feed", status_code=204, response_class=Response, summary="Remove the data source")
def delete_feed(access: IndexWrite, db: SessionDep) -> Response:
    service.delete_feed(db, service.get_index(db, access, access.index_id))
    return Response(status_code=204)


@router.post(INDEX + "/feed/sync", status_code=202, summary="Replace the catalog from the data source now")
def sync_feed(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> TaskAccepted:
    index = service.get_index(db, access, access.index_id)
    return TaskAccepted(task_id=service.sync_feed(db, index, runtime.settings).id)


# --------------------------------------------------------------------------- reindex
@router.post(INDEX + "/reindex", status_code=202, summary="Rebuild every shard from the stored documents")
def reindex(access: IndexWrite, db: SessionDep) -> TaskAccepted:
    index = service.get_index(db, access, access.index_id, lock=True)
    return TaskAccepted(task_id=service.reindex(db, index).id)


@router.post(INDEX + "/reindex/cancel", summary="Cancel the enqueued or running reindex")
def cancel_reindex(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> ReindexCancelOut:
    index = service.get_index(db, access, access.index_id, lock=True)
    task, status = service.cancel_reindex(db, runtime.sessions, index)
    return ReindexCancelOut(task_id=task.id, status=status)
