"""Engine lifecycle: mapping validation, apply/replay/persistence, get, errors, languages."""

from __future__ import annotations

import pickle
import shutil
import threading
import tracemalloc

import pytest

from search_workers.engine import EngineError, MappingError, ShardEngine, shard, snapshot, whoosh_store
from search_workers.engine.memindex import MemIndex
from shared.contract import Change, Facet, FieldWeight, Query, SortKey, Typo

from .conftest import MAPPING, ids, upserts

SMALL = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "tags": {"type": "keyword[]", "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "stock": {"type": "integer", "filterable": True, "sortable": True},
        "inStock": {"type": "boolean", "filterable": True, "facetable": True},
        "released": {"type": "date", "filterable": True, "sortable": True},
        "secret": {"type": "keyword", "retrievable": False},
    },
}


def make(tmp_path, docs, mapping=SMALL, language="en"):
    e = ShardEngine(tmp_path / "shard", mapping, language)
    if docs:
        e.apply(upserts(docs))
    return e


def test_bad_mapping_raises_with_paths():
    bad = {
        "idField": "id",
        "fields": {
            "title": {"type": "txt"},
            "price": {"type": "float", "searchable": True},
            "tags": {"type": "keyword[]", "sortable": True},
            "x": {"type": "text", "facetable": "yes"},
            "y": {"type": "keyword", "bogus": True},
        },
    }
    with pytest.raises(MappingError) as ei:
        ShardEngine.validate_mapping(bad, "en")
    paths = {d["path"] for d in ei.value.details}
    assert {"fields.title.type", "fields.price.searchable", "fields.tags.sortable",
            "fields.x.facetable", "fields.y.bogus"} <= paths
    assert all("message" in d for d in ei.value.details)
    # picklable (crosses a Ray boundary)
    again = pickle.loads(pickle.dumps(ei.value))
    assert again.details == ei.value.details


def test_unknown_language_raises(tmp_path):
    with pytest.raises(MappingError) as ei:
        ShardEngine(tmp_path / "x", MAPPING, "xx")
    assert [d["path"] for d in ei.value.details] == ["language"]
    ShardEngine.validate_mapping(MAPPING, "en")  # good mapping passes


def test_apply_upsert_replace_delete_flush(tmp_path):
    e = make(tmp_path, [])
    assert e.doc_count == 0 and e.applied_seq == 0
    seq = e.apply([
        Change(1, "upsert", "a", {"title": "red shoe", "price": 10}),
        Change(2, "upsert", "b", {"title": "blue shoe", "price": 20}),
        Change(3, "upsert", "c", {"title": "green hat", "price": 30}),
    ])
    assert seq == 3 and e.doc_count == 3
    assert sorted(ids(e.search(Query(q="shoe")))) == ["a", "b"]
    # replace: a is no longer a shoe
    e.apply([Change(4, "upsert", "a", {"title": "red scarf", "price": 11})])
    assert ids(e.search(Query(q="shoe"))) == ["b"]
    assert e.get("a")["title"] == "red scarf" and e.doc_count == 3
    # delete
    e.apply([Change(5, "delete", "b")])
    assert e.search(Query(q="shoe")).total == 0 and e.get("b") is None and e.doc_count == 2
    # same id twice in a batch: last wins; delete of unknown id is harmless
    e.apply([
        Change(6, "upsert", "d", {"title": "one"}),
        Change(7, "upsert", "d", {"title": "two"}),
        Change(8, "delete", "nope"),
    ])
    assert e.get("d")["title"] == "two" and e.search(Query(q="one")).total == 0
    # flush removes everything before it; later changes in the batch stay
    e.apply([
        Change(9, "flush"),
        Change(10, "upsert", "z", {"title": "after flush"}),
    ])
    assert e.doc_count == 1 and e.get("c") is None
    assert ids(e.search(Query(q=""))) == ["z"] and e.applied_seq == 10
    e.close()
    e2 = ShardEngine(tmp_path / "shard", SMALL)
    assert e2.doc_count == 1 and e2.applied_seq == 10 and ids(e2.search(Query(q="flush"))) == ["z"]
    e2.close()


