"""BM25 tf parts kept per shard within ``memindex.TF_NORM_BYTES``, least recently used out first
(``MemIndex.tf_norms``, ``scoring.tf_norm``): a shard keeping a few lists ranks exactly as one keeping
every list, through writes that change the lists and the fields' average lengths, and never holds
more than its bytes."""

from __future__ import annotations

import random

from search_workers.engine import ShardEngine
from search_workers.engine import memindex as memindex_module
from shared.contract import Change, Query

MAPPING = {"idField": "id", "fields": {"title": {"type": "text", "searchable": True},
                                       "body": {"type": "text", "searchable": True}}}
COMMON = ["widget", "case", "black"]  # in most documents: long lists, the dense path
RARE = [f"w{i}" for i in range(40)]  # in a few: short lists, the candidates of sparse queries
QUERIES = ["widget", "case black", "widget w3", "black w7 w8", "case w11", "w1", "widget case black",
           "w20 widget", "black"]


def _doc(rng: random.Random, i: int) -> dict:
    words = [w for w in COMMON if rng.random() < 0.8] + rng.sample(RARE, 2)
    words += ["widget"] * rng.randrange(0, 4)  # term frequencies and lengths that vary
    rng.shuffle(words)
    return {"id": str(i), "title": " ".join(words[:4]), "body": " ".join(words)}


def _ranked(e: ShardEngine, q: str) -> list[tuple[str, float]]:
    answer = e.search(Query(q=q, operator="and", limit=1000))
    return [(h.id, h.score) for h in answer.hits]


def test_a_small_pool_ranks_as_an_unbounded_one_through_writes(tmp_path, monkeypatch):
    rng = random.Random(5)
    docs = {str(i): _doc(rng, i) for i in range(600)}
    monkeypatch.setattr(memindex_module, "TF_NORM_BYTES", 1 << 40)
    everything = ShardEngine(tmp_path / "all", MAPPING)
    monkeypatch.setattr(memindex_module, "TF_NORM_BYTES", 2 * 600 * 4)  # about two long lists
    few = ShardEngine(tmp_path / "few", MAPPING)
    seq = 0

    def write(changes: list[tuple[str, dict | None]]) -> None:
        nonlocal seq
        batch = []
        for doc_id, doc in changes:
            seq += 1
            batch.append(Change(seq, "upsert" if doc else "delete", doc_id, doc))
        everything.apply(batch)
        few.apply(batch)

    write(list(docs.items()))
    kept = few._mem.tf_norms
    for round_ in range(5):
        for _ in range(2):  # the second pass reads what was kept
            for q in QUERIES:
                ranked = _ranked(few, q)
                assert ranked, (round_, q)
                assert ranked == _ranked(everything, q), (round_, q)
                assert kept.bytes <= kept.limit
                assert kept.bytes == sum(a.nbytes for _, a in kept.held.values())
        changes: list[tuple[str, dict | None]] = []
        for _ in range(80):  # lists grow and shrink, lengths and their average move
            doc_id = str(rng.randrange(700))
            if rng.random() < 0.3 and doc_id in docs:
                del docs[doc_id]
                changes.append((doc_id, None))
            else:
                docs[doc_id] = _doc(rng, int(doc_id))
                changes.append((doc_id, docs[doc_id]))
        write(changes)
    assert len(everything._mem.tf_norms.held) > len(kept.held) > 0
    everything.close()
    few.close()


def test_the_least_recently_used_list_goes_first(tmp_path, monkeypatch):
    monkeypatch.setattr(memindex_module, "TF_NORM_BYTES", 2 * 300 * 4)  # two lists over every document
    e = ShardEngine(tmp_path / "shard", {"idField": "id", "fields": {"title": {"type": "text", "searchable": True}}})
    e.apply([Change(i + 1, "upsert", str(i), {"id": str(i), "title": "alpha beta gamma"}) for i in range(300)])
    postings = e._mem.postings["title"]
    kept = e._mem.tf_norms

    def held() -> set[str]:
        return {t for t, p in postings.items() if p.tfn is not None}

    for q in ("alpha", "beta", "alpha", "gamma"):  # alpha used again before gamma comes
        e.search(Query(q=q, limit=5))
    assert held() == {"alpha", "gamma"}
    assert kept.bytes == 2 * 300 * 4
    e.close()
