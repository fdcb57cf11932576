"""Index routes (spec 4.2, CONTRACT §3)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from control_plane.access import IndexRead, IndexWrite, IntegrationKey, ProjectRead, ProjectWrite
from control_plane.db import after_commit
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.epochs import bump_index_epoch
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
    ReindexCancelOut,
    TaskAccepted,
    UsageOut,
)
from control_plane.shard import DROP_DELAY_S, shard_bridge
from control_plane.task.models import Task
from control_plane.usage import usage_by_field
from control_plane.wire import Cursor, Limit

router = APIRouter(tags=["indices"])

BASE = "/projects/{project_id}/indices"
INDEX = BASE + "/{index_id}"


@router.get(BASE, summary="List indices", response_model=IndexList)
def list_indices(access: ProjectRead, db: SessionDep, limit: Limit = 20, cursor: Cursor = None) -> Any:
    rows, next_cursor = service.list_indices(db, access, limit, cursor)
    return {"items": [service.index_view(i) for i in rows], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create an index", response_model=IndexOut)
def create_index(body: IndexCreate, access: ProjectWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = service.create_index(db, access, body.model_dump())
    spec = index.shard_spec()
    after_commit(db, lambda: shard_bridge(runtime).open(spec))
    return service.index_view(index)


@router.get(INDEX, summary="Get an index", response_model=IndexOut)
def get_index(access: IndexRead, db: SessionDep) -> Any:
    return service.index_view(service.get_index(db, access, access.index_id))


@router.delete(INDEX, status_code=204, response_class=Response, summary="Delete an index (shard files go in the background)")
def delete_index(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    index = service.get_index(db, access, access.index_id)
    index_id = index.id
    service.delete_index(db, index)

    def retire() -> None:
        bump_index_epoch(runtime.state, index_id)
        shard_bridge(runtime).drop(index_id, delay=DROP_DELAY_S)

    after_commit(db, retire)
    return Response(status_code=204)


# --------------------------------------------------------------------------- mapping
@router.get(INDEX + "/mapping", summary="Get the mapping")
def get_mapping(access: IndexRead, db: SessionDep) -> dict[str, Any]:
    return service.get_index(db, access, access.index_id).mapping


@router.put(INDEX + "/mapping", status_code=202, summary="Change the mapping (rebuilds the index)", response_model=TaskAccepted)
def put_mapping(access: IndexWrite, db: SessionDep, body: Annotated[dict[str, Any], Body()]) -> Any:
    index = service.get_index(db, access, access.index_id, lock=True)
    task = service.put_mapping(db, access, index, body)
    return {"taskId": task.id}


@router.get(INDEX + "/mapping/usage", summary="Where each mapping field is used", response_model=UsageOut)
def mapping_usage(access: IndexRead, db: SessionDep) -> Any:
    index = service.get_index(db, access, access.index_id)
    return {"fields": usage_by_field(db, index)}


# --------------------------------------------------------------------------- facets
@router.get(INDEX + "/facets", summary="Get the facets", response_model=FacetsOut)
def get_facets(access: IndexRead, db: SessionDep) -> Any:
    return {"facets": service.get_index(db, access, access.index_id).facets or []}


@router.put(INDEX + "/facets", summary="Replace the facets", response_model=FacetsOut)
def put_facets(body: FacetsIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = service.get_index(db, access, access.index_id)
    facets = [f.model_dump(by_alias=True, exclude_none=True) for f in body.facets]
    saved = service.put_facets(db, index, facets)
    index_id = index.id
    after_commit(db, lambda: bump_index_epoch(runtime.state, index_id))  # not before: searches would cache the old facets
    return {"facets": saved}


# --------------------------------------------------------------------------- integration
@router.put(INDEX + "/integration", summary="Connect or update a platform integration (full-access secret key only)",
            response_model=IntegrationOut)
def put_integration(body: IntegrationIn, access: IntegrationKey, db: SessionDep) -> Any:
    index = service.get_index(db, access, access.index_id)
    return service.put_integration(db, access, index, body.model_dump(by_alias=True))


@router.delete(INDEX + "/integration", status_code=204, response_class=Response, summary="Disconnect the integration")
def delete_integration(access: IndexWrite, db: SessionDep) -> Response:
    service.delete_integration(db, service.get_index(db, access, access.index_id))
    return Response(status_code=204)


# --------------------------------------------------------------------------- feed
@router.get(INDEX + "/feed", summary="Get the data source", response_model=FeedOut)
def get_feed(access: IndexRead, db: SessionDep) -> Any:
    return service.feed_view(service.get_index(db, access, access.index_id))


@router.put(INDEX + "/feed", summary="Set the data source", response_model=FeedOut)
def put_feed(body: FeedIn, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = service.get_index(db, access, access.index_id)
    return service.put_feed(db, index, body.model_dump(by_alias=True), runtime.settings)


@router.delete(INDEX + "/feed", status_code=204, response_class=Response, summary="Remove the data source")
def delete_feed(access: IndexWrite, db: SessionDep) -> Response:
    service.delete_feed(db, service.get_index(db, access, access.index_id))
    return Response(status_code=204)


@router.post(INDEX + "/feed/sync", status_code=202, summary="Replace the catalog from the data source now",
             response_model=TaskAccepted)
def sync_feed(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = service.get_index(db, access, access.index_id)
    return {"taskId": service.sync_feed(db, index, runtime.settings).id}


# --------------------------------------------------------------------------- reindex
@router.post(INDEX + "/reindex", status_code=202, summary="Rebuild every shard from the stored documents",
             response_model=TaskAccepted)
def reindex(access: IndexWrite, db: SessionDep) -> Any:
    index = service.get_index(db, access, access.index_id, lock=True)
    return {"taskId": service.reindex(db, index).id}


@router.post(INDEX + "/reindex/cancel", summary="Cancel the enqueued or running reindex", response_model=ReindexCancelOut)
def cancel_reindex(access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = service.get_index(db, access, access.index_id, lock=True)
    task = service.cancel_reindex(db, index)
    db.commit()
    task_pk = task.pk
    status = task.status
    deadline = time.monotonic() + 5.0
    while status == "processing" and time.monotonic() < deadline:
        time.sleep(0.05)
        with runtime.sessions() as fresh:
            status = fresh.get(Task, task_pk).status  # type: ignore[union-attr]
    return {"taskId": task.id, "status": status}
