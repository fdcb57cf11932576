"""A shard's vector columns through its life: shop-supplied and built-in vectors written, replaced,
deleted, compacted, and reopened from the memory snapshot and from the stored documents, each time
answering the same nearest documents (an exact cosine ranking computed here with numpy)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from search_workers.engine import ShardEngine, semantic, vectors
from shared.contract import Change, Query, Semantic

MAPPING = {"fields": {"name": {"type": "text", "searchable": True},
                      "vec": {"type": "vector", "dimensions": 8},
                      "meaning": {"type": "vector", "embed": {"from": ["name"]}}}}
WORDS = ["red", "blue", "phone", "case", "charger", "cable", "screen", "glass", "car", "mount"]


def _docs(rng: random.Random, n: int) -> dict[str, dict]:
    return {f"d{i}": {"name": " ".join(rng.sample(WORDS, 3)), "vec": [rng.uniform(-1, 1) for _ in range(8)]}
            for i in range(n)}


def _expected(docs: dict[str, dict], q: list[float], k: int) -> list[str]:
    ids = sorted(docs)
    m = np.array([docs[d]["vec"] for d in ids], dtype=np.float64)
    sims = (m / np.linalg.norm(m, axis=1, keepdims=True)) @ (np.array(q) / np.linalg.norm(q))
    return [ids[i] for i in np.argsort(-sims, kind="stable")[:k]]


def _check(engine: ShardEngine, docs: dict[str, dict], graph: bool = False) -> None:
    assert (engine._mem.vectors["vec"].ann is not None) == graph
    q = [0.5, -0.2, 0.9, 0.1, -0.7, 0.3, 0.0, 0.4]
    answer = engine.search(Query(limit=20, semantic=Semantic("vec", 1.0, vector=tuple(q))))
    got, expected = [h.id for h in answer.hits], _expected(docs, q, 20)
    assert got == expected
    assert "vec" not in answer.hits[0].document and "meaning" not in answer.hits[0].document
    # a built-in vector: the name "charger cable car" is nearest to a document of those words
    by_text = engine.search(Query(limit=5, semantic=Semantic("meaning", 1.0, text="charger cable car")))
    best = by_text.hits[0].document["name"].split()
    assert len({"charger", "cable", "car"} & set(best)) >= 2, best


@pytest.mark.parametrize("graph", [False, True], ids=["exact", "graph"])
def test_vectors_survive_replacement_deletion_compaction_and_reopening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       graph: bool) -> None:
    """Below the line every row is compared; with it lowered, the shard's inverted file answers and
    is kept in step (deleted slots never come back, compaction lists the kept ones under their new
    slots, the snapshot carries it). Few lists, all probed: its answers are exact here."""
    if graph:
        monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 500)
        monkeypatch.setattr(vectors, "EXACT_WITHIN", 100)
        monkeypatch.setattr(vectors, "LISTS", 8)
        monkeypatch.setattr(vectors, "PROBES", 8)
    rng = random.Random(35)
    docs = _docs(rng, 2000)
    engine = ShardEngine(tmp_path / "shard", MAPPING)
    engine.apply([Change(i + 1, "upsert", d, body) for i, (d, body) in enumerate(docs.items())])
    _check(engine, docs, graph)
    moved = {d: body for d, body in list(_docs(rng, 700).items())}  # new vectors for d0..d699
    engine.apply([Change(2001 + i, "upsert", d, body) for i, (d, body) in enumerate(moved.items())])
    docs.update(moved)
    gone = [f"d{i}" for i in range(700, 1700)]
    engine.apply([Change(3001 + i, "delete", d) for i, d in enumerate(gone)])
    for d in gone:
        del docs[d]
    assert engine._mem.n == len(docs)  # compacted
    _check(engine, docs, graph)
    if graph:  # a filter leaving more documents than EXACT_WITHIN goes through the graph too
        even = {d: v for d, v in docs.items() if int(d[1:]) % 2 == 0}
        q = [0.5, -0.2, 0.9, 0.1, -0.7, 0.3, 0.0, 0.4]
        filtered = engine.search(Query(limit=10, filters={"id": list(even)},
                                       semantic=Semantic("vec", 1.0, vector=tuple(q))))
        assert [h.id for h in filtered.hits] == _expected(even, q, 10)
    engine.close()  # with its memory snapshot
    reopened = ShardEngine(tmp_path / "shard", MAPPING)
    _check(reopened, docs, graph)
    reopened.close(snapshot_memory=False)
    rebuilt = ShardEngine(tmp_path / "shard", MAPPING)  # from the stored documents: vectors embedded again
    _check(rebuilt, docs, graph)
    rebuilt.close()


def test_documents_without_a_vector_are_never_near_and_ratio_zero_is_keyword_search(tmp_path: Path) -> None:
    engine = ShardEngine(tmp_path / "shard", MAPPING)
    engine.apply([Change(1, "upsert", "a", {"name": "red phone", "vec": [1, 0, 0, 0, 0, 0, 0, 0]}),
                  Change(2, "upsert", "b", {"name": "red case"}),
                  Change(3, "upsert", "c", {"name": "blue case", "vec": [0, 0, 0, 0, 0, 0, 0, 0]}),  # no direction
                  Change(4, "upsert", "d", {"vec": [0.9, 0.1, 0, 0, 0, 0, 0, 0]})])  # no words to embed
    near = engine.search(Query(semantic=Semantic("vec", 1.0, vector=(1, 0, 0, 0, 0, 0, 0, 0))))
    assert [h.id for h in near.hits] == ["a", "d"]
    assert [h.id for h in engine.search(Query(semantic=Semantic("meaning", 1.0, text="red"))).hits] in (
        ["a", "b", "c"], ["b", "a", "c"])
    plain = engine.search(Query(q="red"))
    zero = engine.search(Query(q="red", semantic=Semantic("vec", 0.0, vector=(1, 0, 0, 0, 0, 0, 0, 0))))
    assert [(h.id, h.score) for h in zero.hits] == [(h.id, h.score) for h in plain.hits] and zero.total == plain.total
    hybrid = engine.search(Query(q="case", semantic=Semantic("vec", 0.5, vector=(1, 0, 0, 0, 0, 0, 0, 0))))
    assert {h.id for h in hybrid.hits} == {"a", "b", "c", "d"}  # the words' matches and the nearest
    engine.close()


@pytest.mark.parametrize("seed", range(40))
def test_the_union_of_candidates_and_nearest_places_each_where_it_sits(seed: int) -> None:
    """``semantic.union_at``: the sorted union and each array's positions in it, for empty arrays,
    disjoint ones, overlapping ones and one inside the other, few candidates and many (its two ways)."""
    rng = np.random.default_rng(seed)
    many = seed % 2 == 1
    space = 5000 if many else 200
    size = int(rng.integers(semantic.GATHER_ALL + 1, 3 * semantic.GATHER_ALL)) if many else int(rng.integers(0, 60))
    a = np.sort(rng.choice(space, size=size, replace=False)).astype(np.int32)
    b = np.sort(rng.choice(space, size=int(rng.integers(0, 120)), replace=False)).astype(np.int64)
    if seed % 5 == 0:
        b = a[::3].astype(np.int64)  # every one already a candidate
    union, at_a, at_b = semantic.union_at(a, b)
    assert union.tolist() == np.union1d(a, b).tolist()
    assert union.dtype == a.dtype
    assert union[at_a].tolist() == a.tolist() and union[at_b].tolist() == b.tolist()


def test_the_nearest_kept_for_a_query_answer_as_if_searched_anew(tmp_path: Path) -> None:
    """The nearest overall are kept in the shard's query cache: the same query again, the same with
    a filter (its facets count the nearest outside it), and after a write that brings a nearer
    document, each answers what an engine with an empty cache answers."""
    rng = random.Random(7)
    docs = _docs(rng, 400)
    engine = ShardEngine(tmp_path / "shard", MAPPING)
    engine.apply([Change(i + 1, "upsert", d, body) for i, (d, body) in enumerate(docs.items())])
    q = (0.5, -0.2, 0.9, 0.1, -0.7, 0.3, 0.0, 0.4)
    half = [d for d in docs if int(d[1:]) % 2]

    def answers() -> list[tuple[list[str], int, dict]]:
        out = []
        for filters in (None, {"id": half}, None):
            a = engine.search(Query(q="red phone", limit=15, filters=filters, semantic=Semantic("vec", 0.9, vector=q)))
            out.append(([h.id for h in a.hits], a.total, {f: [(v.value, v.count) for v in vs] for f, vs in a.facets.items()}))
        return out

    def fresh() -> list[tuple[list[str], int, dict]]:
        engine._mem.expansion_cache.clear()
        return answers()

    assert answers() == fresh()
    engine.apply([Change(401, "upsert", "nearer", {"name": "glass", "vec": list(q)})])
    first = answers()
    assert first[0][0][0] == "nearer" and first == fresh()
    engine.close(snapshot_memory=False)
