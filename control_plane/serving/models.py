from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base


class ServingProcess(Base):
    """A serving process that holds replicas of its own, and what they hold.

    ``replicas`` maps index id -> {generation (as a string): applied sequence}: every shard of that
    generation in this process holds every change up to the sequence. ``heartbeat_at`` (Unix seconds)
    is written by the process's follower loop; a row older than the lease belongs to a process that
    is gone or stalled, which then re-syncs before it answers again.
    """

    __tablename__ = "serving_processes"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    heartbeat_at: Mapped[float] = mapped_column(Float)
    replicas: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
