"""Feeding shards from change rows, by sequence: the one "catch-up" behind every write.

It serves every case: a task making search reflect its upload, a restarted or empty replica being
re-fed, and a new generation being built for a reindex or a replace. Shards skip changes at or below
their applied sequence, so a catch-up interrupted at any point (a runner killed mid-task) is simply
run again. The rows come from a :data:`RowSource` (the documents table, a replace session's staged
documents); this module knows no table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from search_workers.host import HostError
from shared.contract import Change

from .bridge import ShardBridge

log = logging.getLogger("shopsearch.tasks")

PAGE_ROWS = 5000
#: rounds of catching up when a replica fell behind during one (it restarted meanwhile)
ROUNDS = 3

ChangeRow = tuple[str, Any, int, int, bool]
"""``(doc_id, body, seq, shard_hash, deleted)``."""
RowSource = Callable[[int, int, int], list[ChangeRow]]
"""``rows(after, upto, limit)``: the changes with ``after < seq <= upto`` in sequence order."""
Checkpoint = Callable[[int, int], None]
"""``checkpoint(done_seq, upto)``, called between pages (lease renewal, cancel, progress)."""


class Feed(NamedTuple):
    """An index's changes as of one moment: its sequence and flush sequence, and the rows up to
    them, all read in one snapshot of the database.

    A catch-up of a replica that may lack documents (opened empty, built up to an earlier sequence,
    or missing one deleted and added again) needs that moment: a document rewritten between reading
    the sequence and reading the rows took a sequence past the one read, so a catch-up to it would
    call the replica complete without the document (a search short of it until the next catch-up)."""

    seq: int
    flush_seq: int
    rows: RowSource


def catch_up(
    bridge: ShardBridge,
    rows: RowSource,
    *,
    index_id: str,
    generation: int,
    shards: int,
    upto: int,
    flush_seq: int = 0,
    checkpoint: Checkpoint | None = None,
    page_rows: int | None = None,
    rejected: list[dict[str, Any]] | None = None,
) -> dict[int, int]:
    """Bring every replica of every shard of ``generation`` to ``upto``; returns ``{shard: min seq}``
    (below ``upto`` for a shard with a replica that stayed unreachable: the caller retries later).

    ``flush_seq``: shards behind it get a flush first (every document before it is gone).
    ``rejected`` collects ``{id, seq, error}`` of documents the engine refused (see :func:`_apply`).
    """
    low: dict[int, int] = {}
    for _ in range(ROUNDS):
        low, fell_behind = _round(bridge, rows, index_id, generation, shards, upto, flush_seq, checkpoint,
                                  page_rows or PAGE_ROWS, rejected)
        if not fell_behind:
            break
        log.info("a replica of %s/g%s fell behind while being fed; feeding it again", index_id, generation)
    return low


def _round(
    bridge: ShardBridge, rows: RowSource, index_id: str, generation: int, shards: int, upto: int, flush_seq: int,
    checkpoint: Checkpoint | None, page_rows: int, rejected: list[dict[str, Any]] | None,
) -> tuple[dict[int, int], bool]:
    """One pass from the slowest replica's sequence to ``upto``. A shard whose replica reports less
    than a batch asked for (unreachable: ``-1``; restarted: its own, lower, sequence) gets nothing
    more in this pass, not even the final ``advance``: that would hide the gap. Returns the lowest
    sequence per shard and whether a reachable replica fell behind (worth another pass)."""
    seqs = bridge.applied_seqs(index_id, generation)
    low = {s: max(0, min(seqs.get(s) or [0])) for s in range(shards)}
    holds_any = {s: max(seqs.get(s) or [0]) > 0 for s in range(shards)}
    stopped: dict[int, int] = {}

    def feed(batches: dict[int, list[Change]], apply: Callable[..., dict[int, list[int]]]) -> None:
        batches = {s: b for s, b in batches.items() if b and s not in stopped}
        if not batches:
            return
        for s, result in apply(bridge, index_id, generation, batches, dict(low), rejected).items():
            reached = min(result)
            if reached < batches[s][-1].seq:
                stopped[s] = reached
            else:
                low[s] = reached

    if flush_seq:
        feed({s: [Change(seq=flush_seq, op="flush")] for s, seq in low.items() if seq < flush_seq}, _apply_plain)
    cursor = min(low.values()) if low else 0
    while cursor < upto:
        page = rows(cursor, upto, page_rows)
        if not page:
            break
        batches: dict[int, list[Change]] = {}
        for doc_id, body, seq, shard_hash, deleted in page:
            shard_no = shard_hash % shards
            if seq <= low[shard_no]:
                continue
            if deleted:
                if not holds_any[shard_no]:
                    continue  # an empty shard has nothing to delete
                batches.setdefault(shard_no, []).append(Change(seq=seq, op="delete", id=doc_id))
            else:
                batches.setdefault(shard_no, []).append(Change(seq=seq, op="upsert", id=doc_id, doc=body))
        feed(batches, _apply)
        cursor = page[-1][2]
        if checkpoint is not None:
            checkpoint(cursor, upto)
    feed({s: [Change(seq=upto, op="advance")] for s, seq in low.items() if seq < upto}, _apply_plain)
    low.update(stopped)
    return low, any(seq >= 0 for seq in stopped.values())


def _apply_plain(bridge: ShardBridge, index_id: str, generation: int, batches: dict[int, list[Change]],
                 after: dict[int, int], _rejected: list[dict[str, Any]] | None) -> dict[int, list[int]]:
    return bridge.apply(index_id, generation, batches, after)


def _apply(bridge: ShardBridge, index_id: str, generation: int, batches: dict[int, list[Change]],
           after: dict[int, int], rejected: list[dict[str, Any]] | None) -> dict[int, list[int]]:
    """``bridge.apply``; when a batch fails for another reason than an unreachable shard, it is
    applied again one change at a time, and a document the engine refuses is applied as a delete of
    its id at its sequence (reported in ``rejected``). One bad stored document then fails the task
    that wrote it, instead of every later write to the index (each re-feeds it from the database)."""
    try:
        return bridge.apply(index_id, generation, batches, after)
    except (HostError, TimeoutError):
        raise
    except Exception as first:  # noqa: BLE001 - any engine failure: find the document behind it
        results: dict[int, list[int]] = {}
        for s, changes in batches.items():
            for change in changes:
                try:
                    results[s] = bridge.apply(index_id, generation, {s: [change]}, after)[s]
                except (HostError, TimeoutError):
                    raise
                except Exception as exc:
                    if change.op != "upsert":
                        raise first from exc
                    tombstone = Change(seq=change.seq, op="delete", id=change.id)
                    results[s] = bridge.apply(index_id, generation, {s: [tombstone]}, after)[s]
                    log.warning("document %r of %s (seq %s) cannot be indexed: %r", change.id, index_id,
                                change.seq, exc)
                    if rejected is not None:
                        rejected.append({"id": change.id, "seq": change.seq, "error": type(exc).__name__})
        return results
