"""Work over a whole tenant — a user, the organization it owns, its projects, keys and indices:
operator work (``shopsearch tenants``, ``shopsearch index``, direct database access) and the plan
change, which every index of the organization follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from control_plane.api_key import service as key_service
from control_plane.auth import repository as auth_repo
from control_plane.db import isoformat, utcnow
from control_plane.email_address import normalize_email
from control_plane.index import repository as index_repo
from control_plane.index import service as index_service
from control_plane.org import repository as org_repo
from control_plane.org import service as org_service
from control_plane.org.service import OrgView
from control_plane.project import repository as project_repo
from control_plane.project import service as project_service
from control_plane.security import hash_password
from control_plane.task.models import Task
from shared.errors import conflict, not_found, validation

MIN_PASSWORD_LENGTH = 10


@dataclass(frozen=True)
class CreatedTenant:
    user_id: str
    email: str
    org_id: str
    project_id: str
    key_id: str | None = None
    key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "userId": self.user_id,
            "email": self.email,
            "orgId": self.org_id,
            "projectId": self.project_id,
        }
        if self.key_id is not None:
            out["keyId"] = self.key_id
            out["key"] = self.key
        return out


def create_tenant(
    db: Session,
    *,
    email: str,
    password: str,
    org_name: str,
    project_name: str,
    verified: bool = False,
    key_access: str | None = None,
) -> CreatedTenant:
    """A user owning a new organization with one project, and optionally a secret key."""
    try:
        email = normalize_email(email)
    except ValueError as exc:
        raise validation("Not an email address", [{"path": "email", "message": str(exc)}]) from exc
    if len(password) < MIN_PASSWORD_LENGTH:
        raise validation(
            f"Passwords have at least {MIN_PASSWORD_LENGTH} characters",
            [{"path": "password", "message": f"at least {MIN_PASSWORD_LENGTH} characters"}],
        )
    if not org_name.strip():
        raise validation("An organization needs a name", [{"path": "org", "message": "empty"}])
    if key_access not in (None, "read", "full"):
        raise validation("Key access is read or full", [{"path": "withKey", "message": "read or full"}])
    if auth_repo.get_user_by_email(db, email) is not None:
        raise conflict(f"An account with the email {email} already exists")
    try:
        user = auth_repo.add_user(db, email, hash_password(password), None)
    except IntegrityError as exc:
        raise conflict(f"An account with the email {email} already exists") from exc
    if verified:
        user.email_verified_at = utcnow()
    org = org_service.create_organization(db, org_name.strip(), user.id)
    project = project_service.create_project(db, org.id, project_name)
    if key_access is None:
        return CreatedTenant(user.id, email, org.id, project.id)
    key, raw = key_service.create_key_unchecked(
        db, project.id, key_service.NewKey(type="secret", name="operator key", access=key_access), created_by=user.id
    )
    return CreatedTenant(user.id, email, org.id, project.id, key.id, raw)


def change_plan(db: Session, org_id: str, role: str, plan: str) -> tuple[OrgView, list[str]]:
    """Change an organization's plan (``role``: the caller's in it); the org, and the ids of its
    indices: searches resolve their plan's quota once per index epoch, so the caller moves those
    epochs once the change is committed."""
    org = org_service.change_plan(db, org_id, role, plan)
    return org, index_repo.ids_in_org(db, org_id)


def list_tenants(db: Session) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for org in org_repo.all_orgs(db):
        members = org_service.members_of(db, org.id)
        out.append({
            "id": org.id,
            "name": org.name,
            "plan": org.plan,
            "owners": [m.email for m in members if m.role == "owner"],
            "memberCount": len(members),
            "projectCount": len(project_service.projects_of(db, org.id)),
            "createdAt": isoformat(org.created_at),
        })
    return out


def show_tenant(db: Session, org_id: str) -> dict[str, Any]:
    org = org_repo.get_org(db, org_id)
    if org is None:
        raise not_found("Organization")
    return {
        "id": org.id,
        "name": org.name,
        "plan": org.plan,
        "createdAt": isoformat(org.created_at),
        "members": [
            {"userId": m.user_id, "email": m.email, "name": m.name, "role": m.role, "createdAt": isoformat(m.created_at)}
            for m in org_service.members_of(db, org.id)
        ],
        "projects": [
            {
                "id": p.id,
                "name": p.name,
                "keyCount": key_service.count_live_keys(db, p.id),
                "createdAt": isoformat(p.created_at),
            }
            for p in project_service.projects_of(db, org.id)
        ],
    }


def reindex(db: Session, project_id: str, index_id: str) -> Task:
    """Enqueue a reindex of one of a tenant's indices; not found unless the index is in that project."""
    index = index_repo.get_index(db, project_id, index_id)
    if index is None:
        raise not_found(f"Index {index_id} in project {project_id}")
    return index_service.reindex(db, index)


def list_projects(db: Session, org_id: str | None = None) -> list[dict[str, Any]]:
    """Every project (or an organization's): the ids operator commands such as ``tasks list`` take."""
    if org_id is not None and org_repo.get_org(db, org_id) is None:
        raise not_found("Organization")
    return [{"id": p.id, "orgId": p.org_id, "name": p.name, "createdAt": isoformat(p.created_at)}
            for p in project_repo.every_project(db, org_id)]
