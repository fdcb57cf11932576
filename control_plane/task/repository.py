"""Task rows for operators (``shopsearch tasks``): by id alone, across projects."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.task.models import Task


def find_task_any_project(db: Session, task_id: str) -> Task | None:
    """The task with this id in whichever project holds it: an operator sees every project."""
    return db.scalar(select(Task).where(Task.id == task_id))
