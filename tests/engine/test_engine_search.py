"""Search behaviour on the real Best Buy catalog (one shard built per module) and small shards."""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest

from benchmarks.relevance import key_of, make_typo, model_query
from search_workers.engine.candidates import candidate_slots, plan_clauses
from search_workers.engine.clauses import build_clauses
from search_workers.engine.scoring import score_plans
from shared.contract import Boost, BoostFilter, Facet, FacetRange, FieldWeight, Query, SortKey, Typo

from .conftest import FIELDS, ids
from .test_engine_basics import make


def find(products, name_start):
    return next(str(i) for i, p in enumerate(products) if p["name"].startswith(name_start))


def S(engine, q, **kw):
    return engine.search(Query(q=q, fields=FIELDS, **kw))


# ---------------------------------------------------------------- relevance on the catalog
def test_brand_model_query_finds_product_first(bestbuy, products):
    rng = random.Random(1)
    sample = rng.sample(range(len(products)), 300)
    keys = {i: key_of(q) for i, p in enumerate(products) if (q := model_query(p))}
    ok = total = 0
    for i in sample:
        q = model_query(products[i])
        if not q:
            continue
        total += 1
        top = S(bestbuy, q, limit=1).hits
        ok += bool(top) and (int(top[0].id) == i or keys.get(int(top[0].id)) == keys[i])
    assert ok / total >= 0.97, (ok, total)


def test_exact_beats_wrong_model(bestbuy, products):
    target = find(products, "Samsung - Galaxy S7 edge 32GB")
    top = S(bestbuy, "samsung galaxy s7 edge 32gb", limit=3).hits
    assert "S7 edge 32GB" in top[0].document["name"]
    assert any(h.id == target or "Galaxy S7 edge 32GB" in h.document["name"] for h in top)


@pytest.mark.parametrize("typo,kind", [
    ("samsong", "substitution"), ("samsng", "deletion"), ("samsuung", "insertion"), ("samsnug", "transposition"),
    ("galxay", "transposition"), ("galaxi", "substitution"),
])
def test_one_typo_still_top10(bestbuy, products, typo, kind):
    q = "samsung galaxy s7 edge 32gb".replace("samsung" if typo.startswith("sam") else "galaxy", typo)
    res = S(bestbuy, q, limit=10)
    assert res.hits, q
    assert not res.relaxed
    assert all("Galaxy S7 edge" in h.document["name"] for h in res.hits[:3]), (kind, [h.document["name"] for h in res.hits[:3]])


def test_typo_sample_top10(bestbuy, products):
    rng = random.Random(3)
    keys = {i: key_of(q) for i, p in enumerate(products) if (q := model_query(p))}
    ok = total = 0
    for i in rng.sample(range(len(products)), 150):
        q = model_query(products[i])
        if not q:
            continue
        words = q.split()
        cand = [k for k, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
        if not cand:
            continue
        k = rng.choice(cand)
        words[k] = make_typo(words[k], rng)[0]
        total += 1
        hits = S(bestbuy, " ".join(words), limit=10).hits
        ok += any(int(h.id) == i or keys.get(int(h.id)) == keys[i] for h in hits)
    assert ok / total >= 0.97, (ok, total)


def test_exact_match_scores_above_typo_match(tmp_path):
    e = make(tmp_path, [{"id": "typo", "title": "samsing charger"}, {"id": "exact", "title": "samsung charger"}])
    res = e.search(Query(q="samsung"))
    assert ids(res) == ["exact", "typo"] and res.hits[0].score > res.hits[1].score
    assert ids(e.search(Query(q="samsung", typo=Typo(enabled=False)))) == ["exact"]
    e.close()


def test_typo_thresholds(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "cat"}, {"id": "2", "title": "smartphone"}])
    assert e.search(Query(q="cot")).total == 0  # 3 letters: no typo allowed
    assert ids(e.search(Query(q="smratphoen"))) == ["2"]  # 10 letters: two typos
    assert e.search(Query(q="smratphoen", typo=Typo(min_word_size_two_typos=11))).total == 0
    e.close()


