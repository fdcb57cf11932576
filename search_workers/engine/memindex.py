"""In-memory columnar structures of one shard (what every query runs on).

Slots: each document version gets the next *slot* (an int32 row number).  Slot order is the
engine's internal document order (tie-breaker for stable paging).  A replaced or deleted
document's slot is just marked dead in ``live``; postings and value pairs keep the dead slot and
every query masks with ``live``.  When more than 30 % of the slots are dead, :meth:`compact`
renumbers the live slots (order preserved) with vectorised numpy per term - no re-analysis.

Per searchable field: ``postings[field][term] -> Postings`` (int32 slots, uint8 term
frequencies), ``lengths[field]`` (float32 per slot, BM25 length normalisation) and the sum of live
lengths.  A batch's new postings go to three flat arrays (term number in the batch, slot, tf); once
per ``apply`` they are grouped by term (one stable numpy sort) and appended to the touched terms'
arrays, which keep spare capacity (x1.5 growth): a commit costs O(changed documents + touched
terms), not a copy of every touched posting list (a common term's list is as long as the shard,
so copying it per batch made the cost per document grow with the shard).  Keyword value pairs
grow the same way.

Value columns (filters, facets, sort): keyword / keyword[] as ordinal *pairs* (slot, ordinal)
plus the first ordinal per slot for sorting; integer / float / date as float64 (NaN = missing);
boolean as int8 (-1 = missing); geopoint as two float64 columns (latitude, longitude) in ``num``.

Vector columns: one float32 matrix per vector field (rows of unit length, cosine = dot product) and
a mask of the rows that hold a vector; a built-in vector's texts are embedded in one batch per
:meth:`MemIndex.finalize` (``embedding.py``).

Term dictionary (for typo and prefix expansion, never scanning documents): a sorted list of all
terms (``bisect.insort`` for new terms), a deletion index (term and its one-character deletions
-> terms) and a global document frequency per term.
"""

from __future__ import annotations

import bisect
from array import array
from collections import OrderedDict, _count_elements  # type: ignore[attr-defined]  # Counter's C loop, without Counter's per-call overhead
from itertools import chain
from typing import Any

import numpy as np
import orjson

from shared.semantic import embed_text

from .analysis import CHUNK_RE, TextAnalyzer, get_analyzer
from .blobs import BlobStore
from .embedding import embed
from .geo import lat_key, lng_key, point_value
from .mapping import FieldSpec, analysis_of
from .values import exact_bytes, keyword_values, text_of, to_bool, to_number
from .vectors import VectorColumn


class Postings:
    """A term's postings in one field: ``docs`` (slots, ascending) and ``tfs``, exact-length views
    of buffers with spare room (:meth:`extend`).  ``pi``: the term's number in the batch being
    added (-1 outside :meth:`MemIndex.add`/:meth:`MemIndex.finalize`)."""

    __slots__ = ("docs", "tfs", "tfn", "tfn_key", "pi", "_bd", "_bt")

    def __init__(self) -> None:
        self.docs: np.ndarray = _EMPTY_I32
        self.tfs: np.ndarray = _EMPTY_TF  # uint8, see MAX_TF
        # BM25 tf part (k1/b length-normalised) while MemIndex.tf_norms keeps it, see scoring.tf_norm
        self.tfn: np.ndarray | None = None
        self.tfn_key = -1
        self.pi = -1
        self._bd: np.ndarray | None = None
        self._bt: np.ndarray | None = None

    def extend(self, slots: np.ndarray, tfs: np.ndarray) -> None:
        """Append postings (slots above every slot held).  Readers holding the previous ``docs``
        keep seeing exactly what they saw: only the buffer past its end is written."""
        n = len(self.docs)
        if not n:  # a new term (most of a batch's): exact arrays, room comes with the next batch
            self.docs, self.tfs = slots.copy(), tfs.copy()
            self._bd = self._bt = None
            self.tfn = None
            return
        need = n + len(slots)
        bd, bt = self._bd, self._bt
        if bd is None or bt is None or len(bd) < need or self.docs.base is not bd:
            cap = max(need, n + (n >> 1))
            bd = np.empty(cap, np.int32)
            bt = np.empty(cap, np.uint8)
            bd[:n] = self.docs
            bt[:n] = self.tfs
            self._bd, self._bt = bd, bt
        bd[n:need] = slots
        bt[n:need] = tfs
        self.docs = bd[:need]
        self.tfs = bt[:need]
        self.tfn = None

    def __len__(self) -> int:
        return len(self.docs)

    def __getstate__(self) -> tuple:
        return self.docs.copy(), self.tfs.copy()  # the snapshot keeps no spare room

    def __setstate__(self, state: tuple) -> None:
        self.__init__()  # type: ignore[misc]
        self.docs, self.tfs = state


