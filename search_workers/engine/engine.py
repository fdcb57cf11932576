"""ShardEngine: one shard of one index - a Whoosh index on disk, columnar numpy in memory.

Design
======
* **Whoosh is the on-disk format.**  Every document is a Whoosh document: ``docid`` (unique),
  ``src`` (the whole document as orjson bytes, stored), one ``t_<field>`` TEXT field per
  searchable field analysed by :class:`~.analysis.ShopTokenizer` (the same analysis the engine
  uses, frequencies only) and one ``k_<field>`` KEYWORD field per facet/filter keyword field.  A
  meta document holds ``applied_seq``, the mapping and the language; it is written in the same
  commit as the changes, so the sequence can never run ahead of (or behind) the documents.
* **Write-behind persistence** (``persist.py``).  ``apply`` updates memory (search reflects the
  change when it returns) and queues the changes to a helper process that writes them to Whoosh;
  every job already queued for a shard goes into one writer and one commit (group commit), whose
  meta document carries the last job's ``applied_seq``.  ``applied_seq`` is what memory holds;
  ``persisted_seq`` what is on disk, i.e. what a reopened shard (after a crash) starts from and the
  control plane re-feeds after.  ``flush()`` waits for the disk; ``close()`` flushes.  ``apply``
  waits when more than ``persist.MAX_PENDING_DOCS`` documents are not yet committed.
  ``SHOPSEARCH_ENGINE_PERSIST=inline``: one Whoosh writer and one commit inside each ``apply``.
* **Whoosh writes without per-posting Python** where it can: an in-memory posting pool, field
  lengths captured while documents are added, and posting lists written term by term into
  Whoosh's own block writer (``_fast_writer``/``_write_postings``: the same files as Whoosh's
  ``SegmentWriter``).
* **Queries never touch Whoosh.**  Per-query posting loops in Python are what made raw Whoosh
  slow (p99 0.5 s, facets 1.7 s).  The engine keeps a :class:`~.memindex.MemIndex`: postings
  as numpy arrays, BM25 field lengths, keyword ordinals (``np.bincount`` facets), numeric/date/
  boolean columns, a live mask and a term dictionary (sorted list + deletion index for typos).
  Queries are evaluated with vectorised numpy over dense per-slot arrays (``query.py``).
* **Refresh strategy: incremental from ``apply``, full build only on open.**  ``apply`` feeds the
  changed documents (already in hand) to the MemIndex: a replaced/deleted document's slot is
  marked dead, new versions are appended, and only the touched terms' posting arrays are
  concatenated.  A 500-document commit into a 50k shard costs ~0.1-0.3 s of analysis + the Whoosh
  commit, never a rebuild.  Dead slots are compacted (vectorised, order-preserving) when they
  exceed 30 %.  On open the MemIndex is built once from the stored ``src`` of every live Whoosh
  document (re-analysed through the chunk cache: ~1-3 s per 50k products).
* **Stored documents** are kept in memory as orjson bytes (``get`` and hits decode only the final
  top hits); ~0.7 KB per product -> ~70 MB per 100k.  Postings ~ 8 bytes per (term, field, doc).
  Measured for 100k Best Buy-like products in 2 shards: see ``benchmarks/engine_bench.py``.
* **Cross-shard comparable scores.**  Documents are spread over shards by a hash of the id, so
  N, document frequencies and average field lengths are statistically near-identical on every
  shard (for 50k-document shards the idf of any term differing by more than a few percent is
  rare and limited to very rare terms, where it affects every candidate the same way).  Global
  statistics would need a second round trip per query (term expansion happens per shard), so
  ``stats`` is not taken; scores are used as-is by the coordinator's merge.
* **Threading.**  A write lock serialises ``apply``; a read lock guards the in-memory structures.
  The Whoosh write, commit and segment merges run outside the read lock (and, by default, in
  another process), so a thread-pooled or async host keeps answering searches during a long commit (a plain Ray actor runs one call at
  a time anyway).  Whoosh segments merge by size tiers (``merge_tiered``), never the whole index
  at once.
* **Write cost**: ``apply`` itself (analysis + memory) is ~0.15-0.2 ms per document; the Whoosh
  write (~0.5 ms per document, pure Python) runs in the helper process, i.e. on another core
  than the process answering searches and feeding the shards.

Search request semantics (plain dict in, plain dict out)
--------------------------------------------------------
* ``limit``/``offset``: hits are ranks ``offset .. offset+limit-1`` of this shard.  A coordinator
  merging shards asks every shard for ``offset=0, limit=page*perPage`` and slices after merging.
  Order is total (sort keys, then score, then internal document order), so pages never overlap.
* ``sortValues`` = one value per ``sort`` entry (numbers, strings, booleans; dates as epoch
  seconds; ``None`` when missing - missing values sort last in both directions) followed by the
  score.  Relevance-only queries return ``[score]``.
* ``facets``: terms facets return every value with a count > 0 (``size``/``sort`` are applied by
  the coordinator after merging); range facets return one count per range (``from`` inclusive,
  ``to`` exclusive).  Counts are disjunctive and respect ``excludeIds``.
* ``relaxed``/``droppedWords``: with operator ``and`` and no result, words matching nothing are
  dropped, then the most frequent words one by one.  Shards relax independently; a coordinator
  that gets ``relaxed: false`` hits from some shard should drop relaxed hits of the others (or
  pass ``"relax": false`` to disable relaxation).
* ``boosts``: score x ``(1 + sum(weight * modifier(max(value, 0))))``; ``boostFilters``: score x
  ``max(0, 1 + weight)`` per matching entry.  Both work with an empty ``q`` (base score 1).
* ``synonyms``: keys are single query words (normalised like the query); each alternative is a
  list of words that must all match (in one field).
* ``changes`` given to ``apply`` must be sorted by ``seq``; changes at or below ``applied_seq``
  are skipped.  A document whose body lacks the id field gets it from the change's ``id``.

* ``analyzer`` (mapping): a searchable field's own analysis - a language (its stemmer) or
  ``plain`` (not stemmed) - instead of the index language's, for its postings, its Whoosh field,
  its query clauses, proximity and highlighting.  One term dictionary serves every analysis.

Known gaps: ``suggest`` is not used by the engine (the suggestion index reads it); no
phrase/position data beyond the first 24 words of each field (used for the proximity bonus).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import threading
from typing import Any

import numpy as np
import orjson
from whoosh import fields as wf
from whoosh import index as windex
from whoosh.query import Every
from whoosh.system import pack_uint

from . import snapshot
from .analysis import _FREQ_BYTES, _TERM_BYTES, PreAnalyzed, ShopText, ShopTokenizer, get_analyzer
from .errors import Deadline, EngineError, ShardBusy
from .mapping import analysis_of, compile_mapping, validate_mapping
from .memindex import MemIndex, exact_bytes, keyword_values, text_of
from .persist import get_persister, persist_mode
from .query import (
    PROXIMITY_BONUS,
    PROXIMITY_WINDOW,
    SAME_FIELD_BONUS,
    and_masks,
    build_clauses,
    candidate_slots,
    compile_filters,
    highlight_text,
    plan_clauses,
    proximity_bonus,
    relax_clauses,
    score_plans,
)

META_ID = "__shopsearch_meta__"
MERGE_FACTOR = 10
# Segments per tier before the tier is merged.  Whoosh merges are pure Python (a merge rewrites
# every posting of its segments: for a 50k-document shard fed in batches of 2,500, merging at 10
# segments per tier doubled the total write cost).  Queries never read Whoosh, so many segments
# only cost a little on reopen and on deletes/updates (one term lookup per segment).
MERGE_AT = 30


class _ListPool:
    """Whoosh posting pool kept in memory.  ``terms`` holds the postings of documents added by
    :func:`_fast_writer`'s ``add_document``: per (field, term bytes) the docnums, weights and value
    bytes, already in docnum order, so a flush sorts the distinct terms only.  ``items`` takes
    Whoosh's generic posting tuples (``add`` is ``list.append``; Whoosh's ``PostingPool`` does size
    bookkeeping per posting).  Merges switch to a spilling ``PostingPool`` (see
    :func:`merge_tiered`) to keep memory bounded."""

    def __init__(self) -> None:
        self.items: list[tuple] = []
        self.add = self.items.append
        self.terms: dict[tuple[str, bytes], tuple[list, list, list]] = {}
        self.fieldnames: set[str] = set()

    def tuples(self) -> Any:
        yield from self.items
        for (fieldname, btext), (docs, weights, vals) in self.terms.items():
            for d, wt, v in zip(docs, weights, vals, strict=True):
                yield fieldname, btext, d, wt, v

    def iter_postings(self) -> Any:
        return iter(sorted(self.tuples()))

    def cleanup(self) -> None:
        self.items = []
        self.add = self.items.append
        self.terms = {}


class _Lengths:
    """Field lengths for ``FieldWriter.add_postings``, from the lengths captured while the segment's
    documents were written (instead of one column-file read per posting)."""

    def __init__(self, lengths: dict[str, dict[int, int]]) -> None:
        self._lengths = lengths

    def doc_field_length_reader(self, fieldname: str, default: int = 0) -> Any:
        from whoosh.util.numeric import byte_to_length, length_to_byte

        d = self._lengths.get(fieldname, {})
        cache: dict[int, int | None] = {}

        def get(docnum: int) -> int | None:
            n = d.get(docnum, 0)
            q = cache.get(n, -1)
            if q == -1:  # same value Whoosh would read back from the length column
                lb = length_to_byte(n)
                q = cache[n] = byte_to_length(lb) if lb else None
            return q

        return get

    def close(self) -> None:
        pass


def _grouped(items: Any) -> Any:
    """Sorted posting tuples -> (field, term bytes, docnums, weights, values) per term."""
    from itertools import groupby
    from operator import itemgetter

    for (fieldname, btext), grp in groupby(items, key=itemgetter(0, 1)):
        posts = [p for p in grp if p[2] >= 0]  # docnum -1: spelling words (unused here)
        if posts:
            yield fieldname, btext, [p[2] for p in posts], [p[3] for p in posts], [p[4] for p in posts]


def _write_postings(fw: Any, schema: Any, lengths: Any, terms: Any) -> None:
    """``W3FieldWriter.add_postings`` producing the same blocks, term by term instead of posting by
    posting: each block buffer of the ``W3PostingsWriter`` is filled with slices (ids, weights,
    values, length/weight statistics exactly as ``add_posting`` would compute them), then written
    by Whoosh's own block writer.  ``terms``: (field, term bytes, docnums, weights, values) in
    (field, term) order, docnums ascending."""
    from array import array

    lastfn = None
    dfl: Any = None
    for fieldname, btext, docs, weights, vals in terms:
        if fieldname != lastfn:
            if lastfn is not None:
                fw.finish_field()
            fw.start_field(fieldname, schema[fieldname])
            lastfn = fieldname
            dfl = lengths.doc_field_length_reader(fieldname) if lengths else (lambda d: 0)
        fw.start_term(btext)
        pw = fw._postwriter
        bl = pw._blocklimit
        n = len(docs)
        for s in range(0, n, bl):
            if s:
                pw._write_block()
            if n <= bl:
                ids, ws, vs = docs, weights, vals
            else:
                ids, ws, vs = docs[s:s + bl], weights[s:s + bl], vals[s:s + bl]
            pw._ids = array("I", ids)
            pw._weights = array("f", ws)
            pw._values = [v for v in vs if v]
            lens = [x for x in map(dfl, ids) if x]
            pw._minlength = min(lens) if lens else None
            pw._maxlength = max(lens) if lens else 0
            pw._maxweight = max(0, max(ws))
        fw.finish_term()
    if lastfn is not None:
        fw.finish_field()


def _fast_writer(ix: Any, limitmb: int = 128) -> Any:
    """A Whoosh ``SegmentWriter`` writing the same files, with an in-memory posting pool, the field
    lengths captured as documents are added (see :class:`_ListPool`, :class:`_Lengths`) and an
    ``add_document`` that files pre-analysed terms straight into per-term posting lists."""
    from collections import Counter

    from whoosh.codec.whoosh3 import W3Codec
    from whoosh.writing import SegmentWriter

    # zlib level 1 for posting blocks (readers honour each block's own level): ~2x cheaper than
    # Whoosh's default 3 for a few % more bytes
    w = SegmentWriter(ix, limitmb=limitmb, codec=W3Codec(compression=1))
    pool = w.pool = _ListPool()
    lengths: dict[str, dict[int, int]] = {}
    pdw = w.perdocwriter
    orig_add_field = pdw.add_field

    def add_field(fieldname: str, fieldobj: Any, value: Any, length: int) -> None:
        if length:
            d = lengths.get(fieldname)
            if d is None:
                d = lengths[fieldname] = {}
            d[pdw._docnum] = length
        orig_add_field(fieldname, fieldobj, value, length)

    pdw.add_field = add_field
    schema = w.schema
    simple = all(not f.vector and not f.separate_spelling() and not f.column_type for _n, f in schema.items())
    tb = _TERM_BYTES
    fbytes = _FREQ_BYTES

    def add_document(**fields: Any) -> None:
        # SegmentWriter.add_document for documents without boosts, vectors, spelling or columns
        if not simple or any(k.startswith("_") for k in fields):
            return type(w).add_document(w, **fields)  # type: ignore[no-any-return]
        w._check_state()
        docnum = w.docnum
        terms = w.pool.terms if w.pool is pool else None
        pdw.start_doc(docnum)
        for fieldname in sorted(fields):
            value = fields[fieldname]
            if value is None:
                continue
            field = schema[fieldname]
            length = 0
            if field.indexed:
                if type(value) is PreAnalyzed and isinstance(field, ShopText) and terms is not None:
                    length = len(value)
                    fb = field.format.field_boost  # type: ignore[union-attr]
                    if len(tb) > 400_000:
                        tb.clear()
                    for term, freq in Counter(value).items():
                        b = tb.get(term)
                        if b is None:
                            b = tb[term] = term.encode("utf-8")
                        key = (fieldname, b)
                        p = terms.get(key)
                        if p is None:
                            p = terms[key] = ([], [], [])
                        p[0].append(docnum)
                        p[1].append(freq * fb)
                        p[2].append(fbytes[freq] if freq < 64 else pack_uint(freq))
                else:
                    scorable = field.scorable
                    for tbytes, freq, weight, vbytes in field.index(value):
                        if scorable:
                            length += freq
                        if terms is not None:
                            key = (fieldname, tbytes)
                            p = terms.get(key)
                            if p is None:
                                p = terms[key] = ([], [], [])
                            p[0].append(docnum)
                            p[1].append(weight)
                            p[2].append(vbytes)
                        else:
                            w.pool.add((fieldname, tbytes, docnum, weight, vbytes))
            pdw.add_field(fieldname, field, value if field.stored else None, length)
        pdw.finish_doc()
        w._added = True
        w.docnum += 1
        return None

    w.add_document = add_document  # type: ignore[method-assign]

    def flush_segment() -> None:
        w.perdocwriter.close()
        p = w.pool
        if isinstance(p, _ListPool) and not p.items:  # only our own postings: sort the terms
            t = p.terms
            terms: Any = ((k[0], k[1], *t[k]) for k in sorted(t))
        else:
            terms = _grouped(p.iter_postings())
        _write_postings(w.fieldwriter, w.schema, _Lengths(lengths), terms)
        w.fieldwriter.close()

    w._flush_segment = flush_segment  # type: ignore[method-assign]
    return w


def meta_blob(seq: int, mapping: dict, language: str) -> bytes:
    return orjson.dumps({"appliedSeq": seq, "mapping": mapping, "language": language})


def whoosh_doc(fields: dict, doc_id: str, doc: dict, blob: bytes, analyzed: dict | None = None) -> dict[str, Any]:
    """The Whoosh document of ``doc`` (``analyzed``: ``MemIndex.analyze(doc)``, else plain text)."""
    wd: dict[str, Any] = {"docid": doc_id, "src": blob}
    for name, spec in fields.items():
        v = doc.get(name)
        if v is None:
            continue
        if spec.searchable:
            if analyzed is not None:
                terms = analyzed.get(name, ((), ()))[1]
                if terms:
                    wd["t_" + name] = PreAnalyzed(terms)
            else:
                t = text_of(v)
                if t:
                    wd["t_" + name] = t
        if spec.needs_values and spec.type in ("keyword", "keyword[]"):
            vals = [x.replace(",", " ") for x in keyword_values(v)]
            if vals:
                wd["k_" + name] = ",".join(vals)
    return wd


def merge_tiered(writer: Any, segments: list) -> list:
    """Whoosh merge policy: segments are put in size tiers (powers of MERGE_FACTOR of their
    document count); a tier holding MERGE_AT segments is merged into one.  Whoosh's default
    policy regularly re-merges the whole index (a 16 s commit at 17k documents); here each
    document is rewritten about log10(N) times and a commit merges at most ~MERGE_AT similar segments.
    Segments with many deletions drop into a lower tier by live count and are merged sooner."""
    from whoosh.reading import SegmentReader

    tiers: dict[int, list] = {}
    for seg in segments:
        live = max(seg.doc_count(), 1)
        tier = int(math.log(live, MERGE_FACTOR))
        tiers.setdefault(tier, []).append(seg)
    keep: list = []
    for _tier, segs in sorted(tiers.items()):
        if len(segs) >= MERGE_AT:
            if isinstance(writer.pool, _ListPool):  # merged postings may be large: spill to disk
                from whoosh.writing import PostingPool

                pending = writer.pool
                writer.pool = PostingPool(writer._tempstorage, writer.newsegment, limitmb=128)
                for item in pending.tuples():
                    writer.pool.add(item)
            for seg in segs:
                reader = SegmentReader(writer.storage, writer.schema, seg)
                writer.add_reader(reader)
                reader.close()
        else:
            keep.extend(segs)
    return keep
DEFAULT_LIMIT = 20
DECODE_BYTES_PER_SECOND = 200e6  # orjson on a slow core, for deadline checks


class ShardEngine:
    def __init__(self, path: str | os.PathLike, mapping: dict, language: str = "en") -> None:
        validate_mapping(mapping, language)
        self.path = os.fspath(path)
        self.mapping = mapping
        self.language = language
        self.id_field, self.fields = compile_mapping(mapping)
        self._lock = threading.RLock()  # in-memory structures (search, get, mutation)
        self._write_lock = threading.RLock()  # one writer at a time (Whoosh + memory)
        self._closed = False
        self._applied_seq = 0
        self._schema = self._make_schema()
        self._analyzer = get_analyzer(language)
        self._mem = MemIndex(self.fields, self._analyzer)
        self._retrievable_drop = {f for f, s in self.fields.items() if not s.retrievable}
        self._boost_cache: dict[tuple, np.ndarray] = {}
        os.makedirs(self.path, exist_ok=True)
        if windex.exists_in(self.path):
            self._ix = windex.open_dir(self.path)
            self._load()
        else:
            self._ix = windex.create_in(self.path, self._schema)
        self._persisted_seq = self._applied_seq
        self._persister = get_persister() if persist_mode() != "inline" else None

    # ------------------------------------------------------------------ schema / persistence
    def _make_schema(self) -> wf.Schema:
        s = wf.Schema(docid=wf.ID(stored=True, unique=True), src=wf.STORED(), meta=wf.STORED())
        for name, spec in self.fields.items():
            if spec.searchable:
                # the field's analysis (the in-memory structures use the same)
                tokenizer = ShopTokenizer(*analysis_of(spec.analyzer, self.language))
                s.add("t_" + name, ShopText(analyzer=tokenizer, phrase=False))  # type: ignore[arg-type]
            if spec.needs_values and spec.type in ("keyword", "keyword[]"):
                s.add("k_" + name, wf.KEYWORD(commas=True, lowercase=False, scorable=False))
        return s

    def _meta_blob(self, seq: int) -> bytes:
        return meta_blob(seq, self.mapping, self.language)

    def _whoosh_doc(self, doc_id: str, doc: dict, blob: bytes, analyzed: dict | None = None) -> dict[str, Any]:
        return whoosh_doc(self.fields, doc_id, doc, blob, analyzed)

    def _load(self) -> None:
        with self._ix.searcher() as s:
            meta = s.document(docid=META_ID)
        info = orjson.loads(meta["meta"]) if meta else {}
        seq = int(info.get("appliedSeq", 0))
        # the snapshot must describe this very Whoosh state: same sequence, and Whoosh itself
        # written for the mapping and language asked for (else the rewrite below must run)
        on_disk_as_asked = info.get("mapping") == self.mapping and info.get("language") == self.language
        if on_disk_as_asked and snapshot.load(self.path, self._mem, seq, self.mapping, self.language):
            self._applied_seq = seq
            return
        snapshot.discard(self.path)
        stored_meta: dict | None = None
        docs: list[tuple[str, bytes]] = []
        with self._ix.searcher() as s:
            for _docnum, sf in s.reader().iter_docs():
                did = sf.get("docid")
                if did == META_ID:
                    stored_meta = orjson.loads(sf["meta"])
                elif did is not None and sf.get("src") is not None:
                    docs.append((did, sf["src"]))
        if stored_meta:
            self._applied_seq = int(stored_meta.get("appliedSeq", 0))
        same = stored_meta is not None and stored_meta.get("mapping") == self.mapping and stored_meta.get("language") == self.language
        if not same and (docs or stored_meta):
            # mapping or language changed: rewrite the Whoosh index with the new schema
            tmp = self.path + ".rewrite"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            nix = windex.create_in(tmp, self._schema)
            w = nix.writer(limitmb=256)
            for did, blob in docs:
                w.add_document(**self._whoosh_doc(did, orjson.loads(blob), blob))
            w.add_document(docid=META_ID, meta=self._meta_blob(self._applied_seq))
            w.commit()
            for fn in os.listdir(self.path):  # only Whoosh's files: others may keep theirs here
                p = os.path.join(self.path, fn)
                if os.path.isfile(p) and _is_whoosh_file(fn):
                    os.remove(p)
            for fn in os.listdir(tmp):
                shutil.move(os.path.join(tmp, fn), os.path.join(self.path, fn))
            shutil.rmtree(tmp, ignore_errors=True)
            self._ix = windex.open_dir(self.path)
        mem = self._mem
        for did, blob in docs:
            mem.add(did, orjson.loads(blob), blob)
        mem.finalize()

    # ------------------------------------------------------------------ properties
    @property
    def applied_seq(self) -> int:
        return self._applied_seq

    @property
    def doc_count(self) -> int:
        return self._mem.n_live

    @staticmethod
    def validate_mapping(mapping: dict, language: str) -> None:
        validate_mapping(mapping, language)

    def _check_open(self) -> None:
        if self._closed:
            raise EngineError("engine is closed", "ENGINE_CLOSED")

    # ------------------------------------------------------------------ writes
    def apply(self, changes: list[dict]) -> int:
        # The write lock serialises writers; the Whoosh write/commit (and its merges) run without
        # the read lock, so searches keep being answered from memory meanwhile.  Only the
        # in-memory mutation at the end holds the read lock.
        with self._write_lock:
            self._check_open()
            final: dict[str, tuple[dict, bytes, dict] | None] = {}
            flushed = False
            new_seq = self._applied_seq
            for i, c in enumerate(changes):
                try:
                    seq = int(c["seq"])
                    op = c["op"]
                except (KeyError, TypeError, ValueError) as e:
                    raise EngineError("bad change", "CHANGE_INVALID", [{"path": f"[{i}]", "message": "needs seq and op"}]) from e
                if seq <= new_seq:
                    continue  # already applied (idempotent replay) or out of order duplicate
                new_seq = seq
                if op == "flush":
                    flushed = True
                    final.clear()
                elif op == "upsert":
                    doc_id = str(c["id"])
                    doc = dict(c.get("doc") or {})
                    doc.setdefault(self.id_field, c["id"])
                    final[doc_id] = (doc, exact_bytes(orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)), {})
                elif op == "delete":
                    final[str(c["id"])] = None
                else:
                    raise EngineError(f"unknown op {op!r}", "CHANGE_INVALID", [{"path": f"[{i}].op", "message": "unknown op"}])
            if new_seq == self._applied_seq:
                return self._applied_seq
            mem = self._mem
            ops: list[tuple] = [("flush",)] if flushed else []
            for doc_id, entry in final.items():
                known = not flushed and doc_id in mem.id_to_slot  # memory mirrors what is submitted
                if entry is None:
                    if known:
                        ops.append(("delete", doc_id))
                else:
                    # analyse once, for Whoosh and memory: the Whoosh document goes pre-analysed
                    entry[2].update(mem.analyze(entry[0]))
                    ops.append(("update" if known else "add", doc_id,
                                self._whoosh_doc(doc_id, entry[0], entry[1], entry[2])))
            if self._persister is None:  # inline: commit before touching memory
                self._write_inline(ops, new_seq)
            else:
                self._persister.submit(self.path, self.mapping, self.language, ops, new_seq)
            with self._lock:
                if flushed:
                    mem.clear()
                for doc_id, entry in final.items():
                    if entry is None:
                        mem.delete(doc_id)
                    else:
                        mem.add(doc_id, entry[0], entry[1], entry[2])
                mem.finalize()
                self._applied_seq = new_seq
                if self._persister is None:
                    self._persisted_seq = new_seq
            return new_seq

    def _write_inline(self, ops: list[tuple], new_seq: int) -> None:
        w = _fast_writer(self._ix)
        try:
            for op in ops:
                if op[0] == "flush":
                    w.delete_by_query(Every())
                elif op[0] == "delete":
                    w.delete_by_term("docid", op[1])
                elif op[0] == "update":
                    w.update_document(**op[2])
                else:
                    w.add_document(**op[2])
            w.update_document(docid=META_ID, meta=self._meta_blob(new_seq))
            w.commit(mergetype=merge_tiered)
        except BaseException:
            with contextlib.suppress(Exception):
                w.cancel()
            raise

    @property
    def persisted_seq(self) -> int:
        """The sequence committed to disk (what a reopened shard starts from); ``<= applied_seq``."""
        if self._persister is not None and not self._closed:
            seq = self._persister.persisted(self.path)
            if seq is not None:
                self._persisted_seq = max(self._persisted_seq, seq)
            elif not self._persister.pending(self.path):
                self._persisted_seq = max(self._persisted_seq, self._applied_seq)
        return self._persisted_seq

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every applied change is committed to disk; returns :attr:`persisted_seq`."""
        with self._write_lock:
            self._check_open()
            self._wait_persisted(timeout)
            return self._persisted_seq

    def _wait_persisted(self, timeout: float | None = None) -> None:
        if self._persister is not None:
            seq = self._persister.wait(self.path, timeout)
            if seq is not None:
                self._persisted_seq = max(self._persisted_seq, seq)
            if self._persisted_seq < self._applied_seq:  # nothing was pending: all committed
                self._persisted_seq = self._applied_seq

    # ------------------------------------------------------------------ reads
    def get(self, doc_id: str) -> dict | None:
        with self._lock:
            self._check_open()
            slot = self._mem.id_to_slot.get(str(doc_id))
            if slot is None:
                return None
            doc = self._mem.document(slot)
            if doc is not None:
                for f in self._retrievable_drop:
                    doc.pop(f, None)
            return doc

    def close(self, snapshot_memory: bool = True) -> None:
        """Close the shard; waits until every applied change is committed to disk, then (unless
        told not to: the shard is about to be deleted) saves the memory snapshot."""
        with self._write_lock, self._lock:
            if not self._closed:
                self._closed = True
                try:
                    if self._persister is not None:
                        self._persister.release(self.path)
                        self._persisted_seq = self._applied_seq
                    # every applied change is on disk now: the next open can skip the rebuild
                    if snapshot_memory:
                        snapshot.save(self.path, self._mem, self._applied_seq, self.mapping, self.language)
                finally:
                    with contextlib.suppress(Exception):
                        self._ix.close()

    def memory_bytes(self) -> int:
        """Rough size of the in-memory structures (for monitoring)."""
        return self._mem.memory_bytes()

    def search(self, query: dict, wait: bool = True) -> dict:
        """The answer to ``query``; with ``wait=False``, :class:`ShardBusy` instead of waiting for
        a batch being applied to memory (a caller on an event loop retries on a thread)."""
        if not self._lock.acquire(blocking=wait):
            raise ShardBusy(str(self.path))
        try:
            self._check_open()
            return self._search(query or {})
        finally:
            self._lock.release()

    # ------------------------------------------------------------------ search
    def _search(self, query: dict) -> dict:
        """Evaluated over the query's candidates (``cands``: sorted live slots that can match) -
        every array below is aligned with them, so the cost follows the matches, not the shard.

        ``timeoutMs``: past it, :class:`SearchTimeout` at the next check between stages (filter
        clauses, word clauses, facets, hits), so the work stops there."""
        deadline = Deadline(query.get("timeoutMs"))
        mem = self._mem
        n = mem.n
        q = query.get("q") or ""
        if not isinstance(q, str):
            raise EngineError("q must be a string", "QUERY_INVALID", [{"path": "q", "message": "must be a string"}])
        fields_cfg = query.get("fields") or {f: {"weight": 1} for f in mem.searchable}
        for fname in fields_cfg:
            spec = self.fields.get(fname)
            if spec is None or not spec.searchable:
                raise EngineError(f"field {fname!r} is not searchable", "FIELD_NOT_SEARCHABLE",
                                  [{"path": f"fields.{fname}", "message": "field is not searchable"}])
        fields_cfg = {f: (c or {}) for f, c in fields_cfg.items()}
        operator = (query.get("operator") or "and").lower()
        limit = max(0, int(query.get("limit", DEFAULT_LIMIT) if query.get("limit") is not None else DEFAULT_LIMIT))
        offset = max(0, int(query.get("offset") or 0))

        filters = compile_filters(mem, query.get("filters"), self.id_field, deadline)
        excl = None
        if query.get("excludeIds"):
            excl = np.ones(n, dtype=bool)
            slots = [mem.id_to_slot.get(str(i)) for i in query["excludeIds"]]
            slots = [s for s in slots if s is not None]
            if slots:
                excl[np.asarray(slots, dtype=np.int64)] = False
        restrict = [m for _, m in filters] + ([excl] if excl is not None else [])
        base = and_masks(n, restrict) if restrict else None  # dense; gathered at the candidates

        relaxed = False
        dropped: list[str] = []
        matched_terms: set[str] = set()
        deadline.check()
        clauses, field_clauses = self._clauses(q, query, fields_cfg, deadline) if q.strip() else ([], {})
        if clauses:
            plans = plan_clauses(mem, clauses, fields_cfg, field_clauses)
            deadline.check()
            cands = candidate_slots(mem, plans, any_clause=operator == "or")
            deadline.check()
            sc = score_plans(mem, plans, cands, deadline=deadline)
            cm = [s > 0 for s in sc.clause_scores]
            kept = list(range(len(clauses)))
            if operator == "or":
                match = np.logical_or.reduce(cm)
            else:
                match = and_masks(len(cands), cm)
                inbase = None if base is None else base[cands]
                if query.get("relax", True) and len(clauses) > 1 and not and_masks(len(cands), [match, inbase]).any():
                    kept, cands = relax_clauses(mem, plans, base, deadline)
                    sc = score_plans(mem, plans, cands, deadline=deadline)
                    match = and_masks(len(cands), [sc.clause_scores[i] > 0 for i in kept])
                    if kept != list(range(len(clauses))):
                        relaxed = True
                        dropped = [clauses[i].word for i in range(len(clauses)) if i not in kept]
            matched_terms = sc.matched_terms
            score = np.zeros(len(cands), dtype=np.float32)
            for i in kept:
                score += sc.clause_scores[i]
            if len(kept) >= 2:
                wmax = max(float(c.get("weight", 1)) for c in fields_cfg.values())
                best = np.zeros(len(cands), dtype=np.float32)
                for fname, fc in fields_cfg.items():
                    hits = [sc.clause_field_hit[i].get(fname) for i in kept]
                    if any(h is None for h in hits):
                        continue
                    allhit = and_masks(len(cands), hits)  # type: ignore[arg-type]
                    np.maximum(best, allhit * np.float32(float(fc.get("weight", 1)) / wmax), out=best)
                score *= 1.0 + SAME_FIELD_BONUS * best
                # proximity on a fixed-size window of the best candidates
                pc = np.flatnonzero(match if base is None else match & base[cands])
                if len(pc) > PROXIMITY_WINDOW:
                    ps = score[pc]
                    kth = np.partition(ps, len(ps) - PROXIMITY_WINDOW)[len(ps) - PROXIMITY_WINDOW]
                    pc = pc[ps >= kth]
                deadline.check()
                prox = proximity_bonus(mem, q, cands[pc], fields_cfg)
                if prox is not None:
                    score[pc] *= 1.0 + PROXIMITY_BONUS * prox
        else:
            cands = np.flatnonzero(mem.live[:n])
            match = np.ones(len(cands), dtype=bool)
            score = np.ones(len(cands), dtype=np.float32)

        final = match if base is None else match & base[cands]
        if query.get("boosts"):  # popularity boosts
            score = score * self._boost_factor(query["boosts"])[cands]
        for bf in query.get("boostFilters") or ():
            m = and_masks(n, [x for _, x in compile_filters(mem, bf.get("filters"), self.id_field, deadline)])[cands]
            score = np.where(m, score * np.float32(max(0.0, 1.0 + float(bf.get("weight", 0)))), score).astype(np.float32)

        total = int(np.count_nonzero(final))
        facet_match = match if excl is None else match & excl[cands]
        deadline.check()
        facets_out = self._facets(query.get("facets") or (), cands, facet_match, filters, deadline)
        deadline.check()

        # ranking: positions into cands, ties broken by slot (cands is sorted)
        k = offset + limit
        pos = np.flatnonzero(final)
        sort = [s for s in (query.get("sort") or ()) if s]
        sort_keys = self._sort_keys(sort)
        if k == 0 or not len(pos):
            top = pos[:0]
        elif not sort_keys:
            s = score[pos]
            if k < len(pos):
                kth = np.partition(s, len(s) - k)[len(s) - k]
                above = pos[s > kth]
                ties = pos[s == kth]
                pos = np.concatenate((above, ties[: k - len(above)]))
            top = pos[np.lexsort((pos, -score[pos]))][:k]
        else:
            keys = [fn(cands[pos], score[pos]) for fn, _ in sort_keys]
            if k < len(pos):
                pk = keys[0]
                kth = np.partition(pk, k - 1)[k - 1]
                sel = pk <= kth
                pos = pos[sel]
                keys = [kk[sel] for kk in keys]
            top = pos[np.lexsort(tuple([pos, -score[pos], *keys[::-1]]))][:k]  # type: ignore[arg-type]
        top = top[offset:]

        hl_fields = [f for f in (query.get("highlight") or ()) if f not in self._retrievable_drop]
        retrieve = query.get("retrieve")
        hit_list: list[dict[str, Any]] = []
        for slot, slot_score in zip(cands[top].tolist(), score[top].tolist(), strict=True):
            # decoding a document holds the GIL throughout (~30 ms for 9 MB): not started when it
            # would end past the deadline (an event-loop attempt goes to a thread instead)
            deadline.check(len(mem.blobs[slot] or b"") / DECODE_BYTES_PER_SECOND)
            doc = mem.document(slot) or {}
            hl: dict[str, str] = {}
            for f in hl_fields:
                v = doc.get(f)
                if v is not None:
                    hl[f] = highlight_text(mem, v, matched_terms, f)
            out_doc = {k2: v2 for k2, v2 in doc.items() if k2 not in self._retrievable_drop}
            if retrieve is not None:
                keep = set(retrieve) | {self.id_field}
                out_doc = {k2: v2 for k2, v2 in out_doc.items() if k2 in keep}
            sv = [val(slot) for _, val in sort_keys] + [slot_score]
            hit_list.append({"id": mem.ids[slot], "score": slot_score, "document": out_doc,
                             "highlights": hl, "sortValues": sv})
        return {"total": total, "hits": hit_list, "facets": facets_out, "relaxed": relaxed, "droppedWords": dropped}

    def _clauses(self, q: str, query: dict, fields_cfg: dict[str, dict],
                 deadline: Deadline | None = None) -> tuple[list, dict[str, list]]:
        """The query's clauses in the index language, and per queried field whose analyzer
        differs, the clauses as that analyzer reads the query (built once per analyzer)."""
        mem = self._mem
        args = (query.get("typo") or {}, query.get("synonyms"), any(c.get("prefix", True) for c in fields_cfg.values()))
        deadline = deadline or Deadline(None)
        clauses = build_clauses(mem, q, *args, deadline=deadline)
        by_an: dict[int, list] = {id(mem.analyzer): clauses}
        field_clauses: dict[str, list] = {}
        for fname in fields_cfg:
            an = mem.field_an[fname]
            if an is not mem.analyzer:
                if id(an) not in by_an:
                    by_an[id(an)] = build_clauses(mem, q, *args, an=an, deadline=deadline)
                field_clauses[fname] = by_an[id(an)]
        return clauses, field_clauses

    def _boost_factor(self, boosts: list[dict]) -> np.ndarray:
        """``1 + sum(weight * modifier(value))`` per slot, cached until the shard changes."""
        mem = self._mem
        key = (mem.version, mem.n, orjson.dumps(boosts, option=orjson.OPT_SORT_KEYS))
        hit = self._boost_cache.get(key)
        if hit is not None:
            return hit
        n = mem.n
        factor = np.ones(n, dtype=np.float32)
        for b in boosts:
            fname = b.get("field")
            col = mem.num.get(str(fname))
            if col is None:
                raise EngineError(f"boost field {fname!r} has no numeric column", "FIELD_NOT_SORTABLE",
                                  [{"path": "boosts.field", "message": "needs a sortable/filterable numeric field"}])
            v = np.clip(np.nan_to_num(col[:n], nan=0.0), 0, None)
            mod = b.get("modifier", "none")
            if mod == "log1p":
                v = np.log1p(v)
            elif mod == "sqrt":
                v = np.sqrt(v)
            factor += (float(b.get("weight", 1)) * v).astype(np.float32)
        if len(self._boost_cache) >= 8 or any(k[0] != mem.version for k in self._boost_cache):
            self._boost_cache.clear()
        self._boost_cache[key] = factor
        return factor

    def _sort_keys(self, sort: list) -> list[tuple[Any, Any]]:
        mem = self._mem
        out: list[tuple[Any, Any]] = []
        for i, item in enumerate(sort):
            if isinstance(item, str):
                fname, _, d = item.partition(":")
                direction = d or "asc"
            else:
                fname, direction = item[0], (item[1] if len(item) > 1 else "asc")
            direction = str(direction).lower()
            if direction not in ("asc", "desc"):
                raise EngineError("bad sort direction", "SORT_INVALID", [{"path": f"sort[{i}]", "message": "asc or desc"}])
            desc = direction == "desc"
            if fname in ("_score", "_relevance", "relevance"):
                out.append(((lambda c, s, desc=desc: (-s if desc else s).astype(np.float64)),
                            (lambda slot: None)))
                continue
            spec = self.fields.get(fname)
            if spec is None or not spec.sortable:
                raise EngineError(f"field {fname!r} is not sortable", "FIELD_NOT_SORTABLE",
                                  [{"path": f"sort[{i}]", "message": "field is not sortable"}])
            if spec.is_numeric:
                col = mem.num[fname]

                def key(c, s, col=col, desc=desc):
                    v = col[c]
                    v = -v if desc else v.copy()
                    v[np.isnan(v)] = np.inf
                    return v

                def val(slot, col=col, spec=spec):
                    x = float(col[slot])
                    if math.isnan(x):
                        return None
                    return int(x) if spec.type == "integer" else x

                out.append((key, val))
            elif spec.type == "boolean":
                colb = mem.boo[fname]

                def keyb(c, s, colb=colb, desc=desc):
                    v = colb[c].astype(np.float64)
                    v = -v if desc else v
                    v[colb[c] < 0] = np.inf
                    return v

                out.append((keyb, lambda slot, colb=colb: None if colb[slot] < 0 else bool(colb[slot])))
            else:
                first = mem.kw_first[fname]
                rank = mem.kw_rank(fname)

                def keyk(c, s, first=first, rank=rank, desc=desc):
                    f = first[c]
                    v = np.where(f >= 0, rank[np.maximum(f, 0)] if len(rank) else 0, 0).astype(np.float64)
                    v = -v if desc else v
                    v[f < 0] = np.inf
                    return v

                vals = mem.kw_vals[fname]
                out.append((keyk, lambda slot, first=first, vals=vals: vals[first[slot]] if first[slot] >= 0 else None))
        return out

    def _facets(self, facets: Any, cands: np.ndarray, match: np.ndarray, filters: list,
                deadline: Deadline | None = None) -> dict:
        """Counts over the matching candidates; each facet ignores the filters on its own field
        (disjunctive counts)."""
        mem = self._mem
        out: dict[str, Any] = {}
        for i, fdef in enumerate(facets):
            if deadline is not None:
                deadline.check()
            if isinstance(fdef, str):
                fdef = {"field": fdef, "type": "terms"}
            fname = fdef.get("field")
            spec = self.fields.get(fname)
            if spec is None or not spec.facetable:
                raise EngineError(f"field {fname!r} is not facetable", "FIELD_NOT_FACETABLE",
                                  [{"path": f"facets[{i}].field", "message": "field is not facetable"}])
            mask = match.copy()
            for f, m in filters:
                if f != fname:
                    mask &= m[cands]
            docs = cands[mask]
            ftype = fdef.get("type", "terms")
            if ftype == "range":
                if not spec.is_numeric:
                    raise EngineError("range facet on non-numeric field", "FACET_INVALID",
                                      [{"path": f"facets[{i}].type", "message": "range needs a numeric/date field"}])
                vals = mem.num[fname][docs]
                vals = vals[~np.isnan(vals)]
                counts = []
                for r in fdef.get("ranges") or ():
                    m = np.ones(len(vals), dtype=bool)
                    if r.get("from") is not None:
                        m &= vals >= _num(r["from"], spec.type)
                    if r.get("to") is not None:
                        m &= vals < _num(r["to"], spec.type)
                    counts.append(int(np.count_nonzero(m)))
                out[fname] = counts
                continue
            if spec.type in ("keyword", "keyword[]", "text"):
                vals_list = mem.kw_vals[fname]
                cnt = np.bincount(mem.kw_ordinals(fname, docs), minlength=len(vals_list))
                nz = np.flatnonzero(cnt)
                out[fname] = dict(zip([vals_list[j] for j in nz.tolist()], cnt[nz].tolist(), strict=True))
            elif spec.type == "boolean":
                col = mem.boo[fname][docs]
                res = {}
                t, f_ = int(np.count_nonzero(col == 1)), int(np.count_nonzero(col == 0))
                if t:
                    res["true"] = t
                if f_:
                    res["false"] = f_
                out[fname] = res
            else:
                col = mem.num[fname][docs]
                col = col[~np.isnan(col)]
                u, c = np.unique(col, return_counts=True)
                out[fname] = {_fmt_num(x, spec.type): int(y) for x, y in zip(u.tolist(), c.tolist(), strict=False)}
        return out


def _is_whoosh_file(name: str) -> bool:
    """Files of the default Whoosh index ("MAIN"): ``_MAIN_<gen>.toc``, ``MAIN_<id>.seg``,
    ``MAIN_WRITELOCK`` and the like."""
    return name.startswith(("_MAIN_", "MAIN_", "MAIN."))


def _num(v: Any, ftype: str) -> float:
    from .memindex import to_number

    x = to_number(v, ftype)
    if math.isnan(x):
        raise EngineError("bad range bound", "FACET_INVALID", [{"path": "facets.ranges", "message": "not a number/date"}])
    return x


def _fmt_num(x: float, ftype: str) -> str:
    if ftype == "integer" or float(x).is_integer():
        return str(int(x))
    return repr(float(x))
