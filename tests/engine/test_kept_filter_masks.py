"""Filters' field clauses kept as masks until the shard changes (``filters._kept_field_mask``, the
"filters" pool of ``MemIndex.keep_mask``): a kept mask answers exactly what a fresh one would, through
writes, deletions, negations and combinations, and within its pool's bytes."""

from __future__ import annotations

import random

from search_workers.engine import ShardEngine
from search_workers.engine import memindex as memindex_module
from shared.contract import Change, Query

MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "filterable": True},
        "tags": {"type": "keyword[]", "filterable": True},
        "price": {"type": "float", "filterable": True},
        "stock": {"type": "boolean", "filterable": True},
    },
}
BRANDS = ["Acme", "Bolt", "Cobra"]
TAGS = ["red", "blue", "green", "sale"]


def _doc(rng: random.Random, i: int) -> dict:
    return {"id": str(i), "title": f"widget {i}", "brand": rng.choice(BRANDS),
            "tags": rng.sample(TAGS, rng.randrange(0, 3)), "price": round(rng.uniform(1, 200), 2),
            "stock": rng.random() < 0.5}


def _matches(doc: dict, flt: dict) -> bool:
    for key, cond in flt.items():
        if key == "not":
            if _matches(doc, cond):
                return False
        elif key == "or":
            if not any(_matches(doc, sub) for sub in cond):
                return False
        elif isinstance(cond, dict):
            v = doc[key]
            if not all({"gt": v > x, "gte": v >= x, "lt": v < x, "lte": v <= x}[op] for op, x in cond.items()):
                return False
        else:
            wanted = cond if isinstance(cond, list) else [cond]
            held = doc[key] if isinstance(doc[key], list) else [doc[key]]
            if not set(held) & set(wanted):
                return False
    return True


FILTERS = [{"brand": "Acme"}, {"brand": ["Bolt", "Cobra"]}, {"tags": "sale"}, {"price": {"lt": 50}},
           {"price": {"gte": 50, "lt": 150}}, {"stock": True}, {"not": {"brand": "Acme"}},
           {"brand": "Acme", "price": {"lt": 50}}, {"or": [{"tags": "red"}, {"brand": "Bolt"}]},
           {"not": {"tags": "sale"}, "stock": True}]


def test_kept_masks_answer_what_fresh_ones_would_through_writes(tmp_path):
    rng = random.Random(11)
    docs = {str(i): _doc(rng, i) for i in range(400)}
    e = ShardEngine(tmp_path / "shard", MAPPING)
    seq = 0

    def write(changes: list[tuple[str, dict | None]]) -> None:
        nonlocal seq
        batch = []
        for doc_id, doc in changes:
            seq += 1
            batch.append(Change(seq, "upsert" if doc else "delete", doc_id, doc))
        e.apply(batch)

    write(list(docs.items()))
    for round_ in range(6):
        for _ in range(2):  # the second pass reads the kept masks
            for flt in FILTERS:
                answer = e.search(Query(q="", filters=flt, limit=1000))
                expected = sorted(i for i, d in docs.items() if _matches(d, flt))
                assert sorted(h.id for h in answer.hits) == expected, (round_, flt)
        changes: list[tuple[str, dict | None]] = []
        for _ in range(40):
            doc_id = str(rng.randrange(500))
            if rng.random() < 0.25 and doc_id in docs:
                del docs[doc_id]
                changes.append((doc_id, None))
            else:
                docs[doc_id] = _doc(rng, int(doc_id))
                changes.append((doc_id, docs[doc_id]))
        write(changes)
    e.close()


def test_the_pool_bounds_the_masks_kept(tmp_path, monkeypatch):
    monkeypatch.setitem(memindex_module.MASK_POOLS, "filters", 3 * 400)  # three masks of 400 slots
    rng = random.Random(3)
    e = ShardEngine(tmp_path / "shard", MAPPING)
    e.apply([Change(i + 1, "upsert", str(i), _doc(rng, i)) for i in range(400)])
    for flt in FILTERS:
        e.search(Query(q="", filters=flt, limit=1))
    cache = e._mem.expansion_cache
    kept = [k for k in cache if isinstance(k, tuple) and k[0] == "filter"]
    assert len(kept) == 3
    assert cache[("mask bytes", "filters")] == 3 * 400
    assert all(not cache[k].flags.writeable for k in kept)
    e.close()
