"""Queries over organizations and memberships; every one is scoped to an organization or a user."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from control_plane.org.models import Membership, Organization
from control_plane.project.models import Project
from control_plane.user.models import User
from control_plane.wire import AnyRow, keyset_page


def list_user_orgs(
    db: Session, user_id: str, *, limit: int, cursor: str | None, only_org: str | None = None
) -> tuple[Sequence[AnyRow], str | None]:
    stmt = (
        select(Organization, Membership.role)
        .join(Membership, Membership.org_id == Organization.id)
        .where(Membership.user_id == user_id)
    )
    if only_org is not None:
        stmt = stmt.where(Membership.org_id == only_org)
    return keyset_page(
        db, stmt, Organization.created_at, Organization.id, limit=limit, cursor=cursor,
        key=lambda row: (row[0].created_at, row[0].id),
    )


def get_org(db: Session, org_id: str) -> Organization | None:
    return db.get(Organization, org_id)


def get_membership(db: Session, org_id: str, user_id: str) -> Membership | None:
    return db.get(Membership, (org_id, user_id))


def get_member_row(db: Session, org_id: str, user_id: str) -> AnyRow | None:
    return db.execute(
        select(Membership, User)
        .join(User, User.id == Membership.user_id)
        .where(Membership.org_id == org_id, Membership.user_id == user_id)
    ).first()


def list_members(
    db: Session, org_id: str, *, limit: int, cursor: str | None
) -> tuple[Sequence[AnyRow], str | None]:
    stmt = select(Membership, User).join(User, User.id == Membership.user_id).where(Membership.org_id == org_id)
    return keyset_page(
        db, stmt, Membership.created_at, Membership.user_id, limit=limit, cursor=cursor,
        key=lambda row: (row[0].created_at, row[0].user_id),
    )


def owner_ids_locked(db: Session, org_id: str) -> list[str]:
    """The organization's owners, row-locked on PostgreSQL so two changes can't remove the last one."""
    stmt = select(Membership.user_id).where(Membership.org_id == org_id, Membership.role == "owner").with_for_update()
    return list(db.scalars(stmt).all())


def plan_of_project(db: Session, project_id: str) -> str | None:
    """The plan of the organization that holds the project."""
    return db.scalar(
        select(Organization.plan).join(Project, Project.org_id == Organization.id).where(Project.id == project_id)
    )


def find_user_by_email(db: Session, email: str) -> User | None:
    return db.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))


def all_orgs(db: Session) -> Sequence[Organization]:
    """Every organization (operator CLI only)."""
    return db.scalars(select(Organization).order_by(Organization.created_at, Organization.id)).all()


def member_role(db: Session, org_id: str, user_id: str) -> str | None:
    """The user's role in the organization, or None when not a member."""
    return db.scalar(select(Membership.role).where(Membership.org_id == org_id, Membership.user_id == user_id))


def first_owned_org(db: Session, user_id: str) -> str | None:
    """The id of the first organization the user owns, or None."""
    return db.scalar(select(Membership.org_id).where(Membership.user_id == user_id, Membership.role == "owner")
                     .order_by(Membership.created_at).limit(1))