@pytest.mark.parametrize("q,expect", [
    ("sams", "Samsung"), ("samsung gal", "Galaxy"), ("samsung gala", "Galaxy"), ("samsung galax", "Galaxy"),
    ("apple iph", "iPhone"), ("otterbox defe", "Defender"),
])
def test_prefix_of_last_word(bestbuy, q, expect):
    res = S(bestbuy, q, limit=10)
    assert res.total > 0 and not res.relaxed
    assert all(expect.lower() in (h.document["name"] + h.document["brand"]).lower() for h in res.hits[:5])


def test_prefix_scores_below_exact(tmp_path):
    e = make(tmp_path, [{"id": "long", "title": "phonebook"}, {"id": "exact", "title": "phone"}])
    assert ids(e.search(Query(q="phone"))) == ["exact", "long"]
    assert ids(e.search(Query(q="phone", fields={"title": FieldWeight(prefix=False)}))) == ["exact"]
    e.close()


def test_plural_and_singular(bestbuy):
    a = S(bestbuy, "car charger", limit=50)
    b = S(bestbuy, "car chargers", limit=50)
    assert a.total == b.total > 0
    assert set(ids(a)) == set(ids(b))


def test_model_code_variants(tmp_path):
    docs = [
        {"id": "s7", "title": "Samsung Galaxy S7 SM-G930 32GB"},
        {"id": "s6", "title": "Samsung Galaxy S6 SM-G920 64 GB"},
        {"id": "i7", "title": "Apple iPhone 7 128GB"},
        {"id": "i8", "title": "Apple iPhone8 64GB"},
        {"id": "i8p", "title": "Apple iPhone 8 Plus"},
    ]
    e = make(tmp_path, docs)
    for q in ["SM-G930", "sm g930", "smg930", "SMG930", "sm-g930", "g930"]:
        assert ids(e.search(Query(q=q)))[:1] == ["s7"], q
    for q in ["iPhone8", "iphone 8", "iphone-8"]:
        top = ids(e.search(Query(q=q)))
        assert set(top[:2]) == {"i8", "i8p"}, (q, top)
    for q in ["128GB", "128 gb", "128gb"]:
        assert ids(e.search(Query(q=q)))[:1] == ["i7"], q
    for q in ["64GB", "64 gb"]:
        assert set(ids(e.search(Query(q=q)))[:2]) == {"s6", "i8"}, q
    e.close()


def test_single_digit_ranking(tmp_path, bestbuy):
    docs = [
        {"id": "8a", "title": "Apple iPhone 8 64GB Silver"},
        {"id": "8b", "title": "Apple iPhone 8 Plus 256GB"},
        {"id": "7a", "title": "Apple iPhone 7 32GB Black"},
        {"id": "7b", "title": "Apple iPhone 7 Plus 128GB"},
    ]
    e = make(tmp_path, docs)
    assert set(ids(e.search(Query(q="iphone 7")))[:2]) == {"7a", "7b"}
    assert ids(e.search(Query(q="iphone 7 plus")))[0] == "7b"
    e.close()
    top = S(bestbuy, "iphone 7", limit=10).hits
    assert len(top) == 10
    assert all("7" in h.document["name"] for h in top), [h.document["name"] for h in top]


def test_all_words_fallback_never_empty(bestbuy):
    res = S(bestbuy, "samsung galaxy qqzzxxyy", limit=5)
    assert res.total > 0 and res.relaxed and res.dropped_words == ["qqzzxxyy"]
    assert len(res.hits) == 5 and all("samsung" in h.document["name"].lower() for h in res.hits)
    # two words that never occur together: least discriminative word dropped first
    res = S(bestbuy, "otterbox nokia", limit=5)
    assert res.total > 0 and res.relaxed and len(res.dropped_words) == 1
    # no relaxation when asked not to
    assert S(bestbuy, "samsung galaxy qqzzxxyy", relax=False).total == 0


def test_operator_or(bestbuy):
    both = S(bestbuy, "otterbox nokia", operator="or", limit=2000)
    ob = S(bestbuy, "otterbox", limit=2000).total
    nk = S(bestbuy, "nokia", limit=2000).total
    assert max(ob, nk) <= both.total <= ob + nk and not both.relaxed


