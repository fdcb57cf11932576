from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db import Base, utcnow


class Document(Base):
    """The source of truth: one row per document id; deletes stay as tombstones (replayable)."""

    __tablename__ = "documents"
    # ix_documents_index_live: counting an index's live documents (see DocumentCount) reads the index, not the rows
    __table_args__ = (Index("ix_documents_index_seq", "index_id", "seq"),
                      Index("ix_documents_index_live", "index_id", "deleted"))

    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(512), primary_key=True)
    body: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    seq: Mapped[int] = mapped_column(BigInteger)
    shard_hash: Mapped[int] = mapped_column(Integer)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class DocumentCount(Base):
    """An index's live (not deleted) document rows, kept by every write of its rows in the same
    transaction (each takes the index row's lock first): a document task reads it instead of
    counting the rows, a cost per task that grew with the index (16 ms at 300k documents). An
    index without a row has never been written since the table exists: its rows are counted."""

    __tablename__ = "document_counts"

    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), primary_key=True)
    live: Mapped[int] = mapped_column(BigInteger, default=0)


class ReplaceSession(Base):
    __tablename__ = "replace_sessions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"), index=True)
    project_id: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default="open")
    mapping: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    document_count: Mapped[int] = mapped_column(Integer, default=0)
    task_id: Mapped[str | None] = mapped_column(String(40))
    # internal sessions (feed syncs) are not shown to tenants
    source: Mapped[str] = mapped_column(String(20), default="api")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_activity_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(default=utcnow)


class StagedDocument(Base):
    """Documents uploaded into a replace session; they carry their own sequence numbers."""

    __tablename__ = "staged_documents"
    __table_args__ = (Index("ix_staged_documents_session_seq", "session_id", "seq"),)

    session_id: Mapped[str] = mapped_column(ForeignKey("replace_sessions.id", ondelete="CASCADE"), primary_key=True)
    doc_id: Mapped[str] = mapped_column(String(512), primary_key=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    seq: Mapped[int] = mapped_column(BigInteger)
    shard_hash: Mapped[int] = mapped_column(Integer)


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("index_id", "route", "key", name="uq_idempotency_index_route_key"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    index_id: Mapped[str] = mapped_column(ForeignKey("indices.id", ondelete="CASCADE"))
    route: Mapped[str] = mapped_column(String(40))
    key: Mapped[str] = mapped_column(String(200))
    body_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    answer: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


__all__ = ["Document", "DocumentCount", "IdempotencyRecord", "ReplaceSession", "StagedDocument"]
