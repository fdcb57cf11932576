from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow
from shared.contract import ShardSpec


class Index(Base):
    """A search index. ``seq`` is the last change sequence handed out for its documents."""

    __tablename__ = "indices"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_indices_project_name"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    shards: Mapped[int] = mapped_column(Integer, default=1)
    replicas: Mapped[int] = mapped_column(Integer, default=1)
    language: Mapped[str] = mapped_column(String(8), default="en")
    # The current mapping (what uploads are validated against, what a rebuild uses) …
    mapping: Mapped[dict[str, Any]] = mapped_column(JSON)
    # … and the one the serving generation was built with.
    serving_mapping: Mapped[dict[str, Any]] = mapped_column(JSON)
    facets: Mapped[list[Any]] = mapped_column(JSON, default=list)
    integration: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    integration_key_id: Mapped[str | None] = mapped_column(String(40))
    feed: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    serving_generation: Mapped[int] = mapped_column(Integer, default=1)
    building_generation: Mapped[int | None] = mapped_column(Integer)
    # What the building generation is built from: {"upto", "mapping", "sessionId"} (see start_build).
    build: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default="ready")
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    # The sequence of the last flush: shards behind it are wiped before catching up.
    flush_seq: Mapped[int] = mapped_column(BigInteger, default=0)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    # Moves with every synonym or rule change: serving processes recompile them only then.
    merch_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    def shard_spec(self, generation: int | None = None, mapping: dict[str, Any] | None = None) -> ShardSpec:
        """A generation of this index's shards (default: the serving one) as the shard door opens it."""
        if generation is None:
            generation, mapping = self.serving_generation, self.serving_mapping
        return ShardSpec(index_id=self.id, generation=generation, shards=self.shards, replicas=self.replicas,
                         mapping=mapping if mapping is not None else self.mapping, language=self.language)