@pytest.mark.parametrize("q", ['name:foo*', '"(', 'AND', 'OR NOT -', '*', ')(][', 'a AND b', '\\', '~!@#$%^&*', 'brand:Apple', ''])
def test_special_characters_are_text(bestbuy, products, q):
    """No query syntax: the answer is that of the query's words alone; punctuation alone browses all."""
    words = re.sub(r"\W+", " ", q).strip()
    res, plain = S(bestbuy, q, limit=3), S(bestbuy, words, limit=3)
    assert (res.total, ids(res)) == (plain.total, ids(plain))
    assert res.total == len(products) if not words else 0 < res.total < len(products)


def test_operators_are_plain_words(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "Rock AND Roll"}, {"id": "2", "title": "rock pop"}, {"id": "3", "title": "title foo"}])
    assert ids(e.search(Query(q="and"))) == ["1"]
    assert ids(e.search(Query(q="rock AND"))) == ["1"]
    assert ids(e.search(Query(q="title:foo*")))[0] == "3"  # words "title" and "foo", no field syntax
    e.close()


# ---------------------------------------------------------------- filters & facets
def brute(products, pred):
    return {str(i) for i, p in enumerate(products) if pred(p)}


def all_ids(engine, query):
    res = engine.search(Query(**query, limit=100000))
    assert res.total == len(res.hits)
    return {h.id for h in res.hits}


def test_filters_terms_range_not_ids(bestbuy, products):
    brands = ["Samsung", "Apple"]
    got = all_ids(bestbuy, {"q": "", "filters": {"brand": brands}})
    assert got == brute(products, lambda p: p["brand"] in brands)
    got = all_ids(bestbuy, {"q": "", "filters": {"price": {"gte": 10, "lt": 50}}})
    assert got == brute(products, lambda p: 10 <= p["price"] < 50)
    got = all_ids(bestbuy, {"q": "", "filters": {"brand": "Samsung", "price": {"gt": 100}, "not": {"categories": ["Cell Phones"]}}})
    assert got == brute(products, lambda p: p["brand"] == "Samsung" and p["price"] > 100 and "Cell Phones" not in p["categories"])
    got = all_ids(bestbuy, {"q": "case", "filters": {"categories": ["Cell Phone Cases", "Screen Protectors"], "price": {"lte": 20}}})
    assert got and got <= brute(products, lambda p: p["price"] <= 20 and {"Cell Phone Cases", "Screen Protectors"} & set(p["categories"]))
    assert all_ids(bestbuy, {"q": "", "filters": {"id": ["5", "17", "nope"]}}) == {"5", "17"}
    assert all_ids(bestbuy, {"q": "", "filters": {"brand": "No Such Brand"}}) == set()


def test_filters_bool_date_int(tmp_path):
    docs = [
        {"id": "1", "title": "a", "inStock": True, "released": "2024-01-05T00:00:00Z", "stock": 5, "tags": ["x", "y"]},
        {"id": "2", "title": "a", "inStock": False, "released": "2023-06-01", "stock": 0, "tags": ["y"]},
        {"id": "3", "title": "a", "released": "2025-02-01T10:00:00+02:00", "stock": 12},
    ]
    e = make(tmp_path, docs)
    q = lambda f: sorted(ids(e.search(Query(q="", filters=f))))  # noqa: E731
    assert q({"inStock": True}) == ["1"]
    assert q({"inStock": False}) == ["2"]
    assert q({"not": {"inStock": True}}) == ["2", "3"]
    assert q({"released": {"gte": "2024-01-01"}}) == ["1", "3"]
    assert q({"released": {"lt": "2024-01-01T00:00:00Z"}}) == ["2"]
    assert q({"stock": {"gt": 0, "lte": 12}}) == ["1", "3"]
    assert q({"stock": [0, 12]}) == ["2", "3"]
    assert q({"tags": "y"}) == ["1", "2"]
    assert q({"tags": ["x"], "stock": {"gte": 1}}) == ["1"]
    r = e.search(Query(q="", facets=(Facet("inStock"), Facet("tags"))))
    assert r.facets == {"inStock": {"true": 1, "false": 1}, "tags": {"x": 1, "y": 2}}
    e.close()


