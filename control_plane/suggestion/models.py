from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow


class SuggestionConfig(Base):
    """An index's autocomplete settings, its public handle, and the last built suggestions.

    ``built`` is the rebuild's output (orjson: texts, scores, sources), loaded whole by every
    serving process; ``built_version`` moves with each rebuild so a process reloads only then."""

    __tablename__ = "suggestion_configs"

    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    suggest_key: Mapped[str] = mapped_column(String(64), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    built: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    built_version: Mapped[int] = mapped_column(Integer, default=0)
    built_count: Mapped[int] = mapped_column(Integer, default=0)
    # what the last build saw: the index's sequence and serving generation (catalog changes since -> rebuild)
    built_seq: Mapped[int] = mapped_column(BigInteger, default=-1)
    built_generation: Mapped[int] = mapped_column(Integer, default=-1)
    built_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class CustomSuggestion(Base):
    """A suggestion the merchant adds by hand; ``weight`` ranks it like a source's weight."""

    __tablename__ = "custom_suggestions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(String(200))
    weight: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