def test_applied_seq_persisted_and_replay_skipped(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "alpha"}, {"id": "2", "title": "beta"}])
    assert e.applied_seq == 2
    e.close()
    e = ShardEngine(tmp_path / "shard", SMALL)
    assert e.applied_seq == 2 and e.doc_count == 2
    # replay after a crash: seq 1-2 are skipped, seq 3 applied
    out = e.apply([
        Change(1, "delete", "1"),
        Change(2, "upsert", "2", {"title": "changed"}),
        Change(3, "upsert", "3", {"title": "gamma"}),
    ])
    assert out == 3 and e.doc_count == 3
    assert e.get("1") is not None and e.get("2")["title"] == "beta"
    # a fully replayed batch is a no-op
    assert e.apply([Change(3, "delete", "3")]) == 3 and e.get("3") is not None
    e.close()
    e = ShardEngine(tmp_path / "shard", SMALL)
    assert e.applied_seq == 3 and sorted(ids(e.search(Query(q="", limit=10)))) == ["1", "2", "3"]
    e.close()


@pytest.mark.parametrize("persist", ["inline", "helper"])
def test_advance_moves_the_sequence_and_persists_it(tmp_path, monkeypatch, persist):
    if persist == "inline":
        monkeypatch.setattr(shard, "persist_mode", lambda: "inline")
    e = make(tmp_path, [{"id": "1", "title": "alpha"}])
    assert e.apply([Change(5, "advance")]) == 5 and e.doc_count == 1
    assert e.apply([Change(4, "advance")]) == 5  # at or below the applied sequence: skipped
    assert e.search(Query(q="alpha")).applied_seq == 5
    assert e.flush() == 5 and e.persisted_seq == 5
    e.close()
    e = ShardEngine(tmp_path / "shard", SMALL)
    assert e.applied_seq == 5 and e.get("1") is not None
    e.close()


def test_bad_changes_are_refused(tmp_path):
    e = make(tmp_path, [])
    for bad in (Change(1, "upsert", None, {"title": "x"}), Change(1, "delete"), Change(1, "nope", "a")):  # type: ignore[arg-type]
        with pytest.raises(EngineError) as ei:
            e.apply([bad])
        assert ei.value.code == "CHANGE_INVALID"
    assert e.applied_seq == 0 and e.doc_count == 0
    e.close()


def test_reopen_keeps_data_and_search(tmp_path):
    docs = [{"id": str(i), "title": f"widget model {i}", "brand": "Acme" if i % 2 else "Zed", "price": i} for i in range(50)]
    e = make(tmp_path, docs)
    before = e.search(Query(q="widget 7", facets=(Facet("brand"),), limit=5))
    e.close()
    with pytest.raises(EngineError):
        e.search(Query(q="widget"))
    e = ShardEngine(tmp_path / "shard", SMALL)
    after = e.search(Query(q="widget 7", facets=(Facet("brand"),), limit=5))
    assert ids(after) == ids(before) and after.facets == before.facets
    assert after.hits[0].id == "7"
    e.close()


def test_mapping_change_on_reopen_rebuilds(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "alpha", "brand": "Acme"}])
    e.close()
    foreign = tmp_path / "shard" / "shopsearch-seq.json"  # a host's file next to the index
    foreign.write_text('{"throughSeq": 7}')
    m2 = {"idField": "id", "fields": {**SMALL["fields"], "brand": {"type": "keyword", "searchable": False, "filterable": True}}}
    e = ShardEngine(tmp_path / "shard", m2)
    assert e.doc_count == 1 and e.search(Query(q="acme")).total == 0 and e.search(Query(q="alpha")).total == 1
    assert foreign.read_text() == '{"throughSeq": 7}' and e.applied_seq == 1
    e.apply([Change(2, "upsert", "2", {"title": "beta", "brand": "Acme"})])
    assert e.search(Query(q="", filters={"brand": "Acme"})).total == 2
    e.close()


