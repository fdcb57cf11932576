"""The cheaper paths of a query give the answers of the plain ones: facet counts (single and
multi-valued keywords, ranges; under and over half the shard), highlights, relaxation, and
typo/prefix expansions that every process picks alike."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from search_workers.engine import ShardEngine
from shared.contract import Facet, FacetRange, FieldWeight, Query

from .conftest import upserts

ROOT = Path(__file__).resolve().parents[2]
MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "tags": {"type": "keyword[]", "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "facetable": True},
    },
}
RANGES = (FacetRange(end=20), FacetRange(10, 50), FacetRange(start=50), FacetRange(30, 30), FacetRange(40, 20))
BRANDS = ["acme", "zed", "ono", "kappa"]
TAGS = ["red", "blue", "green", "big", "small"]


def catalog(n: int = 120) -> list[dict]:
    rng = random.Random(5)
    docs = []
    for i in range(n):
        doc: dict = {"id": str(i), "title": f"{rng.choice(['lamp', 'desk', 'chair'])} {rng.choice(['oak', 'pine'])}",
                     "brand": rng.choice(BRANDS), "tags": rng.sample(TAGS, rng.randrange(0, 4))}
        if i % 7:  # some products have no price
            doc["price"] = float(rng.randrange(0, 80))
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    docs = catalog()
    e = ShardEngine(tmp_path_factory.mktemp("fast"), MAPPING)
    e.apply(upserts(docs))
    e.apply(upserts([{**docs[3], "tags": ["red", "red", "big"]}], start_seq=len(docs) + 1))  # a replaced document
    yield e, [d for d in docs if d["id"] != "3"] + [{**docs[3], "tags": ["red", "big"]}]
    e.close()


def brute_facets(docs: list[dict], flt: dict[str, list]) -> dict:
    def ok(d: dict, skip: str) -> bool:
        return all(k == skip or set(v) & set(d[k] if isinstance(d[k], list) else [d[k]]) for k, v in flt.items())

    prices = [d["price"] for d in docs if ok(d, "price") and "price" in d]
    return {
        "brand": dict(Counter(d["brand"] for d in docs if ok(d, "brand"))),
        "tags": dict(Counter(t for d in docs if ok(d, "tags") for t in d["tags"])),
        "price": [sum(1 for p in prices if (r.start is None or p >= r.start) and (r.end is None or p < r.end))
                  for r in RANGES],
    }


@pytest.mark.parametrize("q", ["", "lamp", "lamp oak", "chair pine", "desk"])
@pytest.mark.parametrize("flt", [{}, {"tags": ["red"]}, {"brand": ["acme", "zed"], "tags": ["big", "small"]}])
def test_facet_counts_match_brute_force(shop, q, flt):
    e, docs = shop
    words = q.split()
    matching = [d for d in docs if all(w in d["title"].split() for w in words)]
    facets = (Facet("brand"), Facet("tags"), Facet("price", type="range", ranges=RANGES))
    res = e.search(Query(q=q, fields={"title": FieldWeight()}, filters=flt or None, facets=facets, limit=0))
    expected = brute_facets(matching, flt)
    assert {k: {v: c for v, c in res.facets[k].items() if c} for k in ("brand", "tags")} == {
        k: expected[k] for k in ("brand", "tags")}
    assert res.facets["price"] == expected["price"]


def test_highlight_marks_each_chunk_where_it_is(tmp_path):
    e = ShardEngine(tmp_path, MAPPING)
    e.apply(upserts([{"id": "1", "title": "xyzphone7 <phone> & phone-case phone"}]))
    hit = e.search(Query(q="phone", fields={"title": FieldWeight()}, highlight=("title",))).hits[0]
    # "phone" inside "xyzphone7" is not a chunk of its own: the first highlight is after it
    assert hit.highlights["title"] == "xyzphone7 &lt;<em>phone</em>&gt; &amp; <em>phone-case</em> <em>phone</em>"
    e.close()


@pytest.mark.parametrize("q", ["lamp chair oak", "desk lamp pine", "chair desk", "oak pine lamp"])
def test_relaxation_without_strict_candidates_drops_the_commonest_words(shop, q):
    e, docs = shop
    res = e.search(Query(q=q, fields={"title": FieldWeight()}))
    words = q.split()
    has = {w: {d["id"] for d in docs if w in d["title"].split()} for w in words}
    kept = list(words)
    while not set.intersection(*(has[w] for w in kept)):
        kept.remove(max(reversed(kept), key=lambda w: len(has[w])))  # ties: the later word goes
    assert res.relaxed and res.dropped_words == [w for w in words if w not in kept]
    assert res.total == len(set.intersection(*(has[w] for w in kept)))


_EXPANSIONS = """
import json, sys
from search_workers.engine.analysis import get_analyzer
from search_workers.engine.mapping import compile_mapping
from search_workers.engine.memindex import MemIndex
from search_workers.engine.clauses import build_clauses
from shared.contract import Typo
_, fields = compile_mapping(json.loads(sys.argv[1]))
mem = MemIndex(fields, get_analyzer("en"))
for i, w in enumerate(json.loads(sys.argv[2])):
    mem.add(str(i), {"id": str(i), "title": w})
mem.finalize()
out = {}
for q in ("cart", "zq"):
    out[q] = [[a.terms, a.kind] for c in build_clauses(mem, q, Typo(), None, True) for a in c.alts]
print(json.dumps(out))
"""


def test_expansion_ties_are_broken_by_the_term_in_every_process():
    # "cart" and a dozen words one typo away, all in one document each; 25 words starting "zq"
    typos = ["bart", "dart", "mart", "part", "wart", "kart", "cant", "cast", "curt", "carl", "card", "carp"]
    words = ["cart", *typos, *[f"zq{chr(97 + i)}x" for i in range(25)]]
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _EXPANSIONS, json.dumps(MAPPING), json.dumps(words)],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=True)
        outs.add(done.stdout)
    assert len(outs) == 1
    alts = json.loads(outs.pop())
    # a known word: 8 typos at most; one on the first letter counts as two ("bart" is 2 away)
    assert [t[0] for t, kind in alts["cart"] if kind == "typo"] == sorted(t for t in typos if t[0] == "c")[:8]
    assert [t[0] for t, kind in alts["zq"] if kind == "prefix"] == [f"zq{chr(97 + i)}x" for i in range(20)]


def test_facets_of_documents_with_sets_of_values_of_their_own(tmp_path):
    # every document its own set of tags: counted from a (slots x values) table, not per set
    docs = [{"id": str(i), "title": "lamp", "tags": [f"t{i}", f"t{i + 1}", "all"], "brand": "acme"} for i in range(40)]
    e = ShardEngine(tmp_path, MAPPING)
    e.apply(upserts(docs))
    for flt in (None, {"tags": ["t3", "t30"]}, {"tags": ["all"], "brand": ["acme"]}):
        res = e.search(Query(q="lamp", fields={"title": FieldWeight()}, filters=flt, facets=(Facet("tags"),), limit=0))
        expected = Counter(t for d in docs for t in d["tags"])
        assert res.facets["tags"] == dict(expected)
    few = e.search(Query(q="", filters={"brand": ["acme"]}, facets=(Facet("tags"),), exclude_ids=tuple(map(str, range(5, 40)))))
    assert few.facets["tags"] == dict(Counter(t for d in docs[:5] for t in d["tags"]))
    e.close()
