"""A shard's Whoosh index on disk: its schema, documents and meta document, and the writer.

This is the one module of the engine that touches Whoosh's index, and the one place that patches
Whoosh internals (``SegmentWriter``'s posting pool, ``add_document`` and ``_flush_segment``, the
``W3PostingsWriter``'s block buffers, the pool swap in :func:`merge_tiered`), for write speed:
Whoosh's writer spends its time in Python per posting. Written against ``whoosh3==3.54.0`` (pinned
in ``pyproject.toml``); a Whoosh upgrade must be checked against :func:`fast_writer`,
:func:`_write_postings` and :func:`merge_tiered`.

Format
------
* Every document is a Whoosh document: ``docid`` (unique, indexed: updates and deletes find the
  old version by it) and ``src`` (the whole document as orjson bytes, stored).
* No text or keyword postings: queries never read Whoosh (the engine answers from memory, built
  from ``src`` on open), so postings of the searchable fields would only be written, merged and
  never read.  They were ~90 % of the write cost (measured on a 150k-document shard fed in
  batches of 833: ~0.9-1 ms of helper CPU per document with them, ~0.1 ms without), and the helper
  process is what a large upload waited for (``apply`` blocks past ``MAX_PENDING_DOCS``).  Indexes written with them (``t_<field>`` / ``k_<field>`` fields, classes
  ``ShopText`` and ``ShopTokenizer`` of ``analysis.py``, which their pickled schema imports) still
  open; new documents simply leave those fields empty.
* A meta document (``META_ID``) holds ``appliedSeq``, the mapping and the language. It is written
  in the same commit as the changes, so the sequence on disk can never run ahead of (or behind)
  the documents.

Writes without per-posting Python where possible: an in-memory posting pool (:class:`_ListPool`),
field lengths captured while documents are added (:class:`_Lengths`), and posting lists written
term by term into Whoosh's own block writer (:func:`_write_postings`): the same files as Whoosh's
``SegmentWriter``. Segments merge by size tiers up to a cap (:func:`merge_tiered`), never the whole
index, by copying documents' stored bytes as they are (:func:`_copy_segment`); the meta document
is replaced in the last segment (:func:`_delete_meta`): a commit's cost does not grow with the shard.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import zlib
from array import array
from itertools import groupby
from operator import itemgetter
from pickle import loads
from typing import Any

import orjson
from whoosh import fields as wf
from whoosh import index as windex
from whoosh.codec.whoosh3 import STORED_COLUMN, W3Codec, W3TermInfo
from whoosh.columns import VarBytesColumn
from whoosh.query import Every
from whoosh.reading import SegmentReader
from whoosh.util.numeric import byte_to_length, length_to_byte
from whoosh.writing import PostingPool, SegmentWriter

# whoosh3 3.54.0's ``W3PostingsWriter.finish_postings`` inlines a short posting list by calling
# ``terminfo.set_inline``, a method ``W3TermInfo`` spells ``set_inlined``: any ``inlinelimit`` above
# Whoosh's default 1 raised AttributeError.  Readers of inlined postings are Whoosh's own.
if not hasattr(W3TermInfo, "set_inline"):
    W3TermInfo.set_inline = W3TermInfo.set_inlined  # type: ignore[attr-defined]

META_ID = "__shopsearch_meta__"
MERGE_FACTOR = 10
# Segments per tier before the tier is merged.  Whoosh merges are pure Python (a merge rewrites
# every posting of its segments: for a 50k-document shard fed in batches of 2,500, merging at 10
# segments per tier doubled the total write cost).  Queries never read Whoosh, so many segments
# only cost a little on reopen and on deletes/updates (one term lookup per segment).
MERGE_AT = 30
# Segments of this many live documents are not merged any more (see :func:`merge_tiered`) …
MERGE_CAP = 25_000
# … unless this share of their documents was deleted.
MAX_DEAD_SHARE = 0.3

Job = tuple[list[tuple], int]
"""``(ops, seq)``: ops ``("flush",)``, ``("delete", id)``, ``("add", id, src)``, ``("update", id, src)``
(``src``: the document's orjson bytes), then the shard has applied everything up to ``seq``."""


# ---------------------------------------------------------------------------- schema, documents
def make_schema() -> wf.Schema:
    return wf.Schema(docid=wf.ID(stored=True, unique=True), src=wf.STORED(), meta=wf.STORED())


def meta_blob(seq: int, mapping: dict, language: str) -> bytes:
    return orjson.dumps({"appliedSeq": seq, "mapping": mapping, "language": language})


def is_whoosh_file(name: str) -> bool:
    """Files of the default Whoosh index ("MAIN"): ``_MAIN_<gen>.toc``, ``MAIN_<id>.seg``,
    ``MAIN_WRITELOCK`` and the like."""
    return name.startswith(("_MAIN_", "MAIN_", "MAIN."))


# ---------------------------------------------------------------------------- open, read, rewrite
def exists(path: str) -> bool:
    return bool(windex.exists_in(path))


def open_index(path: str) -> Any:
    return windex.open_dir(path)


def create_index(path: str, schema: wf.Schema) -> Any:
    return windex.create_in(path, schema)


def read_meta(ix: Any) -> dict:
    """The meta document's content (``{}`` when there is none)."""
    with ix.searcher() as s:
        meta = s.document(docid=META_ID)
    return orjson.loads(meta["meta"]) if meta else {}


def stored_documents(ix: Any) -> tuple[dict | None, list[tuple[str, bytes]]]:
    """The meta document's content (``None`` when there is none) and every live ``(id, src)``."""
    stored_meta: dict | None = None
    docs: list[tuple[str, bytes]] = []
    with ix.searcher() as s:
        for _docnum, sf in s.reader().iter_docs():
            did = sf.get("docid")
            if did == META_ID:
                stored_meta = orjson.loads(sf["meta"])
            elif did is not None and sf.get("src") is not None:
                docs.append((did, sf["src"]))
    return stored_meta, docs


def rewrite(path: str, schema: wf.Schema, docs: list[tuple[str, bytes]], meta: bytes) -> Any:
    """Replace the index in ``path`` by one with ``schema`` holding ``docs`` and ``meta`` (a new
    mapping or language); other files in ``path`` are left alone. Returns the reopened index."""
    tmp = path + ".rewrite"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    nix = windex.create_in(tmp, schema)
    w = nix.writer(limitmb=256)
    for did, blob in docs:
        w.add_document(docid=did, src=blob)
    w.add_document(docid=META_ID, meta=meta)
    w.commit()
    for fn in os.listdir(path):  # only Whoosh's files: others may keep theirs here
        p = os.path.join(path, fn)
        if os.path.isfile(p) and is_whoosh_file(fn):
            os.remove(p)
    for fn in os.listdir(tmp):
        shutil.move(os.path.join(tmp, fn), os.path.join(path, fn))
    shutil.rmtree(tmp, ignore_errors=True)
    return windex.open_dir(path)


# ---------------------------------------------------------------------------- commits
def commit_jobs(ix: Any, jobs: list[Job], mapping: dict, language: str) -> None:
    """Apply ``jobs`` to ``ix`` in one writer and one commit whose meta document carries the last
    job's sequence (group commit: the write-behind helper takes every job queued for a shard)."""
    # Net effect of the group first: Whoosh deletes (delete_by_term, update_document, the flush's
    # delete_by_query) only reach committed segments, never documents added by the same writer.
    flushed = False
    final: dict[str, bytes | None] = {}
    known: dict[str, bool] = {}  # id -> present in the committed index (ops say it per job)
    for ops, _seq in jobs:
        for op in ops:
            kind = op[0]
            if kind == "flush":
                flushed = True
                final.clear()
                known.clear()
                continue
            doc_id = op[1]
            if doc_id not in final and doc_id not in known:
                known[doc_id] = kind != "add" and not flushed
            final[doc_id] = None if kind == "delete" else op[2]
    w = fast_writer(ix)
    try:
        if flushed:
            w.delete_by_query(Every())
        for doc_id, src in final.items():
            was = known.get(doc_id, False)
            if src is None:
                if was:
                    w.delete_by_term("docid", doc_id)
                continue
            if was:
                w.update_document(docid=doc_id, src=src)
            else:
                w.add_document(docid=doc_id, src=src)
        _delete_meta(w)
        w.add_document(docid=META_ID, meta=meta_blob(jobs[-1][1], mapping, language))
        w.commit(mergetype=merge_tiered)
    except BaseException:
        with contextlib.suppress(Exception):
            w.cancel()
        raise


def _delete_meta(w: Any) -> None:
    """Delete the live meta document.  Every commit adds it to the segment that commit writes, which
    Whoosh puts last in the segment list (after the segments the merge policy kept), so it is
    looked up in that segment only: ``update_document`` would open a reader on every segment of the
    shard each commit (a cost per commit growing with the segment count).  Anything else (an index
    written otherwise, a flush that deleted it already) falls back to the search of every segment."""
    if w.segments:
        reader = SegmentReader(w.storage, w.schema, w.segments[-1])
        try:
            found = [d for d in _docnums(reader, META_ID) if not reader.is_deleted(d)]
        finally:
            reader.close()
        if found:
            base = w._doc_offsets[-1]
            for d in found:
                w.delete_document(base + d)
            return
    w.delete_by_term("docid", META_ID)


def _docnums(reader: Any, doc_id: str) -> list[int]:
    if ("docid", doc_id) not in reader:
        return []
    return list(reader.postings("docid", doc_id).all_ids())


# ---------------------------------------------------------------------------- the fast writer
class _ListPool:
    """Whoosh posting pool kept in memory.  ``terms`` holds the postings of documents added by
    :func:`fast_writer`'s ``add_document``: per (field, term bytes) the docnums, weights and value
    bytes, already in docnum order, so a flush sorts the distinct terms only.  ``items`` takes
    Whoosh's generic posting tuples (``add`` is ``list.append``; Whoosh's ``PostingPool`` does size
    bookkeeping per posting).  A merge that cannot copy segments as they are (older indexes with
    text postings) switches to a spilling ``PostingPool`` (see :func:`_spill_pool`) to keep memory
    bounded; copied segments file their id postings here (at most MERGE_CAP documents a segment)."""

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


def _file_posting(
    terms: dict[tuple[str, bytes], Any], key: tuple[str, bytes], docnum: int, weight: float, vbytes: bytes
) -> None:
    """One posting filed in memory under its (field, term), written sorted at commit."""
    p: Any = terms.get(key)
    if p is None:
        p = terms[key] = ([], [], [])
    p[0].append(docnum)
    p[1].append(weight)
    p[2].append(vbytes)


def fast_writer(ix: Any, limitmb: int = 128) -> Any:
    """A Whoosh ``SegmentWriter`` writing the same files, with an in-memory posting pool, the field
    lengths captured as documents are added (see :class:`_ListPool`, :class:`_Lengths`) and an
    ``add_document`` that files terms straight into per-term posting lists."""
    # zlib level 1 for posting blocks (readers honour each block's own level): ~2x cheaper than
    # Whoosh's default 3 for a few % more bytes.  inlinelimit 2: a term with one posting (every id)
    # is kept in the terms table instead of a posting block of its own (~10 % of the write cost, 6 %
    # fewer bytes; readers take both forms, per term)
    w: Any = SegmentWriter(ix, limitmb=limitmb, codec=W3Codec(compression=1, inlinelimit=2))  # patched below
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

    def add_document(**fields: Any) -> None:
        # SegmentWriter.add_document for documents without boosts, vectors, spelling or columns
        if not simple or any(k.startswith("_") for k in fields):
            return type(w).add_document(w, **fields)
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
                scorable = field.scorable
                for tbytes, freq, weight, vbytes in field.index(value):
                    if scorable:
                        length += freq
                    if terms is not None:
                        _file_posting(terms, (fieldname, tbytes), docnum, weight, vbytes)
                    else:
                        w.pool.add((fieldname, tbytes, docnum, weight, vbytes))
            pdw.add_field(fieldname, field, value if field.stored else None, length)
        pdw.finish_doc()
        w._added = True
        w.docnum += 1
        return None

    w.add_document = add_document

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

    w._flush_segment = flush_segment
    return w


def merge_tiered(writer: Any, segments: list) -> list:
    """Whoosh merge policy: segments are put in size tiers (powers of MERGE_FACTOR of their live
    document count); a tier holding MERGE_AT segments is merged, as many of its smallest as fit in
    MERGE_CAP documents (at least two).  Whoosh's default policy regularly re-merges the whole
    index (a 16 s commit at 17k documents); tiers alone merged ever larger segments as the shard
    grew (30 segments of a few thousand documents: one commit rewriting ~60k), so the merge cost
    per document grew with the shard.  With the cap a document is rewritten at most once per tier
    below MERGE_CAP, however large the shard: segments of MERGE_CAP and more stay as they are
    (queries never read Whoosh; a segment costs a term lookup per deletion and a little on open).
    Segments with many deletions drop into a lower tier by live count and are merged sooner; a
    large one that lost more than MAX_DEAD_SHARE of its documents is rewritten on its own, one
    with no live document left is dropped."""
    tiers: dict[int, list] = {}
    keep: list = []
    merge: list = []
    for seg in segments:
        live = seg.doc_count()
        if not live:
            continue  # every document deleted: the segment is dropped
        if live >= MERGE_CAP:
            if seg.doc_count_all() - live > MAX_DEAD_SHARE * seg.doc_count_all():
                merge.append(seg)
            else:
                keep.append(seg)
            continue
        tier = int(math.log(max(live, 1), MERGE_FACTOR))
        tiers.setdefault(tier, []).append(seg)
    for _tier, segs in sorted(tiers.items()):
        if len(segs) < MERGE_AT:
            keep.extend(segs)
            continue
        segs = sorted(segs, key=lambda seg: seg.doc_count())
        total = n = 0
        while n < len(segs) and (n < 2 or total + segs[n].doc_count() <= MERGE_CAP):
            total += segs[n].doc_count()
            n += 1
        merge.extend(segs[:n])
        keep.extend(segs[n:])
    for seg in merge:
        reader = SegmentReader(writer.storage, writer.schema, seg)
        try:
            if not _copy_segment(writer, reader):
                _spill_pool(writer)
                writer.add_reader(reader)
        finally:
            reader.close()
    return keep


def _spill_pool(writer: Any) -> None:
    """Whoosh's generic merge path: postings go through a spilling ``PostingPool`` (bounded memory)."""
    if isinstance(writer.pool, _ListPool):
        pending = writer.pool
        writer.pool = PostingPool(writer._tempstorage, writer.newsegment, limitmb=128)
        for item in pending.tuples():
            writer.pool.add(item)


def _copy_segment(writer: Any, reader: Any) -> bool:
    """Merge ``reader``'s live documents into ``writer`` without re-encoding them: each document's
    stored fields are copied as the compressed bytes they are stored as (Whoosh's ``add_reader``
    unpickles, re-pickles and re-compresses every one, most of a merge's cost), and its ``docid``
    posting is filed like :func:`fast_writer`'s ``add_document`` does.  Only for segments of this
    module's schema whose one indexed field is ``docid`` (no lengths, vectors or columns) and while
    the writer's pool is the in-memory one; False (nothing done) otherwise."""
    pool = writer.pool
    if not isinstance(pool, _ListPool) or set(reader.indexed_field_names()) - {"docid"}:
        return False
    field = dict(writer.schema.items()).get("docid")
    perdoc = reader._perdoc
    if field is None or field.scorable or field.vector or field.column_type or not hasattr(perdoc, "_cached_reader"):
        return False
    stored = perdoc._cached_reader("_stored", STORED_COLUMN)
    pdw = writer.perdocwriter
    if stored is None or set(pdw._colwriters) != {"_stored"}:
        return False
    raw_get = stored._child  # CompressedBytesColumn.Reader under the pickle layer
    target = pdw._get_column("_stored")._child  # CompressedBytesColumn.Writer under the pickle layer
    terms = pool.terms
    for docnum in reader.all_doc_ids():
        raw = VarBytesColumn.Reader.__getitem__(raw_get, docnum)
        docnum_new = writer.docnum
        pdw.start_doc(docnum_new)
        if raw:
            VarBytesColumn.Writer.add(target, docnum_new, raw)
            doc_id = loads(zlib.decompress(raw)).get("docid")
            if doc_id is not None:
                for tbytes, _freq, weight, vbytes in field.index(doc_id):
                    _file_posting(terms, ("docid", tbytes), docnum_new, weight, vbytes)
        pdw.finish_doc()
        writer.docnum += 1
    writer._added = True
    return True
