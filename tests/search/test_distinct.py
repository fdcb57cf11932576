"""The profile setting ``distinct`` (issue #12, variants) on the Best Buy catalog, through the API.

The catalog has no field naming a product's variant group, so the test data derives one:
``family`` is the name without its trailing `` - <colour>`` segment when the name has three or more
segments ("Dynex™ - Portable Charger - Blue" -> "Dynex™ - Portable Charger"); a name with fewer
segments is its own family. The index has 2 shards, so groups span shards.
"""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.common import FIELDS, MAPPING, load_products
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, make_tenant

GROUPED_MAPPING = {
    **MAPPING,
    "fields": {**MAPPING["fields"], "family": {"type": "keyword", "filterable": True},
               "image": {"type": "keyword"}},
}
PLAIN = {
    "name": "plain",
    "queryFields": FIELDS,
    "facets": ["brand"],
    "sortOptions": [{"key": "price_asc", "label": "Price: low to high", "sort": ["price:asc"]}],
    "perPage": 10,
}
GROUPED = {**PLAIN, "name": "grouped", "distinct": "family"}


def family(name: str) -> str:
    parts = name.split(" - ")
    return " - ".join(parts[:-1]) if len(parts) >= 3 else name


@pytest.fixture(scope="module")
def catalog() -> list[dict]:
    return [{**p, "family": family(p["name"])} for p in load_products()]


@pytest.fixture(scope="module")
def shop(app, catalog):
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, catalog, GROUPED_MAPPING, "bestbuy-variants")
        keys = {}
        for body in (PLAIN, GROUPED):
            response = client.post(tenant.url(index["id"], "/profiles"), json=body, headers=tenant.headers)
            assert response.status_code == 201, response.text
            keys[body["name"]] = response.json()
        read_key = make_key(app, tenant.project_id, access="read")
    return tenant, index["id"], keys, read_key


