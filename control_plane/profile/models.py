from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow


class Profile(Base):
    """Saved search settings of an index; ``profile_key`` is the public storefront handle."""

    __tablename__ = "profiles"
    __table_args__ = (UniqueConstraint("index_id", "name", name="uq_profiles_index_name"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    profile_key: Mapped[str] = mapped_column(String(64), unique=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
