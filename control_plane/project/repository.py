"""Queries over projects; every one is scoped to an organization."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from control_plane.project.models import Project
from control_plane.wire import AnyRow, keyset_page


def list_projects(
    db: Session, org_id: str, *, limit: int, cursor: str | None
) -> tuple[Sequence[AnyRow], str | None]:
    stmt = select(Project).where(Project.org_id == org_id)
    return keyset_page(
        db, stmt, Project.created_at, Project.id, limit=limit, cursor=cursor,
        key=lambda row: (row[0].created_at, row[0].id),
    )


def get_project(db: Session, org_id: str, project_id: str) -> Project | None:
    return db.scalar(select(Project).where(Project.id == project_id, Project.org_id == org_id))


def name_taken(db: Session, org_id: str, name: str) -> bool:
    return (
        db.scalar(select(func.count()).select_from(Project).where(Project.org_id == org_id, Project.name == name))
        or 0
    ) > 0


def projects_of(db: Session, org_id: str) -> Sequence[Project]:
    return db.scalars(select(Project).where(Project.org_id == org_id).order_by(Project.created_at, Project.id)).all()


def every_project(db: Session, org_id: str | None = None) -> Sequence[Project]:
    """Operators: the projects of every organization (or of ``org_id``), oldest first."""
    stmt = select(Project).order_by(Project.created_at, Project.id)
    if org_id is not None:
        stmt = stmt.where(Project.org_id == org_id)
    return db.scalars(stmt).all()


def org_of(db: Session, project_id: str) -> str | None:
    """The organization holding the project, or None when there is no such project."""
    project = db.get(Project, project_id)
    return None if project is None else project.org_id
