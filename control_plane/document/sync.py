"""Pushing the documents table (or a replace session's staged documents) into shards, by sequence.

The one "catch-up" function serves every case: a task making search reflect its upload, a
restarted or empty replica being re-fed, and a new generation being built for a reindex or a
replace. Shards skip changes at or below their applied sequence, so a catch-up interrupted at any
point (a runner killed mid-task) is simply run again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from control_plane.document.models import Document, StagedDocument
from control_plane.index.shards import MARKER_ID, ShardBridge
from search_workers.host import HostError

log = logging.getLogger("shopsearch.tasks")

PAGE_ROWS = 5000


@dataclass
class Source:
    """Where the changes come from: the index's documents, or a replace session's staged documents."""

    index_id: str
    session_id: str | None = None

    def rows(self, db: Session, after: int, upto: int, limit: int) -> list[tuple[str, Any, int, int, bool]]:
        if self.session_id is None:
            d = Document
            query = (
                select(d.doc_id, d.body, d.seq, d.shard_hash, d.deleted)
                .where(d.index_id == self.index_id, d.seq > after, d.seq <= upto)
                .order_by(d.seq)
                .limit(limit)
            )
            return [(r[0], r[1], r[2], r[3], bool(r[4])) for r in db.execute(query)]
        s = StagedDocument
        staged = (
            select(s.doc_id, s.body, s.seq, s.shard_hash)
            .where(s.session_id == self.session_id, s.seq > after, s.seq <= upto)
            .order_by(s.seq)
            .limit(limit)
        )
        return [(r[0], r[1], r[2], r[3], False) for r in db.execute(staged)]


Checkpoint = Callable[[int, int], None]


def catch_up(
    sessions: sessionmaker[Session],
    bridge: ShardBridge,
    *,
    index_id: str,
    generation: int,
    shards: int,
    upto: int,
    flush_seq: int = 0,
    source: Source | None = None,
    checkpoint: Checkpoint | None = None,
    page_rows: int | None = None,
    rejected: list[dict[str, Any]] | None = None,
) -> dict[int, int]:
    """Bring every replica of every shard of ``generation`` to ``upto``; returns ``{shard: min seq}``.

    ``flush_seq``: shards behind it get a flush first (every document before it is gone).
    ``checkpoint(done_seq, upto)`` is called between pages (lease renewal, cancel, progress).
    ``rejected`` collects ``{id, seq, error}`` of documents the engine refused (see :func:`_apply`).
    """
    source = source or Source(index_id)
    page_rows = page_rows or PAGE_ROWS
    seqs = bridge.call("applied_seqs", index_id, generation)
    low: dict[int, int] = {int(s): max(0, min(v)) for s, v in seqs.items()}
    for s in range(shards):
        low.setdefault(s, 0)
    if source.session_id is None and flush_seq:
        flushes = {s: [{"seq": flush_seq, "op": "flush"}] for s, seq in low.items() if seq < flush_seq}
        if flushes:
            for s, result in bridge.apply_many(index_id, generation, flushes).items():
                low[s] = _min_seq(result)
    cursor = min(low.values()) if low else 0
    while cursor < upto:
        with sessions() as db:
            rows = source.rows(db, cursor, upto, page_rows)
        if not rows:
            break
        batches: dict[int, list[dict[str, Any]]] = {}
        for doc_id, body, seq, shard_hash, deleted in rows:
            shard_no = shard_hash % shards
            from_seq = low[shard_no]
            if seq <= from_seq:
                continue
            if deleted:
                if from_seq == 0:
                    continue  # an empty shard has nothing to delete
                batches.setdefault(shard_no, []).append({"seq": seq, "op": "delete", "id": doc_id})
            else:
                batches.setdefault(shard_no, []).append({"seq": seq, "op": "upsert", "id": doc_id, "doc": body})
        if batches:
            for s, result in _apply(bridge, index_id, generation, batches, rejected).items():
                low[s] = _min_seq(result)
        cursor = rows[-1][2]
        if checkpoint is not None:
            checkpoint(cursor, upto)
    behind = {s: [{"seq": upto, "op": "delete", "id": MARKER_ID}] for s, seq in low.items() if seq < upto}
    if behind:
        for s, result in bridge.apply_many(index_id, generation, behind).items():
            low[s] = _min_seq(result)
    return low


def _apply(
    bridge: ShardBridge, index_id: str, generation: int, batches: dict[int, list[dict[str, Any]]],
    rejected: list[dict[str, Any]] | None,
) -> dict[int, list[int]]:
    """``bridge.apply_many``; when a batch fails for another reason than an unreachable shard, it is
    applied again one change at a time, and a document the engine refuses is applied as a delete of
    its id at its sequence (reported in ``rejected``). One bad stored document then fails the task
    that wrote it, instead of every later write to the index (each re-feeds it from the database)."""
    try:
        return bridge.apply_many(index_id, generation, batches)
    except (HostError, TimeoutError):
        raise
    except Exception as first:  # noqa: BLE001 - any engine failure: find the document behind it
        results: dict[int, list[int]] = {}
        for s, changes in batches.items():
            for change in changes:
                try:
                    results[s] = bridge.apply_many(index_id, generation, {s: [change]})[s]
                except (HostError, TimeoutError):
                    raise
                except Exception as exc:
                    if change["op"] != "upsert":
                        raise first from exc
                    tombstone = {"seq": change["seq"], "op": "delete", "id": change["id"]}
                    results[s] = bridge.apply_many(index_id, generation, {s: [tombstone]})[s]
                    log.warning("document %r of %s (seq %s) cannot be indexed: %r", change["id"], index_id,
                                change["seq"], exc)
                    if rejected is not None:
                        rejected.append({"id": change["id"], "seq": change["seq"], "error": type(exc).__name__})
        return results


def _min_seq(result: list[int]) -> int:
    """The applied sequence of the slowest replica (an unreachable one reports -1)."""
    return min(result) if result else 0
