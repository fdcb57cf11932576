"""One vector field of a shard: its rows (float32, unit length, so the cosine is a dot product), the
mask of slots holding a vector, and, past :data:`ANN_MIN_ROWS` vectors, an HNSW graph over them
(``usearch``, half-precision) that finds the nearest ones without reading every row.

**Where the line is.** Comparing every row costs one matrix-vector product: ~1.2 ms per 50k rows
of 128 dimensions on this machine, more than a keyword search of the same shard. The graph answers
the 100 nearest in ~0.1 ms, so a shard switches to it at :data:`ANN_MIN_ROWS` (the exact cost of
20k rows is about a keyword search's). Below the line, and for filters that leave few documents
(:data:`EXACT_WITHIN`), the answer is exact.

**Kept in step with the slots.** New rows join the graph in one batch per ``finalize``; a deleted
or replaced slot leaves it at once (a search never sees a dead slot through the graph); a
compaction renames the kept slots. The graph is saved in the memory snapshot as usearch's own
serialization (it cannot be pickled) and is built again from the rows when a shard is rebuilt
from its stored documents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from usearch.index import Index, MetricKind

#: vectors in a shard from which its nearest documents come from the graph
ANN_MIN_ROWS = 20_000
#: a filtered search compares every row that passes the filters when they are at most this many
EXACT_WITHIN = 20_000
#: candidates the graph keeps while searching (usearch's expansion_search): recall over speed
EXPANSION = 160


def _graph(dims: int) -> Index:
    return Index(ndim=dims, metric=MetricKind.IP, dtype="f16", connectivity=16, expansion_add=96,
                 expansion_search=EXPANSION)


class VectorColumn:
    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.rows = np.zeros((0, dims), np.float32)
        self.has = np.zeros(0, bool)
        self.count = 0  # slots holding a vector (live or not: deletes clear ``has``)
        self.ann: Index | None = None
        self._new: list[np.ndarray] = []  # slots written since the last finalize

    # -- writes ----------------------------------------------------------------------------
    def grow(self, cap: int) -> None:
        rows = np.zeros((cap, self.dims), np.float32)
        rows[: len(self.rows)] = self.rows
        has = np.zeros(cap, bool)
        has[: len(self.has)] = self.has
        self.rows, self.has = rows, has

    def put(self, slots: np.ndarray, rows: np.ndarray) -> None:
        """Unit rows (a row of zeros: no vector) at new slots."""
        keep = rows.any(axis=1)
        slots, rows = slots[keep], rows[keep]
        self.rows[slots] = rows
        self.has[slots] = True
        self.count += len(slots)
        self._new.append(slots)

    def delete(self, slot: int) -> None:
        if slot < len(self.has) and self.has[slot]:
            self.has[slot] = False
            self.count -= 1
            if self.ann is not None:
                self.ann.remove(slot)

    def finalize(self) -> None:
        """The batch's rows into the graph (built once the field holds :data:`ANN_MIN_ROWS`)."""
        new = np.concatenate(self._new) if self._new else np.zeros(0, np.int64)
        self._new = []
        if self.ann is None:
            if self.count >= ANN_MIN_ROWS:
                slots = np.flatnonzero(self.has)
                self.ann = _graph(self.dims)
                self.ann.add(slots, self.rows[slots], threads=1)
            return
        new = new[self.has[new]]  # written then deleted within the batch: never in the graph
        if len(new):
            self.ann.add(new, self.rows[new], threads=1)

    def compact(self, keep_idx: np.ndarray, m: int) -> None:
        """Slots ``keep_idx`` become ``0 .. m-1`` (order kept)."""
        if self.ann is not None:
            moved = keep_idx[self.has[keep_idx]]
            renamed = np.searchsorted(keep_idx, moved)
            changed = moved != renamed
            if changed.any():
                self.ann.rename(moved[changed], renamed[changed])
        rows = np.zeros_like(self.rows)
        rows[:m] = self.rows[keep_idx]
        has = np.zeros_like(self.has)
        has[:m] = self.has[keep_idx]
        self.rows, self.has = rows, has

    # -- reads -----------------------------------------------------------------------------
    def nearest(self, qv: np.ndarray, live: np.ndarray, base: np.ndarray | None, depth: int) -> np.ndarray:
        """The ``depth`` live slots nearest ``qv`` among those within ``base`` (None: all), in slot order."""
        n = len(live)
        ok = live & self.has[:n]
        if base is not None:
            ok &= base[:n]
        eligible: np.ndarray | None = None
        if self.ann is not None:
            if base is not None:
                eligible = np.flatnonzero(ok)
                if len(eligible) <= EXACT_WITHIN:
                    return self._exact(eligible, qv, n, depth)
            share = 1.0 if eligible is None else max(len(eligible) / max(self.count, 1), 1e-6)
            want = min(self.count, int(depth / share * 1.5) + 1)
            found = self.ann.search(qv.astype(np.float16), want, threads=1).keys.astype(np.int64)
            found = found[(found >= 0) & (found < n)]
            found = found[ok[found]]
            if len(found) >= min(depth, int(np.count_nonzero(ok))):
                return np.sort(found[:depth])
        return self._exact(np.flatnonzero(ok) if eligible is None else eligible, qv, n, depth)

    def _exact(self, eligible: np.ndarray, qv: np.ndarray, n: int, depth: int) -> np.ndarray:
        """Every eligible row compared: gathered when they are few, else the whole column at once
        (gathering most of a column copies it)."""
        sims = self.rows[eligible] @ qv if len(eligible) * 4 < n else (self.rows[:n] @ qv)[eligible]
        return _top(eligible, sims, depth)

    def cosines(self, slots: np.ndarray, qv: np.ndarray) -> np.ndarray:
        """The cosine of ``slots`` with ``qv``, 0 where a slot holds no vector."""
        n = int(slots.max()) + 1 if len(slots) else 0
        sims = self.rows[slots] @ qv if len(slots) * 4 < n else (self.rows[:n] @ qv)[slots]
        return np.where(self.has[slots], np.maximum(sims, 0), 0).astype(np.float32)

    def memory_bytes(self) -> int:
        graph = int(self.ann.memory_usage) if self.ann is not None else 0
        return self.rows.nbytes + self.has.nbytes + graph

    # -- the memory snapshot ---------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state["ann"] = None if self.ann is None else bytes(self.ann.save() or b"")
        state["_new"] = []
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        blob = state.pop("ann")
        vars(self).update(state)
        self.ann = None
        if blob is not None:
            self.ann = _graph(self.dims)
            self.ann.load(bytearray(blob))


def _top(slots: np.ndarray, sims: np.ndarray, depth: int) -> np.ndarray:
    if len(slots) > depth:
        slots = slots[np.argpartition(-sims, depth - 1)[:depth]]
        slots.sort()
    return slots