def test_get_drops_unretrievable_and_retrieve_list(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "alpha", "secret": "s3", "extra": {"x": 1}}])
    doc = e.get("1")
    assert doc == {"id": "1", "title": "alpha", "extra": {"x": 1}}  # unmapped fields kept
    hit = e.search(Query(q="alpha")).hits[0]
    assert "secret" not in hit.document and hit.document["extra"] == {"x": 1}
    hit = e.search(Query(q="alpha", retrieve=("title",))).hits[0]
    assert hit.document == {"id": "1", "title": "alpha"}
    assert e.get("missing") is None
    e.close()


def test_errors_for_unsortable_unfilterable_unfacetable(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "alpha"}])
    with pytest.raises(EngineError) as ei:
        e.search(Query(q="a", sort=(SortKey("title"),)))
    assert ei.value.code == "FIELD_NOT_SORTABLE"
    with pytest.raises(EngineError) as ei:
        e.search(Query(q="a", filters={"title": "x"}))
    assert ei.value.code == "FIELD_NOT_FILTERABLE"
    with pytest.raises(EngineError) as ei:
        e.search(Query(q="a", facets=(Facet("stock"),)))
    assert ei.value.code == "FIELD_NOT_FACETABLE"
    with pytest.raises(EngineError) as ei:
        e.search(Query(q="a", fields={"price": FieldWeight(weight=2)}))
    assert ei.value.code == "FIELD_NOT_SEARCHABLE"
    e.close()


LANG_CASES = {
    "en": ("running phones", "phone run"),
    "de": ("Häuser", "haus"),
    "fr": ("téléphones portables", "telephone portable"),
    "es": ("teléfonos", "telefono"),
    "it": ("telefoni", "telefon"),
    "nl": ("telefoons", "telefoon"),
    "pt": ("telefones", "telefone"),
    "ru": ("телефоны", "телефон"),
    "sv": ("telefoner", "telefon"),
}


@pytest.mark.parametrize("language", sorted(LANG_CASES))
def test_languages_stem(tmp_path, language):
    doc_text, query = LANG_CASES[language]
    e = make(tmp_path, [{"id": "1", "title": doc_text}, {"id": "2", "title": "zzz other"}], language=language)
    res = e.search(Query(q=query, typo=Typo(enabled=False)))
    assert ids(res) == ["1"], (language, res)
    e.close()


COLORS = ["red", "green", "blue", "gold"]


def test_compaction_keeps_results(tmp_path):
    e = make(tmp_path, [])
    seq = 0
    for rnd in range(4):
        batch = []
        for i in range(1500):
            seq += 1
            batch.append(Change(seq, "upsert", str(i), {"title": f"item {COLORS[rnd]} n{i}", "price": i, "brand": "Acme" if i % 3 == 0 else "Zed"}))
        e.apply(batch)
    assert e.doc_count == 1500
    assert e._mem.n < 3000  # dead slots were compacted
    assert e.search(Query(q="gold")).total == 1500
    assert e.search(Query(q="green")).total == 0
    r = e.search(Query(q="n42 gold", facets=(Facet("brand"),)))
    assert ids(r)[0] == "42" and r.facets["brand"] == {"Acme": 1}
    assert e.search(Query(q="", filters={"brand": "Acme"})).total == 500
    e.close()