def test_disjunctive_facets_match_brute_force(bestbuy, products):
    flt = {"brand": ["Samsung", "Apple"], "categories": ["Cell Phone Cases"], "price": {"lt": 60}}
    ranges = (FacetRange(end=20, label="cheap"), FacetRange(20, 50, "mid"), FacetRange(start=50, label="high"))
    res = bestbuy.search(Query(q="", filters=flt, limit=0,
                               facets=(Facet("brand"), Facet("categories"), Facet("price", type="range", ranges=ranges))))
    in_cat = lambda p: "Cell Phone Cases" in p["categories"]  # noqa: E731
    in_brand = lambda p: p["brand"] in ("Samsung", "Apple")  # noqa: E731
    cheap = lambda p: p["price"] < 60  # noqa: E731
    exp_brand = Counter(p["brand"] for p in products if in_cat(p) and cheap(p))
    exp_cat = Counter(c for p in products if in_brand(p) and cheap(p) for c in set(p["categories"]))
    base = [p for p in products if in_brand(p) and in_cat(p)]
    exp_price = [sum(p["price"] < 20 for p in base), sum(20 <= p["price"] < 50 for p in base), sum(p["price"] >= 50 for p in base)]
    assert res.facets["brand"] == dict(exp_brand)
    assert res.facets["categories"] == dict(exp_cat)
    assert res.facets["price"] == exp_price
    assert res.total == sum(1 for p in products if in_brand(p) and in_cat(p) and cheap(p))
    assert res.hits == []


def test_facets_follow_text_query(bestbuy):
    res = S(bestbuy, "otterbox", limit=0, facets=(Facet("brand"),), filters={"brand": ["Samsung"]})
    matched = all_ids(bestbuy, {"q": "otterbox", "fields": FIELDS})
    assert sum(res.facets["brand"].values()) == len(matched)  # own filter left out
    assert res.total == len(matched & all_ids(bestbuy, {"q": "", "filters": {"brand": "Samsung"}}))


# ---------------------------------------------------------------- sort, paging, highlight, boosts
def test_sort_monotonic_with_relevance_tiebreak(bestbuy):
    for direction in ("asc", "desc"):
        res = S(bestbuy, "charger", sort=(SortKey("price", desc=direction == "desc"),), limit=200)
        prices = [h.document["price"] for h in res.hits]
        assert prices == sorted(prices, reverse=direction == "desc") and len(prices) == 200
        assert [h.sort_values[0] for h in res.hits] == prices
        for a, b in zip(res.hits, res.hits[1:], strict=False):
            if a.document["price"] == b.document["price"]:
                assert a.score >= b.score
    res = S(bestbuy, "", sort=(SortKey("popularity", desc=True),), limit=50)
    pops = [h.document["popularity"] for h in res.hits]
    assert pops == sorted(pops, reverse=True)


def test_paging_without_overlap(bestbuy):
    for query in ({"q": "case"}, {"q": ""}, {"q": "case", "sort": (SortKey("price"),)}):
        full = ids(S(bestbuy, **query, limit=60))
        pages = []
        for page in range(3):
            pages += ids(S(bestbuy, **query, offset=page * 20, limit=20))
        assert pages == full and len(set(pages)) == 60


def test_highlights(bestbuy):
    res = S(bestbuy, "at&t samsung galax", limit=3, highlight=("name", "brand"))
    h = res.hits[0].highlights
    assert "<em>Samsung</em>" in h["name"] and "<em>Galaxy</em>" in h["name"]
    assert "<em>AT&amp;T</em>" in h["brand"]
    assert "<" not in h["name"].replace("<em>", "").replace("</em>", "")


def test_highlight_escapes_html(tmp_path):
    e = make(tmp_path, [{"id": "1", "title": "<b>Red</b> shoe & sock"}])
    hl = e.search(Query(q="shoe", highlight=("title",))).hits[0].highlights["title"]
    assert hl == "&lt;b&gt;Red&lt;/b&gt; <em>shoe</em> &amp; sock"
    e.close()


