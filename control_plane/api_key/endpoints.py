"""API keys (spec 4.10): managed only from a signed-in session, never by a key."""

from __future__ import annotations

from fastapi import Response

from control_plane.access.caller import revoke_key
from control_plane.access.labels import ProjectAdminSignedIn, ProjectMemberSignedIn
from control_plane.access.tenancy import forbid_impersonation
from control_plane.api_key import service
from control_plane.api_key.schemas import ApiKeyCreated, ApiKeyIn, ApiKeyList, ApiKeyOut
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.wire import COMMON_ERRORS, DEFAULT_LIMIT, Cursor, Limit, api_router

router = api_router(tags=["api keys"], responses=COMMON_ERRORS)



@router.get("/projects/{project_id}/api-keys", summary="List the project's API keys")
def list_keys(
    access: ProjectMemberSignedIn, db: SessionDep, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> ApiKeyList:
    items, next_cursor = service.list_keys(db, access.project_id, limit=limit, cursor=cursor)
    return ApiKeyList(items=[ApiKeyOut.model_validate(k) for k in items], next_cursor=next_cursor)


@router.post("/projects/{project_id}/api-keys", status_code=201, summary="Create an API key")
def create_key(body: ApiKeyIn, access: ProjectAdminSignedIn, db: SessionDep) -> ApiKeyCreated:
    forbid_impersonation(access.principal, "Creating an API key")
    assert access.principal.user_id is not None
    spec = service.NewKey(
        type=body.type,
        name=body.name,
        access=body.access,
        index_id=body.index_id,
        allowed_origins=body.allowed_origins,
        expires_at=body.expires_at,
    )
    key, raw = service.create_key(db, access.project_id, access.principal.user_id, spec)
    return ApiKeyCreated(**dict(ApiKeyOut.model_validate(key)), key=raw)


@router.delete(
    "/projects/{project_id}/api-keys/{key_id}", status_code=204, response_class=Response, summary="Revoke an API key"
)
def delete_key(key_id: str, access: ProjectAdminSignedIn, db: SessionDep, runtime: RuntimeDep) -> Response:
    key = service.revoke_key(db, access.project_id, key_id)
    revoke_key(runtime, key.id)
    return Response(status_code=204)