def test_apply_is_incremental(tmp_path):
    docs = [{"id": str(i), "title": f"widget {i} {'red' if i % 2 else 'blue'}"} for i in range(3000)]
    e = make(tmp_path, docs)
    mem = e._mem
    untouched = mem.postings["title"]["blue"].docs
    touched = mem.postings["title"]["widget"].docs
    e.apply([Change(3001 + i, "upsert", f"n{i}", {"title": f"widget red {i}"}) for i in range(50)])
    assert mem.postings["title"]["blue"].docs is untouched  # no rebuild of untouched terms
    assert mem.postings["title"]["widget"].docs is not touched
    assert len(mem.postings["title"]["widget"].docs) == 3050
    assert e.search(Query(q="widget red")).total == 1550
    e.close()


def test_search_not_blocked_by_whoosh_commit(tmp_path, monkeypatch):
    """Inline persistence: the Whoosh commit runs inside apply, outside the read lock."""
    monkeypatch.setattr(shard, "persist_mode", lambda: "inline")
    e = make(tmp_path, [{"id": "1", "title": "alpha"}])
    gate = threading.Event()
    real_writer = whoosh_store.fast_writer

    def slow_writer(*a, **kw):
        w = real_writer(*a, **kw)
        real_commit = w.commit

        def commit(*ca, **ckw):
            assert gate.wait(10)
            return real_commit(*ca, **ckw)

        w.commit = commit
        return w

    monkeypatch.setattr(whoosh_store, "fast_writer", slow_writer)
    t = threading.Thread(target=e.apply, args=([Change(2, "upsert", "2", {"title": "alpha beta"})],))
    t.start()
    try:
        # the commit is stuck: searches still answer, from the previous state
        assert ids(e.search(Query(q="alpha"))) == ["1"] and e.applied_seq == 1
    finally:
        gate.set()
        t.join(10)
    assert sorted(ids(e.search(Query(q="alpha")))) == ["1", "2"] and e.applied_seq == 2
    e.close()


def test_write_behind_groups_commits_without_duplicates(tmp_path):
    """Whoosh persistence trails apply (helper process, group commits); a closed shard has exactly
    the applied state on disk, with no duplicate Whoosh documents from grouped jobs."""
    e = ShardEngine(tmp_path / "shard", SMALL)
    seq = 0
    for round_ in range(6):
        batch = []
        for i in range(50):
            seq += 1
            batch.append(Change(seq, "upsert", str(i), {"title": f"widget r{round_}"}))
        seq += 1
        batch.append(Change(seq, "delete", str(round_)))
        e.apply(batch)
        # search reflects the change on return, whatever is persisted
        assert e.search(Query(q=f"r{round_}", limit=0)).total == 49
    assert e.persisted_seq <= e.applied_seq == seq
    assert e.flush() == seq and e.persisted_seq == seq
    e.apply([Change(seq + 1, "flush"), Change(seq + 2, "upsert", "x", {"title": "fresh"})])
    e.apply([Change(seq + 3, "upsert", "x", {"title": "fresher"})])
    e.close()
    assert e.persisted_seq == seq + 3
    e2 = ShardEngine(tmp_path / "shard", SMALL)
    assert e2.applied_seq == seq + 3 and e2.doc_count == 1 and e2.get("x")["title"] == "fresher"
    with e2._ix.searcher() as s:
        assert s.doc_count() == 2  # x and the meta document
    e2.close()


def test_inline_persistence(tmp_path, monkeypatch):
    monkeypatch.setattr(shard, "persist_mode", lambda: "inline")
    e = make(tmp_path, [{"id": "1", "title": "alpha"}, {"id": "2", "title": "beta"}])
    assert e.persisted_seq == e.applied_seq == 2
    e.apply([Change(3, "delete", "1")])
    assert e.persisted_seq == 3
    e.close()
    e2 = ShardEngine(tmp_path / "shard", SMALL)
    assert e2.applied_seq == 3 and e2.doc_count == 1
    e2.close()


