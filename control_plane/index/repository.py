"""Index rows."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.index.models import Index


def all_indices(db: Session) -> list[Index]:
    """Every index of every tenant (operator and start-up work, never a request)."""
    return list(db.scalars(select(Index)))
