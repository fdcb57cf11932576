from __future__ import annotations

from sqlalchemy import Float, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base


class TaskRunnerBeat(Base):
    """A task runner alive at ``heartbeat_at`` (Unix seconds).

    Every runner (in-process in ``shopsearch serve`` or a ``shopsearch worker``) writes its row every
    few seconds while its claim loop runs and deletes it when it stops; the status route counts the
    rows heard from lately (:mod:`control_plane.status.heartbeats`). No tenant: runners are the
    operator's.
    """

    __tablename__ = "task_runners"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    heartbeat_at: Mapped[float] = mapped_column(Float)
