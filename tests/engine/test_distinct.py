"""``Query.distinct``: one hit per value of a keyword field, on one shard and merged over several."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from search_workers.engine import EngineError, ShardEngine
from search_workers.merge import merge_answers
from shared.contract import Facet, Query, SortKey, shard_query
from shared.routing import shard_for

from .conftest import upserts

MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "family": {"type": "keyword", "filterable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True},
        "tags": {"type": "keyword[]", "filterable": True},
        "price": {"type": "float", "filterable": True, "sortable": True},
    },
}
COLOURS = ["black", "white", "red", "blue", "green"]


def catalog(n: int = 400, seed: int = 7) -> list[dict]:
    """Products in families of 1-12 colour variants; some have no family (a group each)."""
    rng = random.Random(seed)
    docs: list[dict] = []
    fam = 0
    while len(docs) < n:
        fam += 1
        size = rng.choice([1, 1, 2, 3, 5, 12])
        brand = rng.choice(["Acme", "Zed", "Orb"])
        words = rng.sample(["portable", "charger", "cable", "speaker", "case", "phone", "mini", "pro"], 3)
        for c in rng.sample(COLOURS * 3, size):
            d = {"id": f"p{len(docs)}", "title": " ".join(words + [c]), "brand": brand,
                 "tags": [c], "price": round(rng.uniform(5, 200), 2)}
            if fam % 9:
                d["family"] = f"fam{fam}"
            docs.append(d)
    return docs[:n]


@pytest.fixture(scope="module")
def docs() -> list[dict]:
    return catalog()


@pytest.fixture(scope="module")
def engine(docs, tmp_path_factory):
    e = ShardEngine(tmp_path_factory.mktemp("distinct") / "shard", MAPPING)
    e.apply(upserts(docs))
    yield e
    e.close()


@pytest.fixture(scope="module")
def shards(docs, tmp_path_factory):
    """The same catalog over 3 shards, placed by id as the service places it."""
    root = tmp_path_factory.mktemp("distinct3")
    engines = []
    for s in range(3):
        e = ShardEngine(root / f"s{s}", MAPPING)
        e.apply(upserts([d for d in docs if shard_for(d["id"], 3) == s]))
        engines.append(e)
    yield engines
    for e in engines:
        e.close()


def group_of(doc: dict) -> str:
    return doc.get("family") or f"own:{doc['id']}"


def expected(all_hits, by_id, offset, limit):
    """First hit of each group in the plain ranking: what distinct must answer."""
    seen: set[str] = set()
    out = []
    for h in all_hits:
        g = group_of(by_id[h.id])
        if g not in seen:
            seen.add(g)
            out.append(h.id)
    return out[offset: offset + limit], len(seen)


QUERIES = [
    dict(q="charger"),
    dict(q="portable charger"),
    dict(q="phone", operator="or"),
    dict(q=""),
    dict(q="", sort=(SortKey("price"),)),
    dict(q="cable", sort=(SortKey("price", desc=True),)),
    dict(q="", filters={"tags": ["red"]}),
]


@pytest.mark.parametrize("kw", QUERIES)
def test_one_hit_per_group_best_first_and_sizes(engine, docs, kw):
    by_id = {d["id"]: d for d in docs}
    plain = engine.search(Query(**kw, limit=1000))
    for offset, limit in ((0, 10), (10, 10), (0, 3), (25, 7)):
        ans = engine.search(Query(**kw, offset=offset, limit=limit, distinct="family"))
        want, groups = expected(plain.hits, by_id, offset, limit)
        assert [h.id for h in ans.hits] == want
        assert ans.total == groups
        for h in ans.hits:
            g = group_of(by_id[h.id])
            assert h.group_size == sum(1 for x in plain.hits if group_of(by_id[x.id]) == g)
            assert (h.group_key is None) == ("family" not in by_id[h.id])


def test_pages_continue_without_repeating_a_group(engine, docs):
    by_id = {d["id"]: d for d in docs}
    seen: list[str] = []
    page = 0
    while True:
        ans = engine.search(Query(q="", sort=(SortKey("price"),), offset=page * 9, limit=9, distinct="family"))
        if not ans.hits:
            break
        seen.extend(group_of(by_id[h.id]) for h in ans.hits)
        page += 1
    assert len(seen) == len(set(seen)) == ans.total
    assert len(seen) < len(docs)  # families did group documents


def test_facets_still_count_documents(engine):
    facets = (Facet("brand"),)
    plain = engine.search(Query(q="charger", facets=facets))
    grouped = engine.search(Query(q="charger", facets=facets, distinct="family"))
    assert grouped.facets == plain.facets
    assert sum(grouped.facets["brand"].values()) == plain.total > grouped.total


def test_large_group_beyond_the_first_ranked_prefix(tmp_path):
    """A family of 300 variants outranks every other product: the top 5 groups still come back."""
    docs = [{"id": f"v{i}", "title": "charger charger charger", "family": "big", "price": 1.0} for i in range(300)]
    docs += [{"id": f"o{i}", "title": f"charger item{i}", "family": f"f{i}", "price": 2.0} for i in range(20)]
    e = ShardEngine(tmp_path / "s", MAPPING)
    e.apply(upserts(docs))
    ans = e.search(Query(q="charger", limit=5, distinct="family"))
    assert ans.hits[0].id.startswith("v") and ans.hits[0].group_size == 300
    assert [h.id[0] for h in ans.hits[1:]] == ["o"] * 4
    assert ans.total == 21
    e.close()


def test_distinct_off_adds_nothing(engine):
    ans = engine.search(Query(q="charger", limit=5))
    assert all(h.group_size is None and h.group_key is None for h in ans.hits)
    assert ans.group_keys == b"" and ans.group_counts == b"" and ans.ungrouped == 0


def test_shard_reports_every_group_for_the_merge(engine, docs):
    ans = engine.search(Query(q="", limit=1, distinct="family"))
    keys = np.frombuffer(ans.group_keys, dtype="<u8")
    counts = np.frombuffer(ans.group_counts, dtype="<i8")
    assert len(keys) == len(set(keys.tolist()))
    assert int(counts.sum()) + ans.ungrouped == len(docs)
    assert ans.ungrouped == sum(1 for d in docs if "family" not in d)


@pytest.mark.parametrize("field", ["title", "price", "nope"])
def test_distinct_needs_a_keyword_field_with_values(engine, field):
    with pytest.raises(EngineError) as err:
        engine.search(Query(q="charger", distinct=field))
    assert err.value.details[0]["path"] == "distinct"


def test_a_field_whose_type_changed_groups_by_its_first_value(engine, docs):
    """Profiles only name keyword fields; a keyword[] one (a type changed under a profile) still
    answers, one group per first value."""
    ans = engine.search(Query(q="", distinct="tags", limit=10))
    assert ans.total == len({d["tags"][0] for d in docs}) == len(ans.hits)
    assert sorted(h.group_size for h in ans.hits) == sorted(Counter(d["tags"][0] for d in docs).values())


# -- several shards ----------------------------------------------------------------------------
def fan_out(engines, query: Query):
    sq = shard_query(query)
    return merge_answers(query, [e.search(sq) for e in engines])


@pytest.mark.parametrize("kw", QUERIES)
def test_merge_over_shards_matches_the_plain_merge(shards, docs, kw):
    """Groups span shards (placed by id): sizes add up, total counts groups once, and the page is
    the first hit of each group in the plain merged ranking."""
    by_id = {d["id"]: d for d in docs}
    spread = {group_of(d): {shard_for(x["id"], 3) for x in docs if group_of(x) == group_of(d)} for d in docs[:60]}
    assert any(len(s) > 1 for s in spread.values())
    plain = fan_out(shards, Query(**kw, limit=1000))
    for offset, limit in ((0, 10), (10, 10), (30, 5)):
        merged = fan_out(shards, Query(**kw, offset=offset, limit=limit, distinct="family"))
        want, groups = expected(plain.hits, by_id, offset, limit)
        assert [h.id for h in merged.hits] == want
        assert merged.total == groups
        for h in merged.hits:
            g = group_of(by_id[h.id])
            assert h.group_size == sum(1 for x in plain.hits if group_of(by_id[x.id]) == g)
        assert merged.group_keys == b""


def test_merged_facets_count_documents(shards):
    facets = (Facet("brand"),)
    plain = fan_out(shards, Query(q="", facets=facets, limit=3))
    grouped = fan_out(shards, Query(q="", facets=facets, limit=3, distinct="family"))
    assert grouped.facets == plain.facets
    assert grouped.total < plain.total == sum(plain.facets["brand"].values())