def search(client, shop, profile: str, **body) -> dict:
    _, _, profiles, key = shop
    response = client.post(f"/v1/search/{profiles[profile]['profileKey']}", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    return response.json()


def families(answer: dict) -> list[str]:
    return [h["document"]["family"] for h in answer["hits"]]


def test_variants_collapse_with_group_sizes(client, shop):
    plain = search(client, shop, "plain", q="portable charger", perPage=100)
    more = search(client, shop, "plain", q="portable charger", perPage=100, page=2)
    assert plain["total"] <= 200  # every match is on these two pages
    plain["hits"] += more["hits"]
    top = families(plain)[:10]
    assert len(set(top)) < len(top)  # the complaint: one product in several colours
    sizes = Counter(families(plain))
    grouped = search(client, shop, "grouped", q="portable charger", perPage=100)
    assert grouped["total"] == len(sizes) < plain["total"]
    if len(sizes) > 100:
        grouped["hits"] += search(client, shop, "grouped", q="portable charger", perPage=100, page=2)["hits"]
    assert len(set(families(grouped))) == len(grouped["hits"]) == len(sizes)
    assert {h["document"]["family"]: h["groupSize"] for h in grouped["hits"]} == dict(sizes)
    # each group shows its best ranked variant, in the plain order of those best variants
    firsts = list(dict.fromkeys(families(plain)))
    best = {f: next(h["id"] for h in plain["hits"] if h["document"]["family"] == f) for f in firsts}
    assert [h["id"] for h in grouped["hits"]] == [best[f] for f in firsts]
    assert all("groupSize" not in h for h in plain["hits"])


def test_facets_count_documents(client, shop):
    plain = search(client, shop, "plain", q="case")
    grouped = search(client, shop, "grouped", q="case")
    assert grouped["facets"] == plain["facets"]
    assert grouped["total"] < plain["total"]


def test_page_two_continues_page_one(client, shop):
    for sort in (None, "price_asc"):
        extra = {"sort": sort} if sort else {}
        page1 = search(client, shop, "grouped", q="case", perPage=6, page=1, **extra)
        page2 = search(client, shop, "grouped", q="case", perPage=6, page=2, **extra)
        both = search(client, shop, "grouped", q="case", perPage=12, page=1, **extra)
        assert not set(families(page1)) & set(families(page2))
        assert [h["id"] for h in page1["hits"] + page2["hits"]] == [h["id"] for h in both["hits"]]
        assert page1["total"] == page2["total"] == both["total"]


def test_sort_with_distinct_shows_each_groups_cheapest(client, shop):
    grouped = search(client, shop, "grouped", q="charger", sort="price_asc", perPage=8)
    prices = [h["document"]["price"] for h in grouped["hits"]]
    assert prices == sorted(prices) and len(set(families(grouped))) == len(prices)
    for hit in grouped["hits"][:3]:
        members = search(client, shop, "plain", q="charger", sort="price_asc", perPage=1,
                         filters={"family": [hit["document"]["family"]]})
        assert members["hits"][0]["document"]["price"] == hit["document"]["price"]
        assert members["total"] == hit["groupSize"]


@pytest.mark.parametrize("field", ["name", "categories", "popularity", "image", "nope"])
def test_distinct_must_name_a_filterable_keyword_field(client, shop, field):
    tenant, index_id, _, _ = shop
    response = client.post(tenant.url(index_id, "/profiles"), json={**PLAIN, "name": f"bad-{field}", "distinct": field},
                           headers=tenant.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "PROFILE_INVALID"
    assert {d["path"] for d in error["details"]} == {"distinct"}
    # an inline profile (secret search) is checked the same way
    response = client.post(tenant.url(index_id, "/search"), json={"q": "x", "profile": {**PLAIN, "distinct": field}},
                           headers=tenant.headers)
    assert response.status_code == 400 and response.json()["error"]["code"] == "PROFILE_INVALID"
    assert {d["path"] for d in response.json()["error"]["details"]} == {"distinct"}


def test_inline_profile_groups_too(client, shop):
    tenant, index_id, _, _ = shop
    response = client.post(tenant.url(index_id, "/search"), json={"q": "portable charger", "profile": GROUPED},
                           headers=tenant.headers)
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits and all(h["groupSize"] >= 1 for h in hits)
    assert len(set(families(response.json()))) == len(hits)


def test_mapping_change_dropping_the_field_breaks_config(client, shop):
    tenant, index_id, profiles, _ = shop
    usage = client.get(tenant.url(index_id, "/mapping/usage"), headers=tenant.headers).json()["fields"]
    assert {"kind": "profile", "id": profiles["grouped"]["id"], "name": "grouped", "path": "distinct"} in usage["family"]
    mapping = client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers).json()
    dropped = {k: v for k, v in mapping["fields"].items() if k != "family"}
    not_filterable = {**mapping["fields"], "family": {"type": "keyword"}}
    for fields in (dropped, not_filterable):
        response = client.put(tenant.url(index_id, "/mapping"), json={**mapping, "fields": fields},
                              headers=tenant.headers)
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == "MAPPING_BREAKS_CONFIG"
        assert f"profiles.{profiles['grouped']['id']}.distinct" in {d["path"] for d in error["details"]}
    assert client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers).json() == mapping


def test_other_tenants_key_does_not_reach_the_profile(app, client, shop):
    _, _, profiles, _ = shop
    stranger = make_tenant(app)
    response = client.post(f"/v1/search/{profiles['grouped']['profileKey']}", json={"q": "charger"},
                           headers=bearer(stranger.read_key))
    assert response.status_code == 404, response.text


def test_a_pinned_variant_stands_for_its_group(client, shop, catalog):
    tenant, index_id, _, _ = shop
    grouped = search(client, shop, "grouped", q="portable charger", perPage=20)
    hit = next(h for h in grouped["hits"] if h["groupSize"] >= 2)
    family_name = hit["document"]["family"]
    variant = next(p["id"] for p in catalog if p["family"] == family_name and p["id"] != hit["id"])
    rule = client.post(tenant.url(index_id, "/rules"), headers=tenant.headers, json={
        "name": "pin a variant", "conditions": [{"pattern": "portable charger", "anchoring": "is"}],
        "consequence": {"pin": [{"id": variant, "position": 1}]}})
    assert rule.status_code == 201, rule.text
    try:
        pinned = search(client, shop, "grouped", q="portable charger", perPage=20)
        assert pinned["hits"][0]["id"] == variant and pinned["hits"][0]["pinned"] is True
        assert families(pinned).count(family_name) == 1
        assert pinned["total"] == grouped["total"]  # the pin stands for the group it took out
    finally:
        client.delete(tenant.url(index_id, f"/rules/{rule.json()['id']}"), headers=tenant.headers)
