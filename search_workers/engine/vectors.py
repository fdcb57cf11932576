"""One vector field of a shard: its rows (float32, unit length, so the cosine is a dot product), the
mask of slots holding a vector, and, past :data:`ANN_MIN_ROWS` vectors, an inverted-file index over
them (faiss ``IndexIVFScalarQuantizer``, half-precision rows) that compares a query with an eighth
of the rows instead of all.

**Where the line is.** Comparing every row costs a matrix-vector product and a partition: ~1.4 ms
per 50k rows of 128 dimensions on this machine, twice a keyword search of the same shard. The
inverted file (:data:`LISTS` k-means lists, :data:`PROBES` probed, filters applied inside the
search as a bitmap) answers in ~0.11 ms with 94.6 % of the exact 20 nearest (at least 90 % for
nine queries in ten) on a 50k-row shard of the benchmark catalog; below the line, and for filters
leaving at most :data:`EXACT_WITHIN` documents, every eligible row is compared.

**Why not a graph.** An HNSW graph (usearch, measured first) found 70-94 % of the exact 20 nearest
depending on its settings, took 100-200 µs per added vector, and on some queries answered from the
wrong region altogether (a cosine 0.3 below the exact answer's): the catalog's vectors crowd in
one direction (a random pair's cosine is 0.55) and in clusters of near-copies, which greedy graph
walks handle badly and k-means lists well. The lists hold the rows minus their mean at training
time, which spreads them without changing any query's order (``q . (d - m)`` is ``q . d`` less a
constant per query).

**Kept in step with the slots.** New rows join the lists and removed slots leave them once per
batch (``finalize``; meanwhile a search only takes live slots); a compaction re-adds the kept rows
under their new slots (no retraining). The index is saved in the memory snapshot as faiss's own
serialization and is trained again when a shard is rebuilt from its stored documents.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

#: vectors in a shard from which its nearest documents come from the inverted file
ANN_MIN_ROWS = 20_000
#: a filtered search compares every row that passes the filters when they are at most this many
EXACT_WITHIN = 10_000
#: k-means lists of the inverted file (trained on at least 39 rows each: ANN_MIN_ROWS), and lists
#: probed per search (an eighth of the rows)
LISTS = 512
PROBES = 64

faiss.omp_set_num_threads(1)  # a search uses its own thread: the serving process runs many at once


def _trained(rows: np.ndarray) -> tuple[faiss.IndexIVFScalarQuantizer, np.ndarray]:
    """An inverted file trained on ``rows`` (and the mean it subtracts), still empty; it keeps each
    row in half precision, whole (not as its residual from its list's centre). Measured on the
    100k-product benchmark (50k rows a shard, 48 lists probed): 130 us a search and 93 % of the
    exact 20 nearest, where 8-bit codes of the residuals took 200 us for 91 % (a distance table
    per list probed) and full-precision rows 208 us for 93 %."""
    mean = rows.mean(axis=0).astype(np.float32)
    dims = rows.shape[1]
    ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dims), dims, LISTS, faiss.ScalarQuantizer.QT_fp16,
                                        faiss.METRIC_INNER_PRODUCT, False)
    sample = rows[np.random.default_rng(0).permutation(len(rows))[: LISTS * 64]]
    ivf.train(np.ascontiguousarray(sample - mean))
    return ivf, mean


class VectorColumn:
    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.rows = np.zeros((0, dims), np.float32)
        self.has = np.zeros(0, bool)
        self.count = 0  # slots holding a vector (deletes clear ``has``)
        self.ann: faiss.IndexIVFScalarQuantizer | None = None
        self.mean = np.zeros(dims, np.float32)  # what the inverted file's rows have subtracted
        self._new: list[np.ndarray] = []  # slots written since the last finalize
        self._gone: list[int] = []  # slots deleted since the last finalize

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
            self._gone.append(slot)

    def finalize(self) -> None:
        """The batch's rows into the inverted file, its deleted slots out (trained once the field
        holds :data:`ANN_MIN_ROWS` vectors)."""
        new = np.concatenate(self._new).astype(np.int64) if self._new else np.zeros(0, np.int64)
        gone, self._new, self._gone = self._gone, [], []
        if self.ann is None:
            if self.count >= ANN_MIN_ROWS:
                self.ann, self.mean = _trained(self.rows[self.has])
                self._index(np.flatnonzero(self.has))
            return
        if gone:
            self.ann.remove_ids(faiss.IDSelectorBatch(np.asarray(gone, dtype=np.int64)))
        self._index(new[self.has[new]])  # written then deleted within the batch: never listed

    def _index(self, slots: np.ndarray) -> None:
        if len(slots) and self.ann is not None:
            self.ann.add_with_ids(np.ascontiguousarray(self.rows[slots] - self.mean), slots.astype(np.int64))

    def compact(self, keep_idx: np.ndarray, m: int) -> None:
        """Slots ``keep_idx`` become ``0 .. m-1`` (order kept); the inverted file lists them anew."""
        rows = np.zeros_like(self.rows)
        rows[:m] = self.rows[keep_idx]
        has = np.zeros_like(self.has)
        has[:m] = self.has[keep_idx]
        self.rows, self.has = rows, has
        self._new, self._gone = [], []
        if self.ann is not None:
            self.ann.reset()  # the lists' training stays
            self._index(np.flatnonzero(self.has))

    # -- reads -----------------------------------------------------------------------------
    def nearest(self, qv: np.ndarray, live: np.ndarray, base: np.ndarray | None, depth: int) -> np.ndarray:
        """The ``depth`` live slots nearest ``qv`` among those within ``base`` (None: all), in slot order."""
        n = len(live)
        if self.ann is not None and base is None:  # the lists hold exactly the live slots with a vector
            found = self._listed(qv, min(depth, self.count), faiss.SearchParametersIVF(nprobe=PROBES))  # type: ignore[call-arg]
            if found is not None:
                return found
        ok = live & self.has[:n]
        if base is not None:
            ok &= base[:n]
        count = int(np.count_nonzero(ok))
        if self.ann is not None and base is not None and count > EXACT_WITHIN:
            bitmap = np.packbits(ok, bitorder="little")  # live, with a vector, within the filters
            selected = faiss.SearchParametersIVF(nprobe=PROBES, sel=faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap)))  # type: ignore[call-arg]
            found = self._listed(qv, min(depth, count), selected)
            if found is not None:
                return found
        return self._exact(np.flatnonzero(ok), qv, n, depth)

    def _listed(self, qv: np.ndarray, want: int, params: Any) -> np.ndarray | None:
        """The inverted file's ``want`` nearest, in slot order; None when the probed lists hold
        fewer (the caller compares every eligible row)."""
        assert self.ann is not None
        _, ids = self.ann.search(qv[None, :].astype(np.float32), want, params=params)
        found = ids[0][ids[0] >= 0]
        return np.sort(found) if len(found) >= want else None

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
        listed = self.ann.ntotal * (2 * self.dims + 8) if self.ann is not None else 0
        return self.rows.nbytes + self.has.nbytes + listed

    # -- the memory snapshot ---------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state["ann"] = None if self.ann is None else faiss.serialize_index(self.ann)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        blob = state.pop("ann")
        vars(self).update(state)
        self.ann = None if blob is None else faiss.deserialize_index(blob)  # type: ignore[assignment]


def _top(slots: np.ndarray, sims: np.ndarray, depth: int) -> np.ndarray:
    if len(slots) > depth:
        slots = slots[np.argpartition(-sims, depth - 1)[:depth]]
        slots.sort()
    return slots
