"""Projects of an organization. Services flush, never commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from control_plane.project import repository
from control_plane.project.models import Project
from shared.errors import conflict, not_found, validation
from shared.ids import new_id


def list_projects(db: Session, org_id: str, *, limit: int, cursor: str | None) -> tuple[list[Project], str | None]:
    rows, next_cursor = repository.list_projects(db, org_id, limit=limit, cursor=cursor)
    return [row[0] for row in rows], next_cursor


def create_project(db: Session, org_id: str, name: str) -> Project:
    name = name.strip()
    if not name or len(name) > 200:
        raise validation("A project name has 1 to 200 characters", [{"path": "name", "message": "1-200 characters"}])
    if repository.name_taken(db, org_id, name):
        raise conflict(f"A project named {name!r} already exists in this organization")
    project = Project(id=new_id("prj"), org_id=org_id, name=name)
    db.add(project)
    try:
        db.flush()
    except IntegrityError as exc:  # a concurrent create won the race; the request rolls back
        raise conflict(f"A project named {name!r} already exists in this organization") from exc
    return project


def get_project(db: Session, org_id: str, project_id: str) -> Project:
    project = repository.get_project(db, org_id, project_id)
    if project is None:
        raise not_found("Project")
    return project


def exists(db: Session, project_id: str) -> bool:
    """Whether the project exists, in any organization (operator commands)."""
    return repository.org_of(db, project_id) is not None


def projects_of(db: Session, org_id: str) -> Sequence[Project]:
    return repository.projects_of(db, org_id)
