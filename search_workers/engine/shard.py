"""ShardEngine: one shard of one index - a Whoosh index on disk (``whoosh_store.py``), columnar
numpy in memory (``memindex.py``), searched by ``search.py``.

* **Changes.**  ``apply`` takes :class:`~shared.contract.Change` objects sorted by ``seq``;
  changes at or below ``applied_seq`` are skipped (a replay after a crash is harmless).  ``upsert``
  (a document whose body lacks the id field gets it from the change's ``id``), ``delete``,
  ``flush`` (every document before it is gone) and ``advance`` (nothing changes, the applied
  sequence moves to its ``seq``).
* **Write-behind persistence** (``persist.py``).  ``apply`` updates memory (search reflects the
  change when it returns) and queues the changes to a helper process that writes them to Whoosh
  (group commits whose meta document carries the last job's sequence).  ``applied_seq`` is what
  memory holds; ``persisted_seq`` what is on disk, i.e. what a reopened shard (after a crash)
  starts from and the control plane re-feeds after.  ``flush()`` waits for the disk; ``close()``
  flushes.  ``apply`` waits when more than ``persist.MAX_PENDING_DOCS`` documents are not yet
  committed.  ``SHOPSEARCH_ENGINE_PERSIST=inline``: one Whoosh commit inside each ``apply``.
* **A disk that refuses writes** (``PERSIST_FAILED``: permissions, a full disk, the helper gone)
  does not stop the shard: memory keeps taking changes (search stays current; the database holds
  every change anyway), nothing more is sent to the disk, :attr:`persist_error` says why, and a
  repair thread retries with backoff (:data:`REPAIR_FIRST_S` doubling to :data:`REPAIR_MAX_S`)
  to rewrite the shard's files from memory at the applied sequence.  Until it succeeds a crash
  reopens the files at the last commit that made it, and the control plane re-feeds the rest.
* **Memory-only mode** (``durable=False``): no Whoosh index, no persister, no snapshot, nothing
  written under ``path`` (not even the directory).  ``applied_seq`` starts at 0; ``persisted_seq``
  stays 0 (nothing would survive a restart: a reopened replica starts from 0 and must be fed
  every change again).  ``flush()`` returns 0 at once and ``close()`` only marks the engine
  closed; ``apply``/``search``/``get`` behave exactly as in durable mode.
* **Refresh strategy: incremental from ``apply``, full build only on open.**  ``apply`` feeds the
  changed documents (already in hand) to the MemIndex: a replaced/deleted document's slot is
  marked dead, new versions are appended, and only the touched terms' posting arrays are
  concatenated.  A 500-document commit into a 50k shard costs ~0.1-0.3 s of analysis, never a
  rebuild.  Dead slots are compacted (vectorised, order-preserving) when they exceed 30 %.  On
  open the MemIndex comes from the memory snapshot a clean close left (``snapshot.py``), else it
  is built once from the stored ``src`` of every live Whoosh document (~1-3 s per 50k products);
  a mapping or language other than the one on disk rewrites the Whoosh index first.
* **Stored documents** are kept in memory as orjson bytes (``get`` and hits decode only the final
  top hits); ~0.7 KB per product -> ~70 MB per 100k.  Postings ~ 8 bytes per (term, field, doc).
  Measured for 100k Best Buy-like products in 2 shards: see ``benchmarks/engine_bench.py``.
* **Threading.**  A write lock serialises ``apply``; a read lock guards the in-memory structures.
  The Whoosh write, commit and segment merges run outside the read lock (and, by default, in
  another process), so a thread-pooled or async host keeps answering searches during a long
  commit (a plain Ray actor runs one call at a time anyway).
* **Write cost**: ``apply`` itself (analysis + memory) is ~0.15-0.2 ms per document; the Whoosh
  write (stored documents and ids only, see ``whoosh_store.py``) runs in the helper process, i.e.
  on another core than the process answering searches and feeding the shards.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence

import orjson

from shared.contract import Answer, Change, Query

from . import snapshot, whoosh_store
from .analysis import get_analyzer
from .errors import EngineError, ShardBusy
from .mapping import compile_mapping, validate_mapping
from .memindex import MemIndex
from .persist import get_persister, persist_mode
from .search import ShardSearch
from .values import exact_bytes

log = logging.getLogger("shopsearch.engine")

#: the first retry of a shard's files after the disk refused a write, doubled up to ``REPAIR_MAX_S``
REPAIR_FIRST_S = 0.25
REPAIR_MAX_S = 4.0


class ShardEngine:
    def __init__(self, path: str | os.PathLike, mapping: dict, language: str = "en",
                 durable: bool = True) -> None:
        validate_mapping(mapping, language)
        self.path = os.fspath(path)
        self.mapping = mapping
        self.language = language
        self.durable = durable
        self.id_field, self.fields = compile_mapping(mapping)
        self._lock = threading.RLock()  # in-memory structures (search, get, mutation)
        self._write_lock = threading.RLock()  # one writer at a time (Whoosh + memory)
        self._closed = False
        self._applied_seq = 0
        self._schema = whoosh_store.make_schema()
        self._mem = MemIndex(self.fields, get_analyzer(language))
        self._hidden = frozenset(f for f, s in self.fields.items() if not s.retrievable)
        self._search = ShardSearch(self._mem, self.fields, self.id_field, self._hidden)
        self._persisted_seq = 0
        self._persister = None
        self._ix = None
        # why the disk refused this shard's last write (None: persisting works); see the repair
        self._persist_error: str | None = None
        self._repairing = False
        self._repair_lock = threading.Lock()  # the two above (never waits for the others)
        if not durable:
            return
        os.makedirs(self.path, exist_ok=True)
        if whoosh_store.exists(self.path):
            self._ix = whoosh_store.open_index(self.path)
            self._load()
        else:
            self._ix = whoosh_store.create_index(self.path, self._schema)
        self._persisted_seq = self._applied_seq
        self._persister = get_persister() if persist_mode() != "inline" else None

    # ------------------------------------------------------------------ open
    def _load(self) -> None:
        info = whoosh_store.read_meta(self._ix)
        seq = int(info.get("appliedSeq", 0))
        # the snapshot must describe this very Whoosh state: same sequence, and Whoosh itself
        # written for the mapping and language asked for (else the rewrite below must run)
        on_disk_as_asked = info.get("mapping") == self.mapping and info.get("language") == self.language
        if on_disk_as_asked and snapshot.load(self.path, self._mem, seq, self.mapping, self.language):
            self._applied_seq = seq
            return
        snapshot.discard(self.path)
        stored_meta, docs = whoosh_store.stored_documents(self._ix)
        if stored_meta:
            self._applied_seq = int(stored_meta.get("appliedSeq", 0))
        same = (stored_meta is not None and stored_meta.get("mapping") == self.mapping
                and stored_meta.get("language") == self.language)
        if not same and (docs or stored_meta):
            # mapping or language changed: rewrite the Whoosh index with the new schema
            self._ix = whoosh_store.rewrite(self.path, self._schema, docs, self._meta_blob(self._applied_seq))
        mem = self._mem
        for did, blob in docs:
            mem.add(did, orjson.loads(blob), blob)
        mem.finalize()

    def _meta_blob(self, seq: int) -> bytes:
        return whoosh_store.meta_blob(seq, self.mapping, self.language)

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
    def apply(self, changes: Sequence[Change]) -> int:
        """Apply ``changes`` (sorted by ``seq``); returns :attr:`applied_seq`."""
        # The write lock serialises writers; the Whoosh write/commit (and its merges) run without
        # the read lock, so searches keep being answered from memory meanwhile.  Only the
        # in-memory mutation at the end holds the read lock.
        with self._write_lock:
            self._check_open()
            final: dict[str, tuple[dict, bytes, dict] | None] = {}
            flushed = False
            new_seq = self._applied_seq
            for i, c in enumerate(changes):
                if c.seq <= new_seq:
                    continue  # already applied (idempotent replay) or out of order duplicate
                op = c.op
                if op in ("upsert", "delete") and c.id is None:
                    raise EngineError(f"{op} without an id", "CHANGE_INVALID", [{"path": f"[{i}].id", "message": "needs an id"}])
                if op == "flush":
                    flushed = True
                    final.clear()
                elif op == "upsert":
                    doc_id = str(c.id)
                    doc = dict(c.doc or {})
                    doc.setdefault(self.id_field, c.id)
                    final[doc_id] = (doc, exact_bytes(orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)), {})
                elif op == "delete":
                    final[str(c.id)] = None
                elif op != "advance":
                    raise EngineError(f"unknown op {op!r}", "CHANGE_INVALID", [{"path": f"[{i}].op", "message": "unknown op"}])
                new_seq = c.seq
            if new_seq == self._applied_seq:
                return self._applied_seq
            mem = self._mem
            for entry in final.values():  # analysis outside the read lock: searches go on meanwhile
                if entry is not None:
                    entry[2].update(mem.analyze(entry[0]))
            written = [(doc_id, entry[0]) for doc_id, entry in final.items() if entry is not None]
            embedded = dict(zip([d for d, _ in written], mem.embed_batch([doc for _, doc in written]), strict=True)) \
                if mem.vec_fields else {}  # the built-in vectors too
            if self.durable:
                self._submit(final, flushed, new_seq)
            with self._lock:
                if flushed:
                    mem.clear()
                for doc_id, entry in final.items():
                    if entry is None:
                        mem.delete(doc_id)
                    else:
                        mem.add(doc_id, entry[0], entry[1], entry[2], embedded.get(doc_id))
                mem.finalize()
                self._applied_seq = new_seq
                if self.durable and self._persister is None and self._persist_error is None:
                    self._persisted_seq = new_seq
            return new_seq

    def _submit(self, final: dict[str, tuple[dict, bytes, dict] | None], flushed: bool, new_seq: int) -> None:
        """Hand the batch's Whoosh operations to the persister, or commit them inline; while the
        disk refuses writes, nothing (the repair writes memory's whole state)."""
        if self._persist_error is not None:
            return
        try:
            self._submit_ops(final, flushed, new_seq)
        except Exception as exc:  # noqa: BLE001 - any failure to persist: memory goes on, the repair follows
            self._failed(f"{type(exc).__name__}: {exc}")

    def _submit_ops(self, final: dict[str, tuple[dict, bytes, dict] | None], flushed: bool, new_seq: int) -> None:
        ids = self._mem.id_to_slot
        ops: list[tuple] = [("flush",)] if flushed else []
        for doc_id, entry in final.items():
            known = not flushed and doc_id in ids  # memory mirrors what is submitted
            if entry is None:
                if known:
                    ops.append(("delete", doc_id))
            else:
                ops.append(("update" if known else "add", doc_id, entry[1]))
        # no ops (advance, deletes of unknown ids): the commit still moves the sequence on disk
        if self._persister is None:  # inline: commit before touching memory
            whoosh_store.commit_jobs(self._ix, [(ops, new_seq)], self.mapping, self.language)
        else:
            self._persister.submit(self.path, self.mapping, self.language, ops, new_seq, self._failed)

    # ------------------------------------------------------------------ a disk that refuses writes
    @property
    def persist_error(self) -> str | None:
        """Why the shard's files are behind its memory (the disk refused a write), or None."""
        return self._persist_error

    def _failed(self, why: str) -> None:
        """A write to the disk failed (here or in the helper): stop sending, start the repair."""
        with self._repair_lock:
            if self._closed:
                return
            if self._persist_error is None:
                log.warning("persisting shard %s failed (%s): serving from memory, retrying", self.path, why)
            self._persist_error = why
            if self._repairing:
                return
            self._repairing = True
        threading.Thread(target=self._repair_loop, name="shard-repair", daemon=True).start()

    def _repair_loop(self) -> None:
        delay = REPAIR_FIRST_S
        started = time.monotonic()
        while True:
            time.sleep(delay)
            with self._write_lock:
                if self._closed:
                    return
                try:
                    self._rewrite_files()
                except Exception as exc:  # noqa: BLE001 - the disk still refuses: later
                    self._persist_error = f"{type(exc).__name__}: {exc}"
                else:
                    with self._repair_lock:
                        self._persist_error = None
                        self._repairing = False
                    log.warning("shard %s is persisted again (after %.1f s)", self.path, time.monotonic() - started)
                    return
            delay = min(delay * 2, REPAIR_MAX_S)

    def _rewrite_files(self) -> None:
        """Write memory's whole state as the shard's files, at the applied sequence (write lock held)."""
        if self._persister is not None:
            with contextlib.suppress(EngineError):  # forget the failed directory (here and in the helper)
                self._persister.release(self.path)
            self._persister = get_persister()
        mem = self._mem
        docs = [(doc_id, blob) for doc_id, slot in mem.id_to_slot.items() if (blob := mem.blobs.get(slot)) is not None]
        seq = self._applied_seq
        snapshot.discard(self.path)
        if self._ix is not None:
            with contextlib.suppress(Exception):
                self._ix.close()
        self._ix = whoosh_store.rewrite(self.path, self._schema, docs, self._meta_blob(seq))
        self._persisted_seq = seq

    @property
    def persisted_seq(self) -> int:
        """The sequence committed to disk (what a reopened shard starts from); ``<= applied_seq``."""
        if self._persist_error is not None:
            return self._persisted_seq
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
                for f in self._hidden:
                    doc.pop(f, None)
            return doc

    def search(self, query: Query, wait: bool = True) -> Answer:
        """The answer to ``query`` (see ``search.py``); with ``wait=False``, :class:`ShardBusy`
        instead of waiting for a batch being applied to memory (a caller on an event loop retries
        on a thread)."""
        if not self._lock.acquire(blocking=wait):
            raise ShardBusy(str(self.path))
        try:
            self._check_open()
            answer = self._search.run(query)
            answer.applied_seq = self._applied_seq
            return answer
        finally:
            self._lock.release()

    def settle(self) -> None:
        """Pack the postings into a few large arrays (``MemIndex.settle``: once the generation it
        replaced is dropped, so that the allocator can give that one's pages back). Searches go on:
        they read the same numbers from the packed arrays; writers wait."""
        with self._write_lock:
            if not self._closed:
                self._mem.settle()

    def memory_bytes(self) -> int:
        """Rough size of the in-memory structures (for monitoring)."""
        return self._mem.memory_bytes()

    # ------------------------------------------------------------------ close
    def close(self, snapshot_memory: bool = True) -> None:
        """Close the shard; waits until every applied change is committed to disk, then (unless
        told not to: the shard is about to be deleted) saves the memory snapshot.  Memory-only:
        nothing to write, the engine is just closed."""
        with self._write_lock, self._lock:
            if not self._closed:
                if self.durable and self._persist_error is not None and snapshot_memory:
                    try:  # one more try of the disk: what it does not take is re-fed after the restart
                        self._rewrite_files()
                        self._persist_error = None
                    except Exception as exc:  # noqa: BLE001
                        log.warning("closing shard %s whose disk refuses writes (%s): its files stay at "
                                    "sequence %s", self.path, exc, self._persisted_seq)
                self._closed = True
                if not self.durable:
                    return
                if self._persist_error is not None:
                    if self._persister is not None:
                        with contextlib.suppress(EngineError):
                            self._persister.release(self.path)
                    with contextlib.suppress(Exception):
                        if self._ix is not None:
                            self._ix.close()
                    return
                try:
                    if self._persister is not None:
                        self._persister.release(self.path)
                        self._persisted_seq = self._applied_seq
                    # every applied change is on disk now: the next open can skip the rebuild
                    if snapshot_memory:
                        snapshot.save(self.path, self._mem, self._applied_seq, self.mapping, self.language)
                finally:
                    with contextlib.suppress(Exception):
                        if self._ix is not None:
                            self._ix.close()
