"""Relevance defaults on the Best Buy catalog (one shard, built once per module): each test is a
class of queries the shopper of issue #12 found, checked over several of its members."""

from __future__ import annotations

import re

import pytest

from search_workers.engine.analysis import CHUNK_RE, get_analyzer
from shared.contract import Facet, Query

from .conftest import FIELDS

AN = get_analyzer("en")


def search(e, q: str, limit: int = 10, **kw):
    return e.search(Query(q=q, fields=FIELDS, limit=limit, **kw))


def holders(products: list[dict], word: str) -> int:
    """Products holding ``word`` (as the analyzer reads it) in a searchable field."""
    term = AN.normalize(word)
    n = 0
    for p in products:
        text = " ".join([p["name"], p["brand"], " ".join(p["categories"]), p["description"]])
        n += any(term in AN.chunk_terms(c) for c in CHUNK_RE.findall(text))
    return n


@pytest.mark.parametrize("word", ["iphone", "samsung", "otterbox", "charger", "battery"])
def test_a_common_word_alone_finds_the_products_holding_it(bestbuy, products, word):
    ans = search(bestbuy, word + " ", facets=(Facet(field="brand"),))
    assert ans.total == holders(products, word)


def test_iphone_brand_facet_is_not_filled_by_typo_matches(bestbuy):
    ans = search(bestbuy, "iphone ", facets=(Facet(field="brand"),))
    assert ans.total < 3291 // 2
    brands = ans.facets["brand"]
    assert max(brands, key=brands.get) in ("Apple", "Incipio")
    assert brands.get("Samsung", 0) < brands["Apple"] // 4


@pytest.mark.parametrize("q", ["unlocked phone under 200", "otterbox case under 50", "samsung charger below 30"])
def test_price_words_go_before_product_words(bestbuy, q):
    ans = search(bestbuy, q + " ")
    assert ans.relaxed
    kept = [w for w in q.split() if w not in ans.dropped_words]
    assert all(not w.isdigit() for w in kept)
    assert ans.hits, q  # the loop below asserts something
    for h in ans.hits:
        text = " ".join([h.document["name"], h.document["brand"], *h.document["categories"], h.document["description"]])
        terms = {t for c in CHUNK_RE.findall(text) for t in AN.chunk_terms(c)}
        assert all(AN.normalize(w) in terms for w in kept), (q, h.document["name"])
    assert {"unlocked", "otterbox", "samsung"} & set(kept)


@pytest.mark.parametrize("q", ["samsung galaxy s8", "samsung galaxy s9", "lg g7", "galaxy j4"])
def test_an_absent_model_code_is_not_found_in_a_capacity(bestbuy, q):
    assert search(bestbuy, q + " ", relax=False).total == 0
    ans = search(bestbuy, q + " ")
    assert ans.relaxed and ans.hits


@pytest.mark.parametrize("code", ["S5", "S6", "S7", "G5", "J3"])
def test_a_model_code_finds_it_glued_or_spelled_apart(bestbuy, products, code):
    spelled = re.compile(rf"\b{code[0]}[ -]?{code[1:]}\b", re.I)
    ans = search(bestbuy, f"galaxy {code} " if code[0] in "SJ" else f"lg {code} ", limit=50)
    assert ans.hits and all(spelled.search(h.document["name"] + " " + h.document["description"]) for h in ans.hits)
    if code == "S5":  # "Galaxy S 5" spelled apart
        assert any("S 5" in h.document["name"] for h in ans.hits)


@pytest.mark.parametrize("brand", ["Samsung", "Apple", "Motorola", "LG", "BLU", "Huawei"])
def test_a_brand_alone_ranks_its_own_products_first(bestbuy, products, brand):
    own = sum(p["brand"] == brand for p in products)
    k = min(own, 10)
    assert [h.document["brand"] for h in search(bestbuy, brand + " ", limit=k).hits] == [brand] * k


def test_a_multi_word_synonym_reaches_the_other_form(bestbuy, products):
    # "brick" is in no product: as a synonym of "wall charger", "charging brick" finds wall chargers
    assert search(bestbuy, "charging brick ", relax=False).total == 0
    syn = {"charging brick": (("wall", "charger"),)}
    ans = search(bestbuy, "charging brick ", relax=False, synonyms=syn, limit=5)
    assert ans.total > 0 and all("wall charger" in h.document["name"].lower() for h in ans.hits)


def test_a_word_glued_to_a_code_still_counts(bestbuy):
    # "s7edge": the code s7 and the word edge; "K8PIN4FB": a long code found whole
    glued = search(bestbuy, "galaxy s7edge ").hits
    assert glued and all("S7 edge" in h.document["name"] for h in glued)
    assert search(bestbuy, "ipod k8pin4fb connector ", relax=False).total > 0