def test_boosts_boost_filters_exclude_synonyms(tmp_path):
    docs = [{"id": str(i), "title": "usb cable", "stock": i, "brand": "Acme" if i == 3 else "Zed"} for i in range(6)]
    docs.append({"id": "tv", "title": "television stand"})
    e = make(tmp_path, docs)
    base = ids(e.search(Query(q="cable")))
    assert base == ["0", "1", "2", "3", "4", "5"]  # equal scores: internal order
    assert ids(e.search(Query(q="cable", boosts=(Boost("stock", "log1p", 1),))))[0] == "5"
    assert ids(e.search(Query(q="cable", boost_filters=(BoostFilter({"brand": "Acme"}, 2),))))[0] == "3"
    assert ids(e.search(Query(q="cable", boost_filters=(BoostFilter({"brand": "Zed"}, -1),))))[0] == "3"
    assert ids(e.search(Query(q="cable", exclude_ids=("0", "1")))) == ["2", "3", "4", "5"]
    assert ids(e.search(Query(q="tv", synonyms={"tv": (("television",),)}))) == ["tv"]
    assert ids(e.search(Query(q="tv", synonyms={"tv": (("television", "stand"),)}))) == ["tv"]
    assert e.search(Query(q="tv")).total == 0
    e.close()


def test_empty_query_matches_all_and_total(bestbuy, products):
    res = bestbuy.search(Query(q="", limit=5))
    assert res.total == len(products) and len(res.hits) == 5 and not res.relaxed


@pytest.mark.parametrize("q", ["samsung galaxy s7", "iphone 6s case", "cell phones", "usb cable", "insignia tv 32", "sony hedphones"])
def test_candidate_scoring_paths_agree(bestbuy, q):
    """Scores accumulated by slot (broad queries) and looked up per candidate (narrow ones) agree,
    on the all-words candidates and on every clause's docs."""
    mem = bestbuy._mem
    plans = plan_clauses(mem, build_clauses(mem, q, Typo(), None, True), FIELDS)
    union = candidate_slots(mem, plans, True)
    in_all = union[np.logical_and.reduce([s > 0 for s in score_plans(mem, plans, union).clause_scores])]
    assert np.array_equal(candidate_slots(mem, plans, False), in_all)
    for any_clause in (False, True):
        cands = candidate_slots(mem, plans, any_clause)
        by_slot = score_plans(mem, plans, cands, dense=True)
        by_lookup = score_plans(mem, plans, cands, dense=False)
        assert len(by_slot.clause_scores) == len(plans)
        for a, b in zip(by_slot.clause_scores, by_lookup.clause_scores, strict=True):
            assert np.array_equal(a, b)
        for a, b in zip(by_slot.clause_field_hit, by_lookup.clause_field_hit, strict=True):
            assert a.keys() == b.keys() and all(np.array_equal(a[f], b[f]) for f in a)
        assert (mem.slot_positions() == -1).all()  # the scratch map is left clean


def test_relaxation_counts_a_multi_word_synonym_only_where_all_its_words_are(tmp_path):
    """"bravo" -> "xray yankee": a doc with only "xray" does not match "bravo", so "alpha bravo"
    finds nothing with all words and drops "bravo" (not: keeps both and answers empty)."""
    e = make(tmp_path, [{"id": "1", "title": "alpha xray"}, {"id": "2", "title": "bravo"},
                        {"id": "3", "title": "charlie yankee"}])
    res = e.search(Query(q="alpha bravo", synonyms={"bravo": (("xray", "yankee"),)}, fields={"title": FieldWeight(weight=1)}))
    assert (res.total, ids(res), res.relaxed, res.dropped_words) == (1, ["1"], True, ["bravo"])
    both = e.search(Query(q="alpha bravo", synonyms={"bravo": (("alpha", "xray"),)}, fields={"title": FieldWeight(weight=1)}))
    assert (ids(both), both.relaxed) == (["1"], False)