def _appended(view: np.ndarray, buf: np.ndarray | None, items: array) -> tuple[np.ndarray, np.ndarray]:
    """``view`` (a prefix of ``buf``, or its own array) with ``items`` appended, as a new prefix
    view and its buffer (grown x1.5 when full)."""
    n = len(view)
    need = n + len(items)
    if buf is None or len(buf) < need or view.base is not buf:
        buf = np.empty(max(need, n + (n >> 1)), view.dtype)
        buf[:n] = view
    buf[n:need] = np.frombuffer(items, dtype=view.dtype)
    return buf[:need], buf


POSITIONS = 24
#: a field's proximity rows start this wide and widen, 8 words at a time up to POSITIONS, when a
#: document holds more words: a brand's rows stay 8 wide, a category path's 16 (a quarter of the
#: rows' memory in the Best Buy catalog), and 8 booleans of a row still make one uint64 to test
POSITIONS_STEP = 8
#: chunk ids in the proximity rows are int16 (half the rows' memory) while a shard has fewer distinct
#: words than this, int32 from then on (every field's rows converted once)
POSITIONS_INT16_IDS = 32767
#: a term's frequency in a field is kept in a byte (a quarter of a float32's memory; the postings
#: are most of a shard's): counts above this are kept as this, where BM25 has mostly saturated (in a
#: field of average length, 255 times scores within 0.4 % of 1,000 times)
MAX_TF = 255
#: bytes of masks over the shard kept in its query cache until it changes (:meth:`MemIndex.keep_mask`):
#: long posting lists and keyword values named by queries ("postings"), the filters' field clauses
#: ("filters": a storefront's filters are its facets' values, asked again and again)
MASK_POOLS = {"postings": 16 << 20, "filters": 8 << 20}
#: bytes of BM25 tf parts (``Postings.tfn``, float32 per posting) kept per shard, least recently used
#: out first (:class:`KeptNorms`): a storefront's broad words are few and asked again and again, and
#: kept without a bound they grew with every word ever searched (130 MiB per process at 1M products)
TF_NORM_BYTES = 32 << 20
_EMPTY_I32 = np.zeros(0, dtype=np.int32)
_EMPTY_TF = np.zeros(0, dtype=np.uint8)


class KeptNorms:
    """The posting lists whose BM25 tf part (``Postings.tfn``) is kept, least recently used first,
    within ``limit`` bytes. A list's own changes drop its part (:meth:`Postings.extend`); an entry
    then holds the old array until it is pushed out, so the bound counts every array held."""

    __slots__ = ("limit", "held", "bytes")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: OrderedDict[int, tuple[Postings, np.ndarray]] = OrderedDict()
        self.bytes = 0

    def get(self, p: Postings, key: int) -> np.ndarray | None:
        tfn = p.tfn
        if tfn is None or p.tfn_key != key:
            return None
        self.held.move_to_end(id(p))
        return tfn

    def keep(self, p: Postings, key: int, tfn: np.ndarray) -> None:
        old = self.held.pop(id(p), None)
        if old is not None:
            self.bytes -= old[1].nbytes
        if tfn.nbytes > self.limit:
            p.tfn = None
            return
        p.tfn, p.tfn_key = tfn, key
        self.held[id(p)] = (p, tfn)
        self.bytes += tfn.nbytes
        while self.bytes > self.limit:
            _, (q, out) = self.held.popitem(last=False)
            self.bytes -= out.nbytes
            if q.tfn is out:
                q.tfn = None


