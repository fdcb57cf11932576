"""A shard's stored documents in memory, compressed with a dictionary trained on the shard's own.

Every hit's document is read from memory (the followers' replicas have no files to read from), so
a shard keeps each document's JSON. A product's JSON is short (~600 bytes in the Best Buy catalog)
and much of it repeats from one product to the next (field names, brands, category paths): zlib
alone keeps 65 % of it, zstd with a 64 KiB dictionary trained on the shard's first documents keeps
28-31 % (measured on 50,000 products, docs/benchmarks.md), for ~2.5 us to compress and ~1 us to
decompress a document: a page of 20 hits costs ~25 us more.

Until :data:`TRAIN_AT` documents have arrived they are kept as they are (a small shard gains
little); the dictionary is then trained once for the store's life (a generation: a reindex or a
rebuild trains a new one) and the documents held so far are compressed with it.

The documents lie end to end in one buffer (a ``bytearray``; offsets, lengths and lengths as added
in three arrays), not one ``bytes`` object each: 50,000 small objects cost 41 bytes of header each, and, allocated
among the objects of the generation a reindex replaces, kept that generation's memory pages from
being given back.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import zstandard

#: documents kept uncompressed before the dictionary is trained on them
TRAIN_AT = 2000
DICT_BYTES = 64 * 1024
LEVEL = 3
_GONE = -1  # the length of a deleted document


class BlobStore:
    """Documents by slot (``None``: deleted). ``get`` returns the document's bytes as added.

    One lock around every use of the buffer and the zstd contexts: a context serves one call at a
    time, and a buffer with a reader's view on it cannot grow. (Searches read under the shard's read
    lock, writers add under it; rewriting the shard's files reads without it.)"""

    __slots__ = ("_data", "_start", "_len", "_raw", "_dict", "_cctx", "_dctx", "_lock", "_train_at")

    def __init__(self) -> None:
        self._data = bytearray()
        self._start = array("q")
        self._len = array("i")
        self._raw = array("i")  # each document's length as added (0: deleted), for size()
        self._dict: zstandard.ZstdCompressionDict | None = None
        self._cctx: zstandard.ZstdCompressor | None = None
        self._dctx: zstandard.ZstdDecompressor | None = None
        self._lock = threading.Lock()
        self._train_at = 0  # after a training that failed: the count to try again at

    def __len__(self) -> int:
        return len(self._len)

    @property
    def compressed(self) -> bool:
        return self._dict is not None

    def append(self, blob: bytes) -> None:
        with self._lock:
            self._raw.append(len(blob))
            if self._cctx is not None:
                blob = self._cctx.compress(blob)
            self._start.append(len(self._data))
            self._len.append(len(blob))
            self._data += blob
            train = self._cctx is None and len(self._len) >= max(TRAIN_AT, self._train_at)
        if train:
            self._train()

    def extend(self, blobs: Iterable[bytes]) -> None:
        for blob in blobs:
            self.append(blob)

    def get(self, slot: int) -> bytes | None:
        with self._lock:
            n = self._len[slot]
            if n == _GONE:
                return None
            start = self._start[slot]
            with memoryview(self._data) as view:
                held = view[start:start + n]
                return held.tobytes() if self._dctx is None else self._dctx.decompress(held)

    def size(self, slot: int) -> int:
        """The document's length as added (0 when deleted), without decompressing it."""
        return self._raw[slot]

    def drop(self, slot: int) -> None:
        """Forget the document (its bytes stay in the buffer until :meth:`keep`)."""
        with self._lock:
            self._len[slot] = _GONE
            self._raw[slot] = 0

    def keep(self, slots: np.ndarray) -> None:
        """Keep only ``slots`` (ascending), renumbered from 0 (the index's compaction)."""
        with self._lock:
            data, start, length, raw = bytearray(), array("q"), array("i"), array("i")
            with memoryview(self._data) as view:
                for slot in slots.tolist():
                    n = self._len[slot]
                    start.append(len(data))
                    length.append(n)
                    raw.append(self._raw[slot])
                    if n != _GONE:
                        data += view[self._start[slot]:self._start[slot] + n]
            self._data, self._start, self._len, self._raw = data, start, length, raw

    def memory_bytes(self) -> int:
        held = len(self._data) + 16 * len(self._len)
        return held + (DICT_BYTES if self._dict is not None else 0)

    def _train(self) -> None:
        with self._lock:
            samples: list[bytes | bytearray | memoryview] = [
                bytes(self._data[s:s + n]) for s, n in zip(self._start, self._len, strict=True) if n > 0]
        try:
            trained = zstandard.train_dictionary(DICT_BYTES, samples, level=LEVEL)
        except zstandard.ZstdError:  # too little to learn from: tried again at twice the documents
            self._train_at = 2 * len(self._len)
            return
        with self._lock:
            self._use(trained)
            cctx = self._cctx
            assert cctx is not None
            data, start, length = bytearray(), array("q"), array("i")
            with memoryview(self._data) as view:
                for s, n in zip(self._start, self._len, strict=True):
                    start.append(len(data))
                    if n == _GONE:
                        length.append(_GONE)
                        continue
                    packed = cctx.compress(view[s:s + n])
                    length.append(len(packed))
                    data += packed
            self._data, self._start, self._len = data, start, length

    def _use(self, trained: zstandard.ZstdCompressionDict) -> None:
        """Compress and decompress with ``trained`` from now on (the lock held, or not yet shared)."""
        trained.precompute_compress(level=LEVEL)
        self._dict = trained
        self._cctx = zstandard.ZstdCompressor(level=LEVEL, dict_data=trained, write_checksum=False,
                                              write_content_size=True, write_dict_id=False)
        self._dctx = zstandard.ZstdDecompressor(dict_data=trained)

    # a snapshot (snapshot.py) pickles the buffer, its offsets and the dictionary's bytes; the
    # contexts are rebuilt
    def __getstate__(self) -> dict[str, Any]:
        return {"data": self._data, "start": self._start, "len": self._len, "raw": self._raw,
                "dict": None if self._dict is None else self._dict.as_bytes()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._data, self._start, self._len, self._raw = state["data"], state["start"], state["len"], state["raw"]
        self._dict = self._cctx = self._dctx = None
        self._lock = threading.Lock()
        self._train_at = 0
        if state["dict"] is not None:
            self._use(zstandard.ZstdCompressionDict(state["dict"]))
