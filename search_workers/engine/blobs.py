"""A shard's stored documents in memory, compressed with a dictionary trained on the shard's own.

Every hit's document is read from memory (the followers' replicas have no files to read from), so
a shard keeps each document's JSON. A product's JSON is short (~600 bytes in the Best Buy catalog)
and much of it repeats from one product to the next (field names, brands, category paths): zlib
alone keeps 65 % of it, zstd with a 64 KiB dictionary trained on the shard's first documents keeps
28-31 % (measured on 50,000 products, docs/benchmarks.md), for ~2.5 us to compress and ~1 us to
decompress a document: a page of 20 hits costs ~25 us more. zstd's output, like orjson's, is a
buffer sized for the worst case: kept as it is, 50,000 compressed documents held more memory than
the raw ones (34 MiB against 30), so each is copied to its exact length (``exact_bytes``).

Until :data:`TRAIN_AT` documents have arrived they are kept as they are (a small shard gains
little); the dictionary is then trained once for the store's life (a generation: a reindex or a
rebuild trains a new one) and the documents held so far are compressed with it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import zstandard

from .values import exact_bytes

#: documents kept uncompressed before the dictionary is trained on them
TRAIN_AT = 2000
DICT_BYTES = 64 * 1024
LEVEL = 3


class BlobStore:
    """Documents by slot (``None``: deleted). ``get`` returns the document's bytes as added."""

    __slots__ = ("_blobs", "_dict", "_cctx", "_dctx", "_lock")

    def __init__(self) -> None:
        self._blobs: list[bytes | None] = []
        self._dict: zstandard.ZstdCompressionDict | None = None
        self._cctx: zstandard.ZstdCompressor | None = None
        self._dctx: zstandard.ZstdDecompressor | None = None
        # a zstd context serves one call at a time; searches decode pages while a writer adds
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._blobs)

    @property
    def compressed(self) -> bool:
        return self._dict is not None

    def append(self, blob: bytes) -> None:
        if self._cctx is not None:
            with self._lock:
                blob = self._cctx.compress(blob)
            self._blobs.append(exact_bytes(blob))
            return
        self._blobs.append(blob)
        if len(self._blobs) >= TRAIN_AT:
            self._train()

    def extend(self, blobs: Iterable[bytes]) -> None:
        for blob in blobs:
            self.append(blob)

    def get(self, slot: int) -> bytes | None:
        with self._lock:
            blob = self._blobs[slot]
            if blob is None or self._dctx is None:
                return blob
            return self._dctx.decompress(blob)

    def size(self, slot: int) -> int:
        """The document's length as added (0 when deleted), without decompressing it."""
        with self._lock:
            blob = self._blobs[slot]
            if blob is None:
                return 0
            return len(blob) if self._dctx is None else zstandard.frame_content_size(blob)

    def drop(self, slot: int) -> None:
        self._blobs[slot] = None

    def keep(self, slots: np.ndarray) -> None:
        """Keep only ``slots`` (ascending), renumbered from 0 (the index's compaction)."""
        blobs = self._blobs
        self._blobs = [blobs[i] for i in slots.tolist()]

    def memory_bytes(self) -> int:
        held = sum(len(b) + 33 for b in self._blobs if b is not None) + 8 * len(self._blobs)
        return held + (DICT_BYTES if self._dict is not None else 0)

    def _train(self) -> None:
        samples: list[bytes | bytearray | memoryview] = [b for b in self._blobs if b]
        try:
            trained = zstandard.train_dictionary(DICT_BYTES, samples, level=LEVEL)
        except zstandard.ZstdError:  # too few or too alike to learn from: later documents retry
            return
        with self._lock:
            self._use(trained)
            cctx = self._cctx
            assert cctx is not None
            self._blobs = [None if b is None else exact_bytes(cctx.compress(b)) for b in self._blobs]

    def _use(self, trained: zstandard.ZstdCompressionDict) -> None:
        """Compress and decompress with ``trained`` from now on (the lock held, or not yet shared)."""
        trained.precompute_compress(level=LEVEL)
        self._dict = trained
        self._cctx = zstandard.ZstdCompressor(level=LEVEL, dict_data=trained, write_checksum=False,
                                              write_content_size=True, write_dict_id=False)
        self._dctx = zstandard.ZstdDecompressor(dict_data=trained)

    # a snapshot (snapshot.py) pickles the blobs and the dictionary's bytes; contexts are rebuilt
    def __getstate__(self) -> dict[str, Any]:
        return {"blobs": self._blobs, "dict": None if self._dict is None else self._dict.as_bytes()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._blobs = state["blobs"]
        self._dict = self._cctx = self._dctx = None
        self._lock = threading.Lock()
        if state["dict"] is not None:
            self._use(zstandard.ZstdCompressionDict(state["dict"]))
