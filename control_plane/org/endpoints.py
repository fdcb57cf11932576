"""Organizations and members (spec 4.11, CONTRACT §2); the plan change is the tenant's
(``tenants.endpoints``), since every index of the organization follows it."""

from __future__ import annotations

from fastapi import Response

from control_plane.access.labels import OrgMember, OrgOwner, SignedIn
from control_plane.access.tenancy import forbid_impersonation
from control_plane.deps import SessionDep
from control_plane.org import service
from control_plane.org.schemas import MemberIn, MemberList, MemberOut, MemberRoleIn, OrgList, OrgOut
from control_plane.wire import COMMON_ERRORS, DEFAULT_LIMIT, Cursor, Limit, api_router, error_responses

router = api_router(tags=["organizations"], responses=COMMON_ERRORS)



@router.get("/orgs", summary="List the caller's organizations")
def list_orgs(principal: SignedIn, db: SessionDep, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> OrgList:
    assert principal.user_id is not None
    items, next_cursor = service.list_orgs(db, principal.user_id, limit=limit, cursor=cursor,
                                           only_org=principal.org_scope)
    return OrgList(items=[OrgOut.model_validate(item) for item in items], next_cursor=next_cursor)


@router.get("/orgs/{org_id}", summary="Get an organization")
def get_org(access: OrgMember, db: SessionDep) -> OrgOut:
    return OrgOut.model_validate(service.get_org(db, access.org_id, access.role))


@router.get("/orgs/{org_id}/members", summary="List members")
def list_members(access: OrgMember, db: SessionDep, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> MemberList:
    items, next_cursor = service.list_members(db, access.org_id, limit=limit, cursor=cursor)
    return MemberList(items=[MemberOut.model_validate(item) for item in items], next_cursor=next_cursor)


@router.post("/orgs/{org_id}/members", status_code=201, responses=error_responses(409), summary="Add a registered user as a member")
def add_member(body: MemberIn, access: OrgOwner, db: SessionDep) -> MemberOut:
    forbid_impersonation(access.principal, "Adding a member")
    return MemberOut.model_validate(service.add_member(db, access.org_id, access.role, str(body.email), body.role))


@router.put("/orgs/{org_id}/members/{user_id}", responses=error_responses(409), summary="Change a member's role")
def change_member(user_id: str, body: MemberRoleIn, access: OrgOwner, db: SessionDep) -> MemberOut:
    forbid_impersonation(access.principal, "Changing a member")
    return MemberOut.model_validate(service.change_member_role(db, access.org_id, access.role, user_id, body.role))


@router.delete(
    "/orgs/{org_id}/members/{user_id}", status_code=204, responses=error_responses(409), response_class=Response, summary="Remove a member"
)
def remove_member(user_id: str, access: OrgOwner, db: SessionDep) -> Response:
    forbid_impersonation(access.principal, "Removing a member")
    service.remove_member(db, access.org_id, user_id)
    return Response(status_code=204)
