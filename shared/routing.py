"""Which shard owns a document.

The hash is part of the stored data (the documents table keeps ``shard_hash`` per document), so it
must never change: CRC-32 of the UTF-8 id, masked to 31 bits so it fits a signed 32-bit column.
"""

from __future__ import annotations

import zlib

__all__ = ["shard_hash", "shard_for"]


def shard_hash(doc_id: str) -> int:
    """Stable 31-bit hash of a document id (identical across processes, machines and versions)."""
    return zlib.crc32(str(doc_id).encode("utf-8")) & 0x7FFFFFFF


def shard_for(doc_id: str, shards: int) -> int:
    """The shard number (0-based) that owns ``doc_id`` in an index of ``shards`` shards."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    return shard_hash(doc_id) % shards
