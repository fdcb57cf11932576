"""The storefront's checks (spec 4.1): a public key from an allowed origin, or a secret key; a
signed-in session is refused (403, or 404 when the handle is not of one of its organizations).

The caller still checks that the handle (profile key, suggest key) belongs to the key's project
(:func:`~.tenancy.access_for_key_project`), answering 404 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request
from sqlalchemy.orm import Session

from control_plane.access.caller import Principal, principal_from_token
from control_plane.access.labels import bearer_token
from control_plane.access.registry import directory
from control_plane.origins import origin_allowed
from control_plane.runtime import Runtime
from shared.errors import ErrorCode, ServiceError, forbidden, not_found


def storefront_principal(runtime: Runtime, request: Request, db: Session | None = None) -> Principal:
    """A public key from an allowed origin, or a secret key (label of spec 4.1)."""
    principal = principal_from_token(runtime, db, bearer_token(request))
    if principal.kind == "user":
        handle = request.path_params.get("profile_key")
        if handle is None:
            raise forbidden("Storefront routes take an API key")
        refuse_session(runtime, db, principal, lambda session: directory().profile_project(session, handle),
                       "Search profile")
    if principal.kind == "public_key":
        assert principal.key is not None
        origin = request.headers.get("origin")
        if not origin or not origin_allowed(origin, principal.key.allowed_origins):
            raise ServiceError(ErrorCode.ORIGIN_NOT_ALLOWED, "This origin is not allowed for this public key")
    return principal


def refuse_session(runtime: Runtime, db: Session | None, principal: Principal,
                   handle_project: Callable[[Session], str | None], what: str) -> None:
    """A session never calls the storefront: 404 (``what`` not found) when the handle's project,
    as ``handle_project`` finds it, is not in one of the user's organizations, else 403.
    (Only this refusal reads the database; keys take the hot path.)"""
    if db is None:
        with runtime.sessions() as fresh:
            visible = _visible(fresh, principal, handle_project)
    else:
        visible = _visible(db, principal, handle_project)
    if not visible:
        raise not_found(what)
    raise forbidden("Storefront routes take an API key")


def _visible(db: Session, principal: Principal, handle_project: Callable[[Session], str | None]) -> bool:
    assert principal.user_id is not None
    project_id = handle_project(db)
    org_id = directory().project_org(db, project_id) if project_id is not None else None
    if org_id is None or (principal.org_scope is not None and org_id != principal.org_scope):
        return False
    return directory().member_role(db, org_id, principal.user_id) is not None
