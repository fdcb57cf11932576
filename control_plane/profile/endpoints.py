"""Profile routes (spec 4.5): saved search settings of an index."""

from __future__ import annotations

from typing import Any

from fastapi import Response

from control_plane.access.labels import IndexRead, IndexWrite
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.errors import profile_validation_error, validation_error_as
from control_plane.index.service import get_index
from control_plane.profile import service
from control_plane.profile.schemas import ProfileCreate, ProfileList, ProfileOut
from control_plane.wire import Cursor, Limit, api_router

router = api_router(tags=["profiles"])

BASE = "/projects/{project_id}/indices/{index_id}/profiles"
ONE = BASE + "/{profile_id}"


@router.get(BASE, summary="List search profiles", response_model=ProfileList)
def list_profiles(
    access: IndexRead,
    db: SessionDep,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> Any:
    get_index(db, access, access.index_id)
    rows, next_cursor = service.list_page(db, access.project_id, access.index_id, limit, cursor)
    return {"items": [service.to_out(p) for p in rows], "nextCursor": next_cursor}


@router.post(BASE, status_code=201, summary="Create a search profile", response_model=ProfileOut)
@validation_error_as(profile_validation_error)
def create_profile(body: ProfileCreate, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Any:
    index = get_index(db, access, access.index_id)
    profile = service.create(db, access.project_id, index.id, index.mapping, body)
    return service.to_out(profile)


@router.get(ONE, summary="Get a search profile", response_model=ProfileOut)
def get_profile(profile_id: str, access: IndexRead, db: SessionDep) -> Any:
    get_index(db, access, access.index_id)
    return service.to_out(service.get(db, access.project_id, access.index_id, profile_id))


@router.put(ONE, summary="Replace a search profile's settings", response_model=ProfileOut)
@validation_error_as(profile_validation_error)
def update_profile(
    profile_id: str, body: ProfileCreate, access: IndexWrite, db: SessionDep, runtime: RuntimeDep
) -> Any:
    index = get_index(db, access, access.index_id)
    profile = service.update(db, access.project_id, index.id, index.mapping, profile_id, body)
    index_id = index.id
    # after the commit: a search resolving in between must read the new settings under the new epoch
    runtime.epochs.bump_after_commit(db, index_id)
    return service.to_out(profile)


@router.delete(ONE, status_code=204, response_class=Response, summary="Delete a search profile")
def delete_profile(profile_id: str, access: IndexWrite, db: SessionDep, runtime: RuntimeDep) -> Response:
    get_index(db, access, access.index_id)
    service.delete(db, access.project_id, access.index_id, profile_id)
    index_id = access.index_id
    runtime.epochs.bump_after_commit(db, index_id)  # see update_profile
    return Response(status_code=204)
