from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow


class Synonym(Base):
    """One synonym entry of an index: ``multiway`` (``terms`` all mean the same) or ``oneway``
    (``input`` also finds ``synonyms``, not the other way round)."""

    __tablename__ = "synonyms"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), index=True)
    type: Mapped[str] = mapped_column(String(10))
    terms: Mapped[list[str]] = mapped_column(JSON, default=list)
    input: Mapped[str | None] = mapped_column(String(200))
    synonyms: Mapped[list[str]] = mapped_column(JSON, default=list)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
