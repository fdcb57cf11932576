from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow

# an INTEGER PRIMARY KEY is SQLite's auto-incrementing rowid; BIGSERIAL-like on PostgreSQL
_PK = BigInteger().with_variant(Integer(), "sqlite")


class Task(Base):
    """Asynchronous work on one index. ``pk`` orders the queue; ``id`` is the public ``taskId``."""

    __tablename__ = "tasks"
    __table_args__ = (
        Index("ix_tasks_status_index", "status", "index_id"),
        Index("ix_tasks_project_pk", "project_id", "pk"),
        Index("ix_tasks_index_pk", "index_id", "pk"),
    )

    pk: Mapped[int] = mapped_column(_PK, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    project_id: Mapped[str] = mapped_column(String(40))
    index_id: Mapped[str] = mapped_column(String(40))
    type: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default="enqueued")
    # the change sequence the shards must reach for the task to succeed
    seq: Mapped[int | None] = mapped_column(BigInteger)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(80))
    lease_expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class TaskRunnerBeat(Base):
    """A task runner alive at ``heartbeat_at`` (Unix seconds).

    Every runner (in-process in ``shopsearch serve`` or a ``shopsearch worker``) writes its row every
    few seconds while its claim loop runs and deletes it when it stops; the status route counts the
    rows heard from lately (:mod:`control_plane.task.heartbeats`). No tenant: runners are the
    operator's.
    """

    __tablename__ = "task_runners"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    heartbeat_at: Mapped[float] = mapped_column(Float)
