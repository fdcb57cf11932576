"""Every access label of spec §5 as a FastAPI dependency (``SignedIn``, ``OrgMember`` …
``ProjectWrite``, ``IndexRead`` …), deciding as :mod:`.tenancy` says.

As dependencies they answer 401/403/404 before the body is validated. The hot routes keep a fast
path: :func:`index_reader` decides a project's secret key without the database.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from control_plane.access.caller import Principal, principal_from_token
from control_plane.access.tenancy import (
    IndexAccess,
    OrgAccess,
    ProjectAccess,
    integration_access,
    org_access,
    project_access,
    reject_api_key,
    reject_public_key,
)
from control_plane.deps import RuntimeDep, SessionDep
from control_plane.runtime import Runtime
from control_plane.security import PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX
from shared.errors import forbidden, not_found, unauthenticated


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise unauthenticated("Missing Authorization header")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise unauthenticated("Authorization must be 'Bearer <token>'")
    return token


def authenticate(request: Request, runtime: RuntimeDep, db: SessionDep) -> Principal:
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    principal = principal_from_token(runtime, db, bearer_token(request))
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(authenticate)]


async def request_principal(runtime: Runtime, request: Request) -> Principal:
    """:func:`authenticate` for hot routes, without a request-scoped session: API keys come from
    the key cache on the event loop (as on the storefront), session tokens from the thread pool."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    token = bearer_token(request)
    if token.startswith((SECRET_KEY_PREFIX, PUBLIC_KEY_PREFIX)):
        principal = principal_from_token(runtime, None, token)
    else:
        principal = await run_in_threadpool(principal_from_token, runtime, None, token)
    request.state.principal = principal
    return principal


def _check_index_read(runtime: Runtime, principal: Principal, project_id: str, index_id: str) -> None:
    with runtime.sessions() as db:
        project_access(db, principal, project_id, write=False, path_ids={"index_id": index_id})


async def index_reader(project_id: str, index_id: str, request: Request, runtime: RuntimeDep) -> Principal:
    """The label "index read" (as ``IndexRead``) for hot routes: a secret key of the project is
    decided without the database (the route's resolution answers 404 for an unknown index);
    everyone else through :func:`project_access` in the thread pool.
    As a dependency it answers 401/403/404 before the body is validated, like the other labels."""
    principal = await request_principal(runtime, request)
    key = principal.key
    if principal.kind == "secret_key" and key is not None and key.project_id == project_id:
        if key.index_id not in (None, index_id):
            raise not_found("Index")
        return principal
    await run_in_threadpool(_check_index_read, runtime, principal, project_id, index_id)
    return principal


def require_signed_in(principal: CurrentPrincipal) -> Principal:
    reject_api_key(principal)
    return principal


SignedIn = Annotated[Principal, Depends(require_signed_in)]


def require_secret_key(principal: CurrentPrincipal) -> Principal:
    reject_public_key(principal)
    if principal.kind != "secret_key":
        raise forbidden("This route needs a secret API key")
    return principal


SecretKeyCaller = Annotated[Principal, Depends(require_secret_key)]


# --------------------------------------------------------------------------- organizations
def _org_dependency(min_role: str):  # type: ignore[no-untyped-def]
    def dependency(org_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep) -> OrgAccess:
        return org_access(db, principal, org_id, min_role, member_id=request.path_params.get("user_id"))

    return dependency


OrgMember = Annotated[OrgAccess, Depends(_org_dependency("member"))]
OrgAdmin = Annotated[OrgAccess, Depends(_org_dependency("admin"))]
OrgOwner = Annotated[OrgAccess, Depends(_org_dependency("owner"))]


# --------------------------------------------------------------------------- projects and indices
def _project_dependency(*, write: bool, signed_in_only: bool = False):  # type: ignore[no-untyped-def]
    def dependency(project_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep) -> ProjectAccess:
        return project_access(
            db, principal, project_id, write=write, signed_in_only=signed_in_only, path_ids=request.path_params
        )

    return dependency


def _index_dependency(*, write: bool):  # type: ignore[no-untyped-def]
    def dependency(
        project_id: str, index_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep
    ) -> IndexAccess:
        access = project_access(db, principal, project_id, write=write, path_ids=request.path_params)
        return IndexAccess(**vars(access), index_id=index_id)

    return dependency


def require_integration_key(
    project_id: str, index_id: str, request: Request, principal: CurrentPrincipal, db: SessionDep
) -> IndexAccess:
    """Connecting an integration (spec §7): see :func:`~.tenancy.integration_access`."""
    return integration_access(db, principal, project_id, index_id, request.path_params)


# "Project member or any secret key" / "Project admin or a full-access secret key"
ProjectRead = Annotated[ProjectAccess, Depends(_project_dependency(write=False))]
ProjectWrite = Annotated[ProjectAccess, Depends(_project_dependency(write=True))]
# "Project member / admin (signed in)": API keys cannot call these.
ProjectMemberSignedIn = Annotated[ProjectAccess, Depends(_project_dependency(write=False, signed_in_only=True))]
ProjectAdminSignedIn = Annotated[ProjectAccess, Depends(_project_dependency(write=True, signed_in_only=True))]
# The same labels on routes under an index: index-scoped keys get 404 for every other index.
IndexRead = Annotated[IndexAccess, Depends(_index_dependency(write=False))]
IndexWrite = Annotated[IndexAccess, Depends(_index_dependency(write=True))]
IntegrationKey = Annotated[IndexAccess, Depends(require_integration_key)]
