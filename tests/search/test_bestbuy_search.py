"""What shoppers feel, on the real Best Buy catalog through the storefront route.

The catalog (3,291 products) is loaded once per backend; the profile weights name over brand over
categories over description.
"""

from __future__ import annotations

import pytest

from benchmarks.common import FIELDS, MAPPING, load_products
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, make_tenant

PROFILE = {
    "name": "storefront",
    "queryFields": FIELDS,
    "facets": ["brand"],
    "sortOptions": [{"key": "price_asc", "label": "Price: low to high", "sort": ["price:asc"]},
                    {"key": "price_desc", "label": "Price: high to low", "sort": ["price:desc"]}],
    "perPage": 10,
    "highlight": ["name"],
    "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 0.05}],
}


@pytest.fixture(scope="module")
def catalog() -> list[dict]:
    return load_products()


@pytest.fixture(scope="module")
def shop(app, catalog):
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, catalog, MAPPING, "bestbuy")
        profile = client.post(tenant.url(index["id"], "/profiles"), json=PROFILE, headers=tenant.headers).json()
        key = make_key(app, tenant.project_id, access="read")
    return profile["profileKey"], key


def search(client, shop, **body) -> dict:
    profile_key, key = shop
    response = client.post(f"/v1/search/{profile_key}", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    return response.json()


def ids(answer: dict) -> list[str]:
    return [h["id"] for h in answer["hits"]]


def names(answer: dict) -> list[str]:
    return [h["document"]["name"] for h in answer["hits"]]


@pytest.mark.parametrize("query, product", [
    ("apple iphone 7 128gb jet black verizon", "93"),
    ("samsung galaxy s7 edge blue coral sprint", "34"),
    ("lg b470", "6"),
    ("acer liquid z630", "423"),
    ("otterbox defender lg g5", "1324"),
])
def test_brand_and_model_finds_the_product_first(client, shop, query, product):
    assert ids(search(client, shop, q=query))[0] == product


@pytest.mark.parametrize("query", ["samsnug galaxy s7 edge", "samsung galxy s7 edge", "samsung galaxyy s7 edge",
                                   "samsung galaxt s7 edge"])
def test_one_typo_still_finds_it(client, shop, query):
    # transposition, deletion, insertion, substitution
    assert any("Galaxy S7 edge" in n for n in names(search(client, shop, q=query))[:10])


@pytest.mark.parametrize("query, expected", [("otterbox defe", "OtterBox - Defender"), ("blueparr", "BlueParrott"),
                                             ("insign", "Insignia")])
def test_prefix_of_the_last_word(client, shop, query, expected):
    assert any(expected in n for n in names(search(client, shop, q=query))[:5])


def test_plural_and_singular_match(client, shop):
    singular = search(client, shop, q="screen protector")
    plural = search(client, shop, q="screen protectors")
    assert singular["total"] == plural["total"] > 0
    assert set(ids(singular)) == set(ids(plural))


def test_model_codes_joined_hyphenated_spaced(client, shop):
    for query in ("blueparrott b350-xt", "blueparrott b350 xt", "blueparrott b350xt", "BLUEPARROTT B350XT"):
        assert ids(search(client, shop, q=query))[0] == "667", query


def test_model_numbers_rank_exact_model_first(client, shop):
    top = names(search(client, shop, q="iphone 7"))
    assert len(top) == 10
    assert all("iPhone 7" in n or "iPhone® 7" in n for n in top), top
    assert not any("iPhone 7" in n for n in names(search(client, shop, q="iphone 6"))[:5])
    for query in ("iphone7", "iphone-7"):
        assert set(ids(search(client, shop, q=query))[:5]) & set(ids(search(client, shop, q="iphone 7"))[:10])


def test_brand_filter_with_disjunctive_counts(client, shop, catalog):
    everything = search(client, shop, q="case", facets=["brand"])
    counts = {f["value"]: f["count"] for f in everything["facets"]["brand"]}
    filtered = search(client, shop, q="case", facets=["brand"], filters={"brand": ["OtterBox", "Speck"]})
    assert filtered["total"] == counts["OtterBox"] + counts["Speck"]
    assert {h["document"]["brand"] for h in filtered["hits"]} <= {"OtterBox", "Speck"}
    # the brand facet ignores the brand filter (disjunctive), so other brands still show their counts
    filtered_counts = {f["value"]: f["count"] for f in filtered["facets"]["brand"]}
    assert filtered_counts == counts


def test_price_range_filter_and_sorting(client, shop):
    answer = search(client, shop, q="headphones", filters={"price": {"gte": 50, "lt": 100}}, sort="price_asc",
                    perPage=50)
    prices = [h["document"]["price"] for h in answer["hits"]]
    assert prices and all(50 <= p < 100 for p in prices)
    assert prices == sorted(prices)
    descending = [h["document"]["price"] for h in search(client, shop, q="headphones", sort="price_desc")["hits"]]
    assert descending == sorted(descending, reverse=True)


def test_page_two_continues_page_one(client, shop):
    page1 = search(client, shop, q="charger", page=1)
    page2 = search(client, shop, q="charger", page=2)
    both = search(client, shop, q="charger", perPage=20)
    assert ids(page1) + ids(page2) == ids(both)
    assert not set(ids(page1)) & set(ids(page2))


def test_highlights_mark_matched_words(client, shop):
    hit = search(client, shop, q="otterbox defender")["hits"][0]
    assert "<em>OtterBox</em>" in hit["highlights"]["name"]
    assert "<em>Defender</em>" in hit["highlights"]["name"]


def test_words_that_occur_together_never_answer_empty(client, shop):
    assert search(client, shop, q="samsung galaxy s7 edge unicornword")["total"] > 0
    # query syntax is plain text: the same answer as its words, relaxed (which words survive is
    # decided per shard by counting: stop words and typo guesses go first)
    syntax = search(client, shop, q="plain text: name:foo* AND (bar")
    words = search(client, shop, q="plain text name foo and bar")
    assert syntax["total"] == words["total"] > 0
    assert ids(syntax) == ids(words)