class MemIndex:
    def __init__(self, fields: dict[str, FieldSpec], analyzer: TextAnalyzer) -> None:
        self.fields = fields
        self.analyzer = analyzer  # the index language's
        self.searchable = [f for f, s in fields.items() if s.searchable]
        # per searchable field: its own analyzer, else the index language's (one term dictionary
        # holds the terms of every analysis; postings stay per field)
        self.field_an = {f: get_analyzer(*analysis_of(fields[f].analyzer, analyzer.language)) for f in self.searchable}
        self.kw_fields = [f for f, s in fields.items() if s.needs_values and s.type in ("keyword", "keyword[]", "text")]
        self.num_fields = [f for f, s in fields.items() if s.needs_values and s.is_numeric]
        self.bool_fields = [f for f, s in fields.items() if s.needs_values and s.type == "boolean"]
        self.geo_fields = [f for f, s in fields.items() if s.needs_values and s.type == "geopoint"]
        # float64 columns: the numeric fields', and two per geopoint field (geo.lat_key, geo.lng_key)
        self.num_cols = self.num_fields + [k for f in self.geo_fields for k in (lat_key(f), lng_key(f))]
        self.vec_fields = [f for f, s in fields.items() if s.type == "vector"]
        self.n = 0
        self.cap = 0
        self.n_live = 0
        self.ids: list[str | None] = []
        self.blobs = BlobStore()  # the stored documents (compressed once the shard has a few thousand)
        self.id_to_slot: dict[str, int] = {}
        self.live = np.zeros(0, dtype=bool)
        self.postings: dict[str, dict[str, Postings]] = {f: {} for f in self.searchable}
        self.lengths: dict[str, np.ndarray] = {f: np.zeros(0, np.float32) for f in self.searchable}
        self.sum_len: dict[str, float] = {f: 0.0 for f in self.searchable}
        # proximity: ids of the first POSITIONS chunk terms of each searchable field
        self.pos: dict[str, np.ndarray] = {f: np.zeros((0, POSITIONS_STEP), np.int16) for f in self.searchable}
        self.chunk_ids: dict[str, int] = {}
        self.kw_vals: dict[str, list[str]] = {f: [] for f in self.kw_fields}
        self.kw_ord: dict[str, dict[str, int]] = {f: {} for f in self.kw_fields}
        self.kw_first: dict[str, np.ndarray] = {f: np.zeros(0, np.int32) for f in self.kw_fields}
        self.kw_ps: dict[str, np.ndarray] = {f: _EMPTY_I32 for f in self.kw_fields}
        self.kw_po: dict[str, np.ndarray] = {f: _EMPTY_I32 for f in self.kw_fields}
        # a batch's (slot, ordinal) pairs per keyword field, and the buffers behind kw_ps/kw_po
        self._kw_pend: dict[str, tuple[array, array]] = {f: (array("i"), array("i")) for f in self.kw_fields}
        self._kw_buf: dict[str, tuple[np.ndarray | None, np.ndarray | None]] = {f: (None, None) for f in self.kw_fields}
        self._kw_rank: dict[str, tuple[int, np.ndarray]] = {}
        self._kw_sorted: dict[str, tuple[int, list[str], np.ndarray]] = {}
        self._kw_by_value: dict[str, tuple[int, int, np.ndarray, np.ndarray]] = {}  # see kw_slots_by_value
        self._layout = 0  # bumped by compact(): slot numbers and pair positions changed
        self.num: dict[str, np.ndarray] = {f: np.zeros(0, np.float64) for f in self.num_cols}
        self.boo: dict[str, np.ndarray] = {f: np.zeros(0, np.int8) for f in self.bool_fields}
        self.vectors: dict[str, VectorColumn] = {f: VectorColumn(fields[f].dimensions) for f in self.vec_fields}
        self._vec_pend: dict[str, tuple[list[int], list[str]]] = {f: ([], []) for f in self.vec_fields}
        # term dictionary
        self.term_df: dict[str, int] = {}
        self.sorted_terms: list[str] = []
        self._new_terms: list[str] = []  # the batch's, merged into sorted_terms by finalize
        # deletion key -> term(s); a str or a tuple, never a list: a shard holds ~70k of them, and
        # lists would be tracked by the garbage collector (a full pass took 350 ms per reindex step)
        self.del_index: dict[str, str | tuple[str, ...]] = {}
        # unstemmed word -> its term(s) (typo matching); several when fields stem differently
        self.surfaces: dict[str, str | tuple[str, ...]] = {}
        self._seen_chunks: set[str] = set()  # chunk, prefixed with the language when not the index's
        # the batch's postings: term number (Postings.pi), slot, tf; and the terms by number
        self._pend = (array("i"), array("i"), array("f"))
        self._pend_terms: list[tuple[Postings, str]] = []
        self.expansion_cache: dict = {}  # the query cache, see cached
        self.version = 0  # bumped on every change (query caches)
        self._slot_pos = np.zeros(0, dtype=np.int32)  # query scratch, see slot_positions
        self.tf_norms = KeptNorms(TF_NORM_BYTES)  # see scoring.tf_norm

    # -- capacity --------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        cap = max(1024, self.cap * 2)
        while cap < need:
            cap *= 2

        def g(a: np.ndarray, fill: Any) -> np.ndarray:
            b = np.full(cap, fill, dtype=a.dtype)
            b[: len(a)] = a
            return b

        self.live = g(self.live, False)
        for f in self.searchable:
            self.lengths[f] = g(self.lengths[f], 0)
            old = self.pos[f]
            newp = np.full((cap, old.shape[1]), -1, dtype=old.dtype)
            newp[: len(old)] = old
            self.pos[f] = newp
        for f in self.kw_fields:
            self.kw_first[f] = g(self.kw_first[f], -1)
        for f in self.num_cols:
            self.num[f] = g(self.num[f], np.nan)
        for f in self.bool_fields:
            self.boo[f] = g(self.boo[f], -1)
        for column in self.vectors.values():
            column.grow(cap)
        self.cap = cap

    def _positions_int32(self) -> None:
        """Every field's proximity rows as int32: the shard's words outnumber int16's ids."""
        for f, rows in self.pos.items():
            self.pos[f] = rows.astype(np.int32)

    def _widen(self, field: str, words: int) -> np.ndarray:
        """``field``'s proximity rows made wide enough for ``words`` (see POSITIONS_STEP)."""
        old = self.pos[field]
        width = min(POSITIONS, -(-words // POSITIONS_STEP) * POSITIONS_STEP)
        rows = np.full((len(old), width), -1, dtype=old.dtype)
        rows[:, : old.shape[1]] = old
        self.pos[field] = rows
        return rows

    # -- writes ----------------------------------------------------------------------------
    def delete(self, doc_id: str) -> bool:
        slot = self.id_to_slot.pop(doc_id, None)
        if slot is None:
            return False
        self.live[slot] = False
        self.n_live -= 1
        self.blobs.drop(slot)
        for f in self.searchable:
            self.sum_len[f] -= float(self.lengths[f][slot])
        for column in self.vectors.values():
            column.delete(slot)
        self.version += 1
        return True

    def clear(self) -> None:
        for doc_id in list(self.id_to_slot):
            self.delete(doc_id)

    def analyze(self, doc: dict) -> dict[str, tuple[list[str], list[str]]]:
        """field -> (chunks, index terms) for every searchable field of ``doc`` (pure)."""
        out: dict[str, tuple[list[str], list[str]]] = {}
        for f in self.searchable:
            value = doc.get(f)
            if value is None:
                continue
            chunks = CHUNK_RE.findall(text_of(value))
            out[f] = (chunks, list(chain.from_iterable(map(self.field_an[f].chunk_terms, chunks))))
        return out

    def embed_batch(self, docs: list[dict]) -> list[dict[str, np.ndarray]]:
        """Per document, its built-in vectors (pure: a writer computes them outside the read lock
        and hands each to :meth:`add`)."""
        out: list[dict[str, np.ndarray]] = [{} for _ in docs]
        for f in self.vec_fields:
            spec = self.fields[f]
            if not spec.embed_from:
                continue
            texts = [(i, embed_text(doc, spec.embed_from)) for i, doc in enumerate(docs)]
            texts = [(i, t) for i, t in texts if t]
            for (i, _), row in zip(texts, embed(spec.model, [t for _, t in texts]), strict=True):
                out[i][f] = row
        return out

    def add(self, doc_id: str, doc: dict, blob: bytes | None = None,
            analyzed: dict[str, tuple[list[str], list[str]]] | None = None,
            embedded: dict[str, np.ndarray] | None = None) -> int:
        """Add (or replace) one document. Call :meth:`finalize` after a batch. ``embedded``: its
        built-in vectors from :meth:`embed_batch` (None: embedded with the batch in finalize)."""
        if doc_id in self.id_to_slot:
            self.delete(doc_id)
        slot = self.n
        self._grow(slot + 1)
        self.n += 1
        self.n_live += 1
        self.ids.append(doc_id)
        self.blobs.append(blob if blob is not None else exact_bytes(orjson.dumps(doc)))
        self.id_to_slot[doc_id] = slot
        self.live[slot] = True
        pend_terms = self._pend_terms
        pend_pi, pend_slot, pend_tf = self._pend
        seen = self._seen_chunks
        if analyzed is None:
            analyzed = self.analyze(doc)
        for f, (chunks, terms) in analyzed.items():
            an = self.field_an[f]
            other = "" if an is self.analyzer else an.language + "\x00"
            if chunks:
                cids = self.chunk_ids
                row = []
                for chunk in chunks[:POSITIONS]:
                    m = an.chunk_main(chunk)
                    cid = cids.get(m)
                    if cid is None:
                        cid = cids[m] = len(cids)
                        if cid >= POSITIONS_INT16_IDS and self.pos[f].dtype != np.int32:
                            self._positions_int32()
                    row.append(cid)
                rows = self.pos[f]
                if len(row) > rows.shape[1]:
                    rows = self._widen(f, len(row))
                rows[slot, : len(row)] = row
            if other or not seen.issuperset(chunks):  # most chunks of a large shard are known
                for chunk in chunks:
                    key = other + chunk if other else chunk
                    if key not in seen:
                        seen.add(key)
                        for surf, term in an.chunk_surfaces(chunk):
                            self._add_surface(surf, term)
            if not terms:
                continue
            self.lengths[f][slot] = len(terms)
            self.sum_len[f] += len(terms)
            plist = self.postings[f]
            pget = plist.get
            counts: dict[str, int] = {}
            _count_elements(counts, terms)
            for term, tf in counts.items():
                p = pget(term)
                if p is None:
                    p = plist[term] = Postings()
                    if term not in self.term_df:
                        self._new_term(term)
                pi = p.pi
                if pi < 0:  # first posting of this term in the batch
                    pi = p.pi = len(pend_terms)
                    pend_terms.append((p, term))
                pend_pi.append(pi)
                pend_slot.append(slot)
                pend_tf.append(tf)
        for f in self.kw_fields:
            vals = keyword_values(doc.get(f))
            if not vals:
                continue
            ords = self.kw_ord[f]
            ps, po = self._kw_pend[f]
            first = -1
            for v in vals:
                o = ords.get(v)
                if o is None:
                    o = ords[v] = len(self.kw_vals[f])
                    self.kw_vals[f].append(v)
                ps.append(slot)
                po.append(o)
                if first < 0:
                    first = o
            self.kw_first[f][slot] = first
        for f in self.num_fields:
            x: Any = doc.get(f)
            if isinstance(x, list):
                x = x[0] if x else None
            self.num[f][slot] = to_number(x, self.fields[f].type)
        for f in self.bool_fields:
            x = doc.get(f)
            if isinstance(x, list):
                x = x[0] if x else None
            self.boo[f][slot] = to_bool(x)
        for f in self.geo_fields:
            point = point_value(doc.get(f))
            if point is not None:
                self.num[lat_key(f)][slot], self.num[lng_key(f)][slot] = point
        for f in self.vec_fields:
            self._add_vector(f, slot, doc, embedded)
        self.version += 1
        return slot

    def _add_vector(self, f: str, slot: int, doc: dict, embedded: dict[str, np.ndarray] | None) -> None:
        spec = self.fields[f]
        if spec.embed_from and embedded is not None:
            row = embedded.get(f)
            if row is not None:
                self.vectors[f].put(np.array([slot]), row[None, :])
            return
        if spec.embed_from:  # built in: embedded with the batch (finalize)
            text = embed_text(doc, spec.embed_from)
            if text:
                slots, texts = self._vec_pend[f]
                slots.append(slot)
                texts.append(text)
            return
        value = doc.get(f)  # shop-supplied: the control plane checked its length and numbers
        if not isinstance(value, list) or len(value) != spec.dimensions:
            return
        try:
            row = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError):
            return
        norm = float(np.linalg.norm(row))
        if norm > 0 and np.isfinite(norm):
            self.vectors[f].put(np.array([slot]), (row / norm)[None, :])

    def _embed_pending(self) -> None:
        for f in self.vec_fields:
            slots, texts = self._vec_pend[f]
            if not slots:
                continue
            self.vectors[f].put(np.asarray(slots, dtype=np.int64), embed(self.fields[f].model, texts))
            self._vec_pend[f] = ([], [])
        for column in self.vectors.values():
            column.finalize()

    def _add_surface(self, surf: str, term: str) -> None:
        cur = self.surfaces.get(surf)
        if cur is None:
            self.surfaces[surf] = term
            self._index_deletes(surf)
        elif isinstance(cur, str):
            if cur != term:
                self.surfaces[surf] = (cur, term)
        elif term not in cur:
            self.surfaces[surf] = (*cur, term)

    def _new_term(self, term: str) -> None:
        self.term_df[term] = 0
        self._new_terms.append(term)
        self._index_deletes(term)

    def _index_deletes(self, term: str) -> None:
        if len(term) >= 3 and not term.isdigit():
            di = self.del_index
            for key in {term} | {term[:i] + term[i + 1:] for i in range(len(term))}:
                cur = di.get(key)
                if cur is None:
                    di[key] = term
                elif isinstance(cur, str):
                    di[key] = (cur, term)
                else:
                    di[key] = (*cur, term)

    def finalize(self) -> None:
        self._embed_pending()
        self._finalize_postings()
        self._merge_new_terms()
        for f in self.kw_fields:
            ps, po = self._kw_pend[f]
            if ps:
                bps, bpo = self._kw_buf[f]
                self.kw_ps[f], bps = _appended(self.kw_ps[f], bps, ps)
                self.kw_po[f], bpo = _appended(self.kw_po[f], bpo, po)
                self._kw_buf[f] = (bps, bpo)
                self._kw_pend[f] = (array("i"), array("i"))
        if self.n > 2048 and (self.n - self.n_live) > 0.3 * self.n:
            self.compact()

    def _merge_new_terms(self) -> None:
        """The batch's new terms into the sorted dictionary: one insertion each when they are few,
        else one sort of the two runs (an insertion moves the whole list: with a new term per
        document, say a model number, inserting each grew to ~75 us per document at 300k terms)."""
        new = self._new_terms
        if not new:
            return
        if len(new) <= 16:
            for term in new:
                bisect.insort(self.sorted_terms, term)
        else:
            new.sort()
            self.sorted_terms.extend(new)
            self.sorted_terms.sort()  # two sorted runs: timsort merges them in one pass
        self._new_terms = []

    def _finalize_postings(self) -> None:
        """The batch's postings, grouped by term (a stable sort keeps slots ascending), appended to
        their terms; document frequencies follow."""
        terms = self._pend_terms
        if not terms:
            return
        pis, slots, tfs = self._pend
        order = np.argsort(np.frombuffer(pis, np.int32), kind="stable")
        counts = np.bincount(np.frombuffer(pis, np.int32), minlength=len(terms))
        slots_by_term = np.frombuffer(slots, np.int32)[order]
        tfs_by_term = np.minimum(np.frombuffer(tfs, np.float32)[order], MAX_TF).astype(np.uint8)
        td = self.term_df
        start = 0
        for (p, term), k in zip(terms, counts.tolist(), strict=True):
            end = start + k
            p.extend(slots_by_term[start:end], tfs_by_term[start:end])
            p.pi = -1
            td[term] = td.get(term, 0) + k
            start = end
        self._pend = (array("i"), array("i"), array("f"))
        self._pend_terms = []

    def compact(self) -> None:
        """Renumber live slots 0..n_live-1 (order kept) and drop dead postings."""
        n = self.n
        live = self.live[:n]
        remap = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)
        keep_idx = np.flatnonzero(live)
        for f in self.searchable:
            plist = self.postings[f]
            empty = []
            for term, p in plist.items():
                p._bd = p._bt = None  # the arrays below are new: let the old buffers go
                k = live[p.docs]
                if not k.all():
                    removed = int(len(k) - k.sum())
                    p.docs = remap[p.docs[k]]
                    p.tfs = p.tfs[k]
                    p.tfn = None
                    self.term_df[term] = max(0, self.term_df.get(term, 0) - removed)
                    if not len(p.docs):
                        empty.append(term)
                else:
                    p.docs = remap[p.docs]
            for term in empty:
                del plist[term]
        for f in self.kw_fields:
            k = live[self.kw_ps[f]]
            self.kw_ps[f] = remap[self.kw_ps[f][k]]
            self.kw_po[f] = self.kw_po[f][k]
            self._kw_buf[f] = (None, None)
        m = len(keep_idx)

        def sq(a: np.ndarray, fill: Any) -> np.ndarray:
            b = np.full(self.cap, fill, dtype=a.dtype)
            b[:m] = a[keep_idx]
            return b

        self.live = sq(self.live, False)
        for f in self.searchable:
            self.lengths[f] = sq(self.lengths[f], 0)
            newp = np.full((self.cap, self.pos[f].shape[1]), -1, dtype=self.pos[f].dtype)
            newp[:m] = self.pos[f][keep_idx]
            self.pos[f] = newp
        for f in self.kw_fields:
            self.kw_first[f] = sq(self.kw_first[f], -1)
        for f in self.num_cols:
            self.num[f] = sq(self.num[f], np.nan)
        for f in self.bool_fields:
            self.boo[f] = sq(self.boo[f], -1)
        for column in self.vectors.values():
            column.compact(keep_idx, m)
        ids = [self.ids[i] for i in keep_idx]
        self.blobs.keep(keep_idx)
        self.ids = ids
        self.id_to_slot = {d: i for i, d in enumerate(ids)}  # type: ignore[misc]
        self.n = m
        self.n_live = m
        self.version += 1
        self._layout += 1

    def settle(self) -> None:
        """Each field's postings moved into two contiguous arrays (slots, frequencies), without
        spare room; each term's ``docs``/``tfs`` become views of them, with the same content.

        A generation built page by page holds its postings in thousands of medium-sized buffers
        spread through the allocator's heap, among those of the generation it replaces: once that
        one is dropped, its pages could not be given back around them. Moved into two large arrays
        (their own memory maps), every small buffer is freed at once. Readers see the same numbers
        throughout; the caller holds the write lock (no append meanwhile). A term's next append
        copies it into a buffer of its own again (:meth:`Postings.extend`)."""
        for plist in self.postings.values():
            terms = list(plist.values())
            if not terms:
                continue
            docs = np.concatenate([p.docs for p in terms])
            tfs = np.concatenate([p.tfs for p in terms])
            start = 0
            for p in terms:
                end = start + len(p.docs)
                p.docs, p.tfs = docs[start:end], tfs[start:end]
                p._bd = p._bt = None
                start = end

    # -- reads -----------------------------------------------------------------------------
    def document(self, slot: int) -> dict | None:
        blob = self.blobs.get(slot)
        return None if blob is None else orjson.loads(blob)

    def cached(self, key: tuple) -> tuple[dict, object]:
        """The query cache and its entry for ``key`` (``None``: not held): typo and prefix
        expansions, phrase postings, masks (:meth:`keep_mask`), kept until the next change to the
        shard (:attr:`version`)."""
        cache = self.expansion_cache
        if cache.get("__version__") != self.version or len(cache) > 20000:
            cache.clear()
            cache["__version__"] = self.version
        return cache, cache.get(key)

    def keep_mask(self, key: tuple, mask: np.ndarray, pool: str = "postings") -> None:
        """Keep ``mask`` (a boolean per slot) in the query cache under ``key`` while the masks of its
        ``pool`` (MASK_POOLS) take at most their bytes; a kept mask is read-only."""
        cache, _ = self.cached(key)
        held = cache.get(("mask bytes", pool), 0)
        if held + mask.nbytes <= MASK_POOLS[pool]:
            mask.flags.writeable = False
            cache[key] = mask
            cache[("mask bytes", pool)] = held + mask.nbytes

    def slot_positions(self) -> np.ndarray:
        """Scratch map slot -> position among a query's candidates, all -1 between queries (the
        caller restores it; searches hold the engine lock)."""
        if len(self._slot_pos) < self.n:
            self._slot_pos = np.full(max(self.cap, self.n), -1, dtype=np.int32)
        return self._slot_pos

    def kw_ordinals(self, field: str, slots: np.ndarray) -> np.ndarray:
        """The value ordinals of ``slots`` (sorted) in a keyword field, one per value.

        ``kw_ps`` is in slot order (slots only grow; compaction keeps the order), so each doc's
        values are one run found by binary search; a large share of the shard goes through a mask."""
        ps, po = self.kw_ps[field], self.kw_po[field]
        if len(slots) * 8 > self.n:
            mask = np.zeros(self.n, dtype=bool)
            mask[slots] = True
            return po[mask[ps]]  # type: ignore[no-any-return]
        lo = np.searchsorted(ps, slots, "left")
        cnt = np.searchsorted(ps, slots, "right") - lo
        if len(cnt) and cnt.max() <= 1:
            return po[lo[cnt == 1]]  # type: ignore[no-any-return]
        total = int(cnt.sum())
        starts = lo - (np.cumsum(cnt) - cnt)
        return po[np.repeat(starts, cnt) + np.arange(total)]  # type: ignore[no-any-return]

    def avg_len(self, field: str) -> float:
        return max(self.sum_len[field] / max(self.n_live, 1), 1.0)

    def kw_rank(self, field: str) -> np.ndarray:
        """Alphabetical rank per ordinal (for sorting keyword fields)."""
        vals = self.kw_vals[field]
        cached = self._kw_rank.get(field)
        if cached is not None and cached[0] == len(vals):
            return cached[1]
        order = sorted(range(len(vals)), key=lambda i: vals[i].casefold())
        rank = np.empty(len(vals), dtype=np.int64)
        rank[np.asarray(order, dtype=np.int64)] = np.arange(len(vals))
        self._kw_rank[field] = (len(vals), rank)
        return rank

    def kw_slots_by_value(self, field: str) -> tuple[np.ndarray, np.ndarray, int]:
        """``(slots, starts, upto)``: the slots of the field's first ``upto`` (slot, value) pairs
        grouped by value, ``slots[starts[o]:starts[o + 1]]`` for ordinal ``o`` (ordinals past
        ``len(starts) - 1`` are newer than the grouping). Pairs after ``upto`` (added since) are
        the caller's to scan; the grouping is redone once they are an eighth of it, or when
        :meth:`compact` renumbered the slots. A filter on one value then costs its own slots, not a
        pass over every pair of the shard (1.4 ms per filter at 500,000 products)."""
        ps, po = self.kw_ps[field], self.kw_po[field]
        cached = self._kw_by_value.get(field)
        if cached is not None and cached[0] == self._layout and len(ps) - cached[1] <= max(4096, cached[1] >> 3):
            return cached[2], cached[3], cached[1]
        order = np.argsort(po, kind="stable")
        slots = ps[order]
        starts = np.zeros(len(self.kw_vals[field]) + 1, dtype=np.int64)
        np.cumsum(np.bincount(po, minlength=len(self.kw_vals[field])), out=starts[1:])
        self._kw_by_value[field] = (self._layout, len(ps), slots, starts)
        return slots, starts, len(ps)

    def kw_sorted(self, field: str) -> tuple[list[str], np.ndarray]:
        """The field's values in code-point order and their ordinals (for range filters), cached
        while the dictionary (append-only) keeps its size."""
        vals = self.kw_vals[field]
        cached = self._kw_sorted.get(field)
        if cached is not None and cached[0] == len(vals):
            return cached[1], cached[2]
        order = sorted(range(len(vals)), key=vals.__getitem__)
        ordered = [vals[i] for i in order]
        ords = np.asarray(order, dtype=np.int32)
        self._kw_sorted[field] = (len(vals), ordered, ords)
        return ordered, ords

    def memory_bytes(self) -> int:
        total = 0
        for f in self.searchable:
            for p in self.postings[f].values():
                total += p.docs.nbytes + p.tfs.nbytes + 120
            total += self.lengths[f].nbytes + self.pos[f].nbytes
        total += self.blobs.memory_bytes()
        for f in self.kw_fields:
            total += self.kw_ps[f].nbytes + self.kw_po[f].nbytes + self.kw_first[f].nbytes
        total += sum(a.nbytes for a in self.num.values()) + sum(a.nbytes for a in self.boo.values())
        total += sum(column.memory_bytes() for column in self.vectors.values())
        total += len(self.del_index) * 100 + len(self.term_df) * 120
        return total
