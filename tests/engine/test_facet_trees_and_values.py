"""Category trees (``hierarchy`` facets and path filters) and facet value search, on one shard and
merged over several, checked against a plain-Python reference over the Best Buy catalog."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from search_workers.engine import ShardEngine
from search_workers.engine.facet_search import value_words
from search_workers.engine.hierarchy import levels_of
from search_workers.merge import merge_answers
from shared.contract import Facet, Query, shard_query
from shared.routing import shard_for
from shared.text import atoms, osa_distance

from .conftest import upserts

SEP = " > "
MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "paths": {"type": "keyword[]", "facetable": True, "filterable": True},
        "price": {"type": "float", "filterable": True},
    },
}
TREE = {"paths": SEP}


def _paths(categories: list[str], full: bool) -> list[str]:
    """A breadcrumb as paths: every level (``full``), or the deepest only."""
    paths = [SEP.join(categories[: i + 1]) for i in range(len(categories))]
    return paths if full else paths[-1:]


@pytest.fixture(scope="module")
def catalog(products) -> list[dict]:
    rng = random.Random(3)
    return [{"id": str(i), "name": p["name"], "brand": p["brand"], "price": p["price"],
             "paths": _paths(p["categories"], full=rng.random() < 0.7)} for i, p in enumerate(products)]


@pytest.fixture(scope="module", params=[1, 3])
def shards(request, catalog, tmp_path_factory):
    n = request.param
    engines = [ShardEngine(tmp_path_factory.mktemp(f"s{i}"), MAPPING) for i in range(n)]
    for i, e in enumerate(engines):
        e.apply(upserts([d for d in catalog if shard_for(d["id"], n) == i]))
    yield engines
    for e in engines:
        e.close()


def search(engines: list[ShardEngine], query: Query):
    return merge_answers(query, [e.search(shard_query(query)) for e in engines])


def _under(doc: dict, path: str) -> bool:
    return any(p == path or p.startswith(path + SEP) for p in doc["paths"])


def _nodes(doc: dict) -> set[str]:
    out = set()
    for p in doc["paths"]:
        parts = p.split(SEP)
        out |= {SEP.join(parts[: i + 1]) for i in range(len(parts))}
    return out


def test_levels_of_a_dictionary():
    levels = levels_of(["A > B > C", "A", "D > E"], SEP)
    assert levels.paths == [["A", "D"], ["A > B", "D > E"], ["A > B > C"]]
    assert levels.node_at[1].tolist() == [0, -1, 1]


@pytest.mark.parametrize("refined", [[], ["Cell Phones"], ["Cell Phones > Unlocked Cell Phones"],
                                     ["Cell Phones > Prepaid Phones", "Audio"]])
def test_tree_counts_each_document_once_per_node_disjunctively(shards, catalog, refined):
    expand = sorted({SEP.join(r.split(SEP)[: i + 1]) for r in refined for i in range(len(r.split(SEP)))})
    flt = {"paths": refined, "price": {"lt": 500}} if refined else {"price": {"lt": 500}}
    answer = search(shards, Query(q="", filters=flt, limit=5, hierarchies=TREE,
                                  facets=(Facet("paths", type="hierarchy", size=None, expand=tuple(expand)),)))
    pool = [d for d in catalog if d["price"] < 500]  # the tree's own filter left out: disjunctive
    want = Counter(n for d in pool for n in _nodes(d))
    wanted = {n for n in want if SEP not in n} | {n for n in want if n.rpartition(SEP)[0] in expand}
    assert dict(answer.facets["paths"]) == {n: want[n] for n in wanted}
    assert answer.total == sum(1 for d in pool if not refined or any(_under(d, r) for r in refined))


def test_a_path_filter_matches_the_path_and_below(shards, catalog):
    path = "Cell Phones > Prepaid Phones"
    answer = search(shards, Query(q="", filters={"paths": path}, limit=1000, hierarchies=TREE))
    assert {h.id for h in answer.hits} == {d["id"] for d in catalog if _under(d, path)} != set()
    # without the hierarchy, a path is one value like any other
    plain = search(shards, Query(q="", filters={"paths": path}, limit=1000))
    assert {h.id for h in plain.hits} == {d["id"] for d in catalog if path in d["paths"]}
    assert plain.total < answer.total


def _meets(typed: str, value: str) -> bool:
    words = atoms(value)
    for t in atoms(typed):
        prefix = any(w.startswith(t) for w in words)
        typo = len(t) >= 4 and any(
            len(w) >= len(t) - 1 and min(osa_distance(t, w[:k], 1) for k in (len(t) - 1, len(t), len(t) + 1)
                                         if k <= len(w)) <= 1 for w in words)
        if not (prefix or typo):
            return False
    return True


@pytest.mark.parametrize("typed", ["sam", "SAM", "ott", "apple", "insig", "b", "zzz", "samsnug", "at&t go"])
def test_facet_value_search_counts_the_matching_values_disjunctively(shards, catalog, typed):
    query = Query(q="", filters={"brand": "Apple", "price": {"lt": 300}}, limit=0,
                  facets=(Facet("brand", type="values", prefix=typed, size=1000),))
    got = search(shards, query).facets["brand"]
    pool = Counter(d["brand"] for d in catalog if d["price"] < 300)  # the brand filter left out
    prefix_only = {b: c for b, c in pool.items() if all(any(w.startswith(t) for w in atoms(b)) for t in atoms(typed))}
    assert set(prefix_only) <= set(got)
    assert all(pool[b] == c and _meets(typed, b) for b, c in got.items())
    if typed == "samsnug":
        assert "Samsung" in got  # one transposition away
    if typed == "sam":
        assert list(got)[0] == min(prefix_only, key=lambda b: (-prefix_only[b], b.casefold(), b))  # by count


def test_value_words_index():
    vw = value_words(["Samsung", "Samsonite Bags", "AT&T"])
    assert vw.words == ["at", "bags", "samsonite", "samsung", "t"]
    assert vw.ords[vw.starts[2]: vw.starts[3]].tolist() == [1]