def test_stored_documents_cost_their_size_not_a_json_buffer(tmp_path):
    """orjson's output keeps its 4 KiB buffer; documents held in memory are exact copies."""
    e = ShardEngine(tmp_path / "shard", SMALL)
    docs = [{"title": f"widget {i} blue", "price": i} for i in range(2000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        e.apply([Change(i + 1, "upsert", str(i), d) for i, d in enumerate(docs)])
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        e.close()
    assert grown / len(docs) < 3000  # about 1.8 KB; 5.8 KB when each kept its JSON buffer


def test_a_cleanly_closed_shard_reopens_from_its_memory_snapshot(tmp_path, monkeypatch):
    """No document is re-analysed when the snapshot matches; any mismatch rebuilds from Whoosh."""
    docs = [{"id": str(i), "title": f"widget {i} {'red' if i % 2 else 'blue'}", "brand": f"b{i % 3}",
             "price": float(i)} for i in range(60)]
    query = Query(q="widget red", facets=(Facet("brand"),), sort=(SortKey("price", desc=True),), limit=5)
    e = make(tmp_path, docs)
    e.apply([Change(61, "delete", "1")])
    before = e.search(query)
    e.close()
    path = tmp_path / "shard"
    assert (path / snapshot.FILE).exists()
    saved_at_61 = tmp_path / "snap61"
    shutil.copy(path / snapshot.FILE, saved_at_61)

    real_add = MemIndex.add
    monkeypatch.setattr(MemIndex, "add", lambda *a, **k: pytest.fail("re-analysed a document"))
    e = ShardEngine(path, SMALL)
    assert e.applied_seq == 61 and e.search(query) == before and e.get("1") is None
    monkeypatch.setattr(MemIndex, "add", real_add)
    e.apply([Change(62, "upsert", "x", {"title": "widget red new", "price": 999.0})])
    e.close()

    # a crash after more changes: the snapshot is older than Whoosh, so the shard is rebuilt
    shutil.copy(saved_at_61, path / snapshot.FILE)
    e = ShardEngine(path, SMALL)
    assert e.applied_seq == 62 and e.search(query).hits[0].id == "x"
    e.close()
    # a damaged snapshot is ignored
    (path / snapshot.FILE).write_bytes(b"not a pickle")
    e = ShardEngine(path, SMALL)
    assert e.applied_seq == 62 and e.search(query).hits[0].id == "x"
    e.close()
    assert (path / snapshot.FILE).exists()
    # another mapping: rebuilt (and the Whoosh index rewritten) whatever the snapshot says, and
    # the snapshot of the old mapping is gone, even if this engine never closes cleanly
    other = {**SMALL, "fields": {**SMALL["fields"], "price": {"type": "float", "filterable": True, "sortable": True}}}
    e = ShardEngine(path, other)
    assert not (path / snapshot.FILE).exists()
    assert e.search(Query(q="", facets=(Facet("brand"),), limit=0)).total == 60
    with pytest.raises(EngineError):
        e.search(Query(q="", facets=(Facet("price"),)))
    e.close(snapshot_memory=False)  # as if it had crashed
    e = ShardEngine(path, SMALL)  # back to the first mapping: rewritten again, and it works
    e.apply([Change(63, "upsert", "y", {"title": "widget", "brand": "b9", "price": 1.0})])
    assert e.search(Query(q="", facets=(Facet("brand"),), limit=0)).facets["brand"]["b9"] == 1
    e.close()


def test_a_worn_shard_saves_no_snapshot_and_is_rebuilt_clean(tmp_path):
    """After most documents are gone, the dictionary is full of dead terms: rebuild it on open."""
    e = make(tmp_path, [{"id": str(i), "title": f"word{i} common"} for i in range(100)])
    e.apply([Change(101 + i, "delete", str(i)) for i in range(60)])
    e.close()
    assert not (tmp_path / "shard" / snapshot.FILE).exists()
    e = ShardEngine(tmp_path / "shard", SMALL)
    assert e.search(Query(q="common", limit=0)).total == 40 and "word5" not in e._mem.term_df
    e.close()
    assert (tmp_path / "shard" / snapshot.FILE).exists()  # clean now


def test_memory_only_engine_writes_nothing_and_answers_the_same(tmp_path):
    docs = [{"id": str(i), "title": f"red shoe {i}", "brand": "acme" if i % 2 else "zeta",
             "price": float(i), "tags": ["x", f"t{i % 3}"], "secret": "s"} for i in range(40)]
    changes = upserts(docs) + [Change(41, "upsert", "3", {"title": "blue hat", "price": 3.0}),
                               Change(42, "delete", "4"), Change(43, "advance")]
    durable = ShardEngine(tmp_path / "durable", SMALL)
    mem = ShardEngine(tmp_path / "mem", SMALL, durable=False)
    assert mem.applied_seq == 0 and mem.persisted_seq == 0
    for e in (durable, mem):
        assert e.apply(changes[:20]) == 20 and e.apply(changes[10:]) == 43  # replay skipped
    assert mem.doc_count == durable.doc_count == 39
    queries = [Query(q="shoe", limit=50), Query(q="", limit=5, sort=[SortKey("price", desc=True)]),
               Query(q="red", facets=[Facet("brand"), Facet("tags")], limit=50)]
    for q in queries:
        a, b = mem.search(q), durable.search(q)
        assert ids(a) == ids(b) and a.total == b.total and a.facets == b.facets and a.applied_seq == 43
    assert mem.get("3") == durable.get("3") and "secret" not in mem.get("5") and mem.get("4") is None
    # nothing on disk, nothing to wait for: persisted_seq stays 0 (a restart starts from nothing)
    assert mem.flush() == 0 and mem.persisted_seq == 0 and mem.applied_seq == 43
    mem.apply([Change(44, "flush"), Change(45, "upsert", "z", {"title": "after"})])
    assert ids(mem.search(Query(q=""))) == ["z"]
    mem.close()
    durable.close()
    assert not (tmp_path / "mem").exists()
    with pytest.raises(EngineError):
        mem.search(Query(q=""))


def test_a_shard_written_with_text_postings_still_opens_and_takes_changes(tmp_path):
    """Shards written before Whoosh held only ids and sources (``t_``/``k_`` postings) reopen,
    are updated in place and answer from their stored documents."""
    from whoosh import fields as wf

    from search_workers.engine.analysis import ShopText, ShopTokenizer

    path = tmp_path / "shard"
    path.mkdir()
    legacy = whoosh_store.make_schema()
    legacy.add("t_title", ShopText(analyzer=ShopTokenizer("en"), phrase=False))
    legacy.add("k_brand", wf.KEYWORD(commas=True, lowercase=False, scorable=False))
    ix = whoosh_store.create_index(str(path), legacy)
    w = ix.writer()
    for i, title in enumerate(["red shoe", "blue shoe", "green hat"]):
        doc = {"id": str(i), "title": title, "brand": "acme"}
        w.add_document(docid=str(i), src=whoosh_store.orjson.dumps(doc), t_title=title, k_brand="acme")
    w.add_document(docid=whoosh_store.META_ID, meta=whoosh_store.meta_blob(3, SMALL, "en"))
    w.commit()
    ix.close()
    e = ShardEngine(path, SMALL)
    assert e.applied_seq == 3 and sorted(ids(e.search(Query(q="shoe")))) == ["0", "1"]
    e.apply([Change(4, "upsert", "1", {"title": "blue scarf"}), Change(5, "delete", "0"),
             Change(6, "upsert", "9", {"title": "shoe box"})])
    e.close(snapshot_memory=False)  # reopened from Whoosh, not from the memory snapshot
    e = ShardEngine(path, SMALL)
    assert e.applied_seq == 6 and ids(e.search(Query(q="shoe"))) == ["9"] and e.doc_count == 3
    assert e.get("1")["title"] == "blue scarf"
    e.close()
