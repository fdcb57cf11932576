"""The shard's Whoosh store: merges bounded by MERGE_CAP, merged segments copied without re-encoding
(documents, id lookups and the meta document intact), the meta document replaced in the last segment."""

from __future__ import annotations

import orjson
import pytest

from search_workers.engine import whoosh_store as ws


@pytest.fixture
def small_tiers(monkeypatch):
    monkeypatch.setattr(ws, "MERGE_AT", 3)
    monkeypatch.setattr(ws, "MERGE_CAP", 200)


def _doc(i: int, version: int = 0) -> tuple[str, bytes]:
    return f"d{i}", orjson.dumps({"id": f"d{i}", "name": f"product {i}", "v": version})


def _commit(ix, ops, seq):
    ws.commit_jobs(ix, [(ops, seq)], {"idField": "id"}, "en")
    return seq


def _segments(path):
    return ws.open_index(path)._segments()


def _live(path):
    return sorted(ws.stored_documents(ws.open_index(path))[1])


def test_segments_at_the_cap_are_not_merged_again(tmp_path, small_tiers):
    ix = ws.create_index(str(tmp_path), ws.make_schema())
    expected = dict(_doc(i) for i in range(1200))
    big: set[str] = set()
    seq = 0
    for start in range(0, 1200, 20):
        seq = _commit(ix, [("add", *_doc(i)) for i in range(start, start + 20)], seq + 20)
        segs = _segments(str(tmp_path))
        names = {s.segment_id() for s in segs}
        assert big <= names  # a segment that reached the cap is never rewritten
        big |= {s.segment_id() for s in segs if s.doc_count() >= ws.MERGE_CAP}
        assert max(s.doc_count() for s in segs) < 2 * ws.MERGE_CAP + 20
    assert len(big) >= 3
    assert _live(str(tmp_path)) == sorted(expected.items())
    assert ws.read_meta(ws.open_index(str(tmp_path)))["appliedSeq"] == 1200


def test_merged_documents_are_found_by_id(tmp_path, small_tiers):
    """Documents copied by a merge keep their id postings: updates and deletes reach them."""
    path = str(tmp_path)
    ix = ws.create_index(path, ws.make_schema())
    seq = 0
    for start in range(0, 600, 30):
        seq = _commit(ix, [("add", *_doc(i)) for i in range(start, start + 30)], seq + 30)
    assert any(s.doc_count() >= 60 for s in _segments(path))  # merges happened
    ix = ws.open_index(path)
    seq = _commit(ix, [("update", *_doc(i, 1)) for i in range(0, 600, 7)] + [("delete", f"d{i}") for i in range(3, 600, 11)],
                  seq + 1)
    expected = {doc_id: src for doc_id, src in (_doc(i) for i in range(600))}
    expected.update(_doc(i, 1) for i in range(0, 600, 7))
    for i in range(3, 600, 11):
        expected.pop(f"d{i}")
    assert _live(path) == sorted(expected.items())
    with ws.open_index(path).searcher() as s:
        assert orjson.loads(s.document(docid="d7")["src"])["v"] == 1
        assert s.document(docid="d20") is not None and s.document(docid="d14") is None
        metas = list(s.documents(docid=ws.META_ID))
    assert len(metas) == 1 and orjson.loads(metas[0]["meta"])["appliedSeq"] == seq


def test_a_large_segment_that_lost_many_documents_is_rewritten(tmp_path, small_tiers):
    path = str(tmp_path)
    ix = ws.create_index(path, ws.make_schema())
    seq = _commit(ix, [("add", *_doc(i)) for i in range(500)], 500)
    (large,) = [s for s in _segments(path) if s.doc_count() >= ws.MERGE_CAP]
    seq = _commit(ws.open_index(path), [("delete", f"d{i}") for i in range(0, 400, 2)], seq + 1)
    segs = _segments(path)
    assert large.segment_id() not in {s.segment_id() for s in segs}  # rewritten by the deleting commit
    assert [s.doc_count_all() for s in segs] == [300 + 1]  # the live documents and the meta document
    seq = _commit(ws.open_index(path), [("delete", f"d{i}") for i in range(401, 451, 2)], seq + 1)
    assert [s.segment_id() for s in _segments(path)][0] == segs[0].segment_id()  # below the dead share: kept
    for _ in range(3):  # segments left with nothing live (the meta document replaced) are dropped
        seq = _commit(ws.open_index(path), [], seq + 1)
    assert len(_segments(path)) == 2
    assert _live(path) == sorted([_doc(i) for i in range(1, 400, 2)] + [_doc(i) for i in range(400, 500) if i % 2 == 0
                                                                         or i > 450])


def test_meta_document_stays_unique_through_flushes_and_reopens(tmp_path, small_tiers):
    path = str(tmp_path)
    ws.create_index(path, ws.make_schema())
    seq = 0
    for start in range(0, 200, 25):
        seq = _commit(ws.open_index(path), [("add", *_doc(i)) for i in range(start, start + 25)], seq + 25)
    seq = _commit(ws.open_index(path), [("flush",), ("add", *_doc(7, 2))], seq + 1)
    seq = _commit(ws.open_index(path), [("add", *_doc(8))], seq + 1)
    with ws.open_index(path).searcher() as s:
        metas = list(s.documents(docid=ws.META_ID))
    assert len(metas) == 1 and orjson.loads(metas[0]["meta"])["appliedSeq"] == seq
    assert _live(path) == sorted([_doc(7, 2), _doc(8)])


def test_ids_are_inlined_in_the_terms_table(tmp_path):
    """A term with one posting (every id) needs no posting block; lookups read it from the terms table."""
    path = str(tmp_path)
    ix = ws.create_index(path, ws.make_schema())
    _commit(ix, [("add", *_doc(i)) for i in range(50)], 50)
    with ws.open_index(path).searcher() as s:
        assert s.reader().term_info("docid", "d7").is_inlined()
        assert orjson.loads(s.document(docid="d7")["src"])["name"] == "product 7"
    _commit(ws.open_index(path), [("update", *_doc(7, 3)), ("delete", "d8")], 51)
    live = dict(_live(path))
    assert orjson.loads(live["d7"])["v"] == 3 and "d8" not in live and len(live) == 49
