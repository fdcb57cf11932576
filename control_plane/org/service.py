"""Organizations, their plans and their members. Services flush, never commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from control_plane.org import repository
from control_plane.org.models import Membership, Organization
from control_plane.user.models import User
from shared.errors import conflict, forbidden, not_found, validation
from shared.ids import new_id
from shared.plans import DEFAULT_PLAN, PLAN_NAMES, is_plan

ROLES = ("owner", "admin", "member")


@dataclass(frozen=True)
class OrgView:
    id: str
    name: str
    plan: str
    role: str
    created_at: datetime


@dataclass(frozen=True)
class MemberView:
    user_id: str
    email: str
    name: str | None
    role: str
    created_at: datetime


def _org_view(org: Organization, role: str) -> OrgView:
    return OrgView(id=org.id, name=org.name, plan=org.plan, role=role, created_at=org.created_at)


def _member_view(membership: Membership, user: User) -> MemberView:
    return MemberView(
        user_id=user.id, email=user.email, name=user.name, role=membership.role, created_at=membership.created_at
    )


def create_organization(db: Session, name: str, owner_user_id: str, plan: str = DEFAULT_PLAN) -> Organization:
    """A new organization owned by ``owner_user_id`` (used by register and the operator CLI)."""
    if not is_plan(plan):
        raise validation(f"Unknown plan {plan!r}", [{"path": "plan", "message": f"one of {', '.join(PLAN_NAMES)}"}])
    org = Organization(id=new_id("org"), name=name, plan=plan)
    db.add(org)
    db.flush()
    db.add(Membership(org_id=org.id, user_id=owner_user_id, role="owner"))
    db.flush()
    return org


# --------------------------------------------------------------------------- organizations
def list_orgs(
    db: Session, user_id: str, *, limit: int, cursor: str | None, only_org: str | None = None
) -> tuple[list[OrgView], str | None]:
    """The user's organizations; ``only_org`` narrows an impersonation to the one it reaches."""
    rows, next_cursor = repository.list_user_orgs(db, user_id, limit=limit, cursor=cursor, only_org=only_org)
    return [_org_view(org, role) for org, role in rows], next_cursor


def get_org(db: Session, org_id: str, role: str) -> OrgView:
    org = repository.get_org(db, org_id)
    if org is None:
        raise not_found("Organization")
    return _org_view(org, role)


def first_owned_org(db: Session, user_id: str) -> str | None:
    """The id of the first organization the user owns (the demo's tenant), or None."""
    return repository.first_owned_org(db, user_id)


def change_plan(db: Session, org_id: str, role: str, plan: str) -> OrgView:
    if not is_plan(plan):
        raise validation(f"Unknown plan {plan!r}", [{"path": "plan", "message": f"one of {', '.join(PLAN_NAMES)}"}])
    org = repository.get_org(db, org_id)
    if org is None:
        raise not_found("Organization")
    org.plan = plan
    db.flush()
    return _org_view(org, role)


# --------------------------------------------------------------------------- members
def list_members(db: Session, org_id: str, *, limit: int, cursor: str | None) -> tuple[list[MemberView], str | None]:
    rows, next_cursor = repository.list_members(db, org_id, limit=limit, cursor=cursor)
    return [_member_view(m, u) for m, u in rows], next_cursor


def _check_grant(grantor_role: str, role: str) -> None:
    if role not in ROLES:
        raise validation(f"Unknown role {role!r}", [{"path": "role", "message": f"one of {', '.join(ROLES)}"}])
    if role == "owner" and grantor_role != "owner":
        raise forbidden("Only an owner can grant the owner role")


def add_member(db: Session, org_id: str, grantor_role: str, email: str, role: str) -> MemberView:
    _check_grant(grantor_role, role)
    user = repository.find_user_by_email(db, email)
    if user is None:
        raise not_found("User")
    if repository.get_membership(db, org_id, user.id) is not None:
        raise conflict("This user is already a member of the organization")
    membership = Membership(org_id=org_id, user_id=user.id, role=role)
    db.add(membership)
    db.flush()
    return _member_view(membership, user)


def change_member_role(db: Session, org_id: str, grantor_role: str, user_id: str, role: str) -> MemberView:
    _check_grant(grantor_role, role)
    row = repository.get_member_row(db, org_id, user_id)
    if row is None:
        raise not_found("Member")
    membership, user = row
    if membership.role == "owner" and role != "owner" and repository.owner_ids_locked(db, org_id) == [user_id]:
        raise conflict("The last owner of an organization can't be demoted")
    membership.role = role
    db.flush()
    return _member_view(membership, user)


def remove_member(db: Session, org_id: str, user_id: str) -> None:
    membership = repository.get_membership(db, org_id, user_id)
    if membership is None:
        raise not_found("Member")
    if membership.role == "owner" and repository.owner_ids_locked(db, org_id) == [user_id]:
        raise conflict("The last owner of an organization can't be removed")
    db.delete(membership)
    db.flush()


def members_of(db: Session, org_id: str) -> Sequence[MemberView]:
    """Every member (operator CLI)."""
    rows, _ = repository.list_members(db, org_id, limit=100_000, cursor=None)
    return [_member_view(m, u) for m, u in rows]
