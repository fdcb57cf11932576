"""Document rows: the source of truth the shards are fed from."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from control_plane.document.models import Document, StagedDocument

ChangeRow = tuple[str, Any, int, int, bool]
"""``(doc_id, body, seq, shard_hash, deleted)`` in sequence order."""


def change_rows(db: Session, index_id: str, after: int, upto: int, limit: int) -> list[ChangeRow]:
    """The index's documents and tombstones with ``after < seq <= upto``."""
    d = Document
    query = (
        select(d.doc_id, d.body, d.seq, d.shard_hash, d.deleted)
        .where(d.index_id == index_id, d.seq > after, d.seq <= upto)
        .order_by(d.seq)
        .limit(limit)
    )
    return [(r[0], r[1], r[2], r[3], bool(r[4])) for r in db.execute(query)]


def staged_change_rows(db: Session, session_id: str, after: int, upto: int, limit: int) -> list[ChangeRow]:
    """A replace session's staged documents with ``after < seq <= upto`` (never deletions)."""
    s = StagedDocument
    query = (
        select(s.doc_id, s.body, s.seq, s.shard_hash)
        .where(s.session_id == session_id, s.seq > after, s.seq <= upto)
        .order_by(s.seq)
        .limit(limit)
    )
    return [(r[0], r[1], r[2], r[3], False) for r in db.execute(query)]
