"""A shard's stored documents, compressed in memory with a dictionary trained on its own (issue 34,
item 3): every document comes back byte for byte, through deletes, compaction, a snapshot and a
rewrite of the shard's files from memory, and a catalog's documents take well under half their
size."""

from __future__ import annotations

import pickle
import time

import numpy as np
import orjson

from search_workers.engine import ShardEngine, blobs, shard, whoosh_store
from search_workers.engine.blobs import BlobStore
from shared.contract import Change, Query

from .conftest import MAPPING


def _upserts(products: list[dict], start: int = 0) -> list[Change]:
    """Product ``i`` as document ``str(i)``, at sequence ``i + 1``."""
    return [Change(start + i + 1, "upsert", str(start + i), p) for i, p in enumerate(products)]


def _raw(products: list[dict]) -> list[bytes]:
    return [orjson.dumps(p) for p in products]


def test_documents_come_back_as_added_before_and_after_the_dictionary(products):
    raw = _raw(products)
    store = BlobStore()
    store.extend(raw[: blobs.TRAIN_AT - 1])
    assert not store.compressed  # a small shard keeps its documents as they are
    assert [store.get(i) for i in range(len(store))] == raw[: blobs.TRAIN_AT - 1]
    store.extend(raw[blobs.TRAIN_AT - 1:])
    assert store.compressed
    assert [store.get(i) for i in range(len(store))] == raw
    assert [store.size(i) for i in range(len(store))] == [len(b) for b in raw]
    # the Best Buy catalog's documents: a trained dictionary keeps about 30 % of their bytes
    held = store.memory_bytes()
    assert held < 0.45 * sum(len(b) + 33 + 8 for b in raw), (held, sum(map(len, raw)))


def test_deletes_compaction_and_a_pickle_keep_every_document(products):
    raw = _raw(products)
    store = BlobStore()
    store.extend(raw)
    for slot in range(0, len(raw), 3):
        store.drop(slot)
    assert store.get(0) is None and store.size(0) == 0
    kept = [i for i in range(len(raw)) if i % 3]
    store.keep(np.asarray(kept))
    assert [store.get(i) for i in range(len(store))] == [raw[i] for i in kept]
    copy = pickle.loads(pickle.dumps(store, protocol=5))
    assert copy.compressed
    assert [copy.get(i) for i in range(len(copy))] == [raw[i] for i in kept]
    copy.append(raw[0])  # the restored dictionary compresses new documents too
    assert copy.get(len(copy) - 1) == raw[0]


def test_a_shard_returns_its_documents_through_snapshot_and_rebuild(products, tmp_path):
    path = tmp_path / "shard"
    docs = {str(i): {**p, "id": str(i)} for i, p in enumerate(products)}  # the id field is added
    e = ShardEngine(path, MAPPING)
    e.apply(_upserts(products))
    e.apply([Change(len(products) + 1, "delete", "0")])
    del docs["0"]
    assert e._mem.blobs.compressed
    assert {d: e.get(d) for d in docs} == docs
    hits = e.search(Query(q="", limit=50)).hits
    assert hits and all(h.document == docs[h.id] for h in hits)
    e.close()  # a clean close: the next open loads the snapshot
    for snapshot in (True, False):
        e = ShardEngine(path, MAPPING)
        assert e._mem.blobs.compressed
        assert e.get("0") is None and {d: e.get(d) for d in docs} == docs
        e.close(snapshot)  # then without one: rebuilt from the shard's files


def test_files_rewritten_from_memory_hold_the_documents(products, tmp_path, monkeypatch):
    """A disk that refused writes gets the shard's files rewritten from the compressed memory."""
    monkeypatch.setattr(shard, "persist_mode", lambda: "inline")
    path = tmp_path / "shard"
    e = ShardEngine(path, MAPPING)
    e.apply(_upserts(products[:100]))
    refusing = [True]
    commit = whoosh_store.commit_jobs

    def refused(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if refusing[0]:
            raise PermissionError(13, "Permission denied")
        return commit(*args, **kwargs)

    monkeypatch.setattr(whoosh_store, "commit_jobs", refused)
    e.apply(_upserts(products[100:], start=100))
    assert e.persist_error is not None and e._mem.blobs.compressed
    refusing[0] = False
    deadline = time.monotonic() + 30
    while e.persist_error is not None:
        assert time.monotonic() < deadline, e.persist_error
        time.sleep(0.05)
    assert e.persisted_seq == len(products)
    e.close(False)
    reopened = ShardEngine(path, MAPPING)
    try:
        assert reopened.applied_seq == len(products)
        assert all(reopened.get(str(i)) == {**p, "id": str(i)} for i, p in enumerate(products))
    finally:
        reopened.close()



def test_too_little_to_train_on_keeps_documents_as_they_are(monkeypatch):
    """A dictionary needs more than a handful of documents: training is tried again at twice the
    count, and meanwhile every document comes back as added."""
    monkeypatch.setattr(blobs, "TRAIN_AT", 2)
    trained = []
    train = blobs.zstandard.train_dictionary
    monkeypatch.setattr(blobs.zstandard, "train_dictionary",
                        lambda *a, **k: trained.append(len(a[1])) or train(*a, **k))
    store = BlobStore()
    raw = [b'{"id": "%d"}' % i for i in range(20)]
    store.extend(raw[:7])  # zstd wants 8 samples or more
    assert not store.compressed and trained == [2, 4]
    assert [store.get(i) for i in range(7)] == raw[:7] and store.size(3) == len(raw[3])
    store.extend(raw[7:])
    assert store.compressed and trained == [2, 4, 8]
    assert [store.get(i) for i in range(20)] == raw and store.size(13) == len(raw[13])
