"""Synonyms and ranking rules at work on the Best Buy catalog (issue #12), both backends.

The catalog is loaded once per backend; each test adds the synonyms and rules it needs and the
``clean`` fixture removes them after it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from benchmarks.common import FIELDS, MAPPING, load_products
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, make_tenant

PROFILE = {"name": "storefront", "queryFields": FIELDS, "facets": ["brand"], "perPage": 10,
           "retrieve": ["name", "brand", "price", "description"]}


def text_of(p: dict) -> str:
    return " ".join([p["name"], p.get("description") or "", *(p.get("categories") or [])]).lower()


@pytest.fixture(scope="module")
def catalog() -> list[dict]:
    return load_products()


@pytest.fixture(scope="module")
def shop(app, catalog):
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, catalog, MAPPING, "bestbuy")
        profile = client.post(tenant.url(index["id"], "/profiles"), json=PROFILE, headers=tenant.headers).json()
    return tenant, index["id"], profile["profileKey"], make_key(app, tenant.project_id, access="read")


@pytest.fixture
def clean(client, shop):
    yield
    tenant, index_id, _, _ = shop
    for kind in ("rules", "synonyms"):
        for item in client.get(tenant.url(index_id, f"/{kind}?limit=1000"), headers=tenant.headers).json()["items"]:
            assert client.delete(tenant.url(index_id, f"/{kind}/{item['id']}"), headers=tenant.headers).status_code == 204


def add(client, shop, kind: str, body: dict) -> dict:
    tenant, index_id, _, _ = shop
    response = client.post(tenant.url(index_id, f"/{kind}"), json=body, headers=tenant.headers)
    assert response.status_code == 201, response.text
    return response.json()


def storefront(client, shop, **body) -> dict:
    _, _, profile_key, key = shop
    response = client.post(f"/v1/search/{profile_key}", json=body, headers=bearer(key))
    assert response.status_code == 200, response.text
    return response.json()


def secret(client, shop, **body) -> dict:
    tenant, index_id, _, _ = shop
    response = client.post(tenant.url(index_id, "/search"), json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return response.json()


def ids(answer: dict) -> list[str]:
    return [h["id"] for h in answer["hits"]]


def all_ids(client, shop, q: str, **body) -> set[str]:
    out: set[str] = set()
    for page in range(1, 6):
        out |= set(ids(storefront(client, shop, q=q, page=page, perPage=100, **body)))
    return out


# --------------------------------------------------------------------------- synonyms
def test_a_multi_word_synonym_finds_products_that_use_only_the_other_form(client, shop, catalog, clean):
    other_form = {p["id"] for p in catalog if "portable charger" in text_of(p)}
    assert len(other_form) > 20
    assert not other_form <= all_ids(client, shop, "juicy brick")
    add(client, shop, "synonyms", {"type": "multiway", "terms": ["juicy brick", "portable charger"]})
    assert other_form <= all_ids(client, shop, "juicy brick")  # the very next search uses it
    assert other_form <= all_ids(client, shop, "Juicy-Bricks")
    # the profile's switch turns them off
    off = secret(client, shop, q="juicy brick", perPage=100, profile={**PROFILE, "synonyms": False})
    assert not other_form <= set(ids(off))


def test_a_oneway_synonym_works_in_one_direction_only(client, shop, catalog, clean):
    headphones_only = {p["id"] for p in catalog if "headphones" in text_of(p) and "earbuds" not in text_of(p)}
    earbuds_only = {p["id"] for p in catalog if "earbuds" in text_of(p) and "headphones" not in text_of(p)}
    assert headphones_only and earbuds_only
    add(client, shop, "synonyms", {"type": "oneway", "input": "earbuds", "synonyms": ["headphones"]})
    found = all_ids(client, shop, "earbuds")
    assert headphones_only <= found and earbuds_only <= found
    assert not earbuds_only & all_ids(client, shop, "headphones")


def test_a_query_word_with_a_typo_still_reaches_its_synonyms(client, shop, catalog, clean):
    headphones_only = {p["id"] for p in catalog if "headphones" in text_of(p) and "earbuds" not in text_of(p)}
    add(client, shop, "synonyms", {"type": "oneway", "input": "earbuds", "synonyms": ["headphones"]})
    assert headphones_only <= all_ids(client, shop, "eearbuds")


# --------------------------------------------------------------------------- rules
def top(client, shop, q: str, **body) -> list[str]:
    return ids(storefront(client, shop, q=q, **body))


def test_pin_puts_the_product_at_its_position_across_pages(client, shop, catalog, clean):
    organic = top(client, shop, "charger", perPage=30)
    stranger = next(p["id"] for p in catalog if "charger" not in text_of(p))
    rule = add(client, shop, "rules", {"name": "pin", "conditions": [{"pattern": "charger", "anchoring": "contains"}],
                                       "consequence": {"pin": [{"id": stranger, "position": 2},
                                                               {"id": organic[20], "position": 12}]}})
    page1 = storefront(client, shop, q="charger")
    assert page1["appliedRules"] == [rule["id"]]
    assert ids(page1)[1] == stranger and page1["hits"][1].get("pinned") is True
    assert ids(page1)[0] == organic[0] and ids(page1)[2:] == organic[1:9]
    page2 = storefront(client, shop, q="charger", page=2)
    assert ids(page2)[1] == organic[20]
    assert ids(page2)[0] == organic[9] and ids(page2)[2:] == organic[10:18]
    assert not set(ids(page1)) & set(ids(page2))
    whole = storefront(client, shop, q="charger", perPage=30)
    assert whole["total"] == storefront(client, shop, q="charger", perPage=1)["total"]
    assert len(set(ids(whole))) == 30
    # a pin that does not pass the search's filters is left out
    filtered = storefront(client, shop, q="charger", filters={"brand": [catalog[int(organic[0])]["brand"]]})
    assert stranger not in ids(filtered) or catalog[int(stranger)]["brand"] == catalog[int(organic[0])]["brand"]


def test_hide_boost_and_bury(client, shop, catalog, clean):
    organic = top(client, shop, "charger", perPage=20)
    hide = add(client, shop, "rules", {"name": "hide", "conditions": [{"pattern": "charger", "anchoring": "is"}],
                                       "consequence": {"hide": [organic[0]]}})
    assert organic[0] not in top(client, shop, "charger", perPage=100)
    assert organic[0] not in top(client, shop, "Chargers", perPage=100)  # "is" folds case and plurals
    assert storefront(client, shop, q="charger cable")["appliedRules"] == []  # "is": the whole query only
    client.delete(shop[0].url(shop[1], f"/rules/{hide['id']}"), headers=shop[0].headers)
    brand = "mophie"
    before = [catalog[int(i)]["brand"] for i in top(client, shop, "charger", perPage=10)]
    add(client, shop, "rules", {"name": "boost", "conditions": [{"pattern": "charger", "anchoring": "contains"}],
                                "consequence": {"boost": [{"filters": {"brand": [brand]}, "weight": 20}]}})
    boosted = [catalog[int(i)]["brand"] for i in top(client, shop, "charger", perPage=10)]
    assert boosted.count(brand) > before.count(brand) and boosted[0] == brand
    top_brand = catalog[int(organic[0])]["brand"]
    add(client, shop, "rules", {"name": "bury", "conditions": [{"pattern": "charger", "anchoring": "contains"}],
                                "consequence": {"bury": [{"filters": {"brand": [top_brand]}, "weight": 1}]}})
    buried = [catalog[int(i)]["brand"] for i in top(client, shop, "charger", perPage=10)]
    assert top_brand not in buried or top_brand == brand


def test_expired_and_not_yet_valid_rules_do_nothing(client, shop, clean):
    now = datetime.now(UTC)
    organic = top(client, shop, "charger")
    for window in ({"until": (now - timedelta(hours=1)).isoformat()}, {"from": (now + timedelta(hours=1)).isoformat()}):
        add(client, shop, "rules", {"name": f"w{len(window)}", "validity": [window],
                                    "conditions": [{"pattern": "charger", "anchoring": "is"}],
                                    "consequence": {"hide": organic[:3]}})
    answer = storefront(client, shop, q="charger")
    assert answer["appliedRules"] == [] and ids(answer) == organic
    current = add(client, shop, "rules", {"name": "now", "validity": [{"from": (now - timedelta(hours=1)).isoformat(),
                                                                        "until": (now + timedelta(hours=1)).isoformat()}],
                                          "conditions": [{"pattern": "charger", "anchoring": "is"}],
                                          "consequence": {"hide": organic[:1]}})
    answer = storefront(client, shop, q="charger")
    assert answer["appliedRules"] == [current["id"]] and organic[0] not in ids(answer)


def test_replace_query_and_add_filters_change_the_hits(client, shop, catalog, clean):
    add(client, shop, "rules", {"name": "cheap", "conditions": [{"pattern": "cheap", "anchoring": "startsWith"}],
                                "consequence": {"replaceQuery": "charger", "addFilters": {"price": {"lt": 20}}}})
    answer = storefront(client, shop, q="cheap stuff", perPage=50)
    assert answer["total"] > 0
    assert all(h["document"]["price"] < 20 for h in answer["hits"])
    assert all("charger" in text_of(catalog[int(h["id"])]) for h in answer["hits"][:10])
    assert answer["facets"]["brand"] and sum(f["count"] for f in answer["facets"]["brand"]) <= answer["total"]


def test_a_change_applies_to_the_very_next_search_cached_or_not(client, shop, clean):
    tenant, index_id, _, _ = shop
    first = top(client, shop, "charger")
    assert top(client, shop, "charger") == first  # now cached
    rule = add(client, shop, "rules", {"name": "hide", "conditions": [{"pattern": "charger", "anchoring": "is"}],
                                       "consequence": {"hide": [first[0]]}})
    assert first[0] not in top(client, shop, "charger")
    body = {"name": "hide", "enabled": False, "conditions": [{"pattern": "charger", "anchoring": "is"}],
            "consequence": {"hide": [first[0]]}}
    assert client.put(tenant.url(index_id, f"/rules/{rule['id']}"), json=body, headers=tenant.headers).status_code == 200
    assert top(client, shop, "charger") == first
    synonym = add(client, shop, "synonyms", {"type": "oneway", "input": "zzyzx", "synonyms": ["charger"]})
    assert top(client, shop, "zzyzx")
    client.delete(tenant.url(index_id, f"/synonyms/{synonym['id']}"), headers=tenant.headers)
    assert top(client, shop, "zzyzx") == []


def test_redirect_and_user_data_reach_the_storefront_and_the_profile_switch_turns_rules_off(client, shop, clean):
    rule = add(client, shop, "rules", {"name": "help", "conditions": [{"pattern": "return policy", "anchoring": "is"}],
                                       "consequence": {"redirect": "https://shop.example/returns",
                                                       "userData": {"banner": "returns"}}})
    answer = storefront(client, shop, q="Return Policy")
    assert answer["redirect"] == "https://shop.example/returns" and answer["userData"] == [{"banner": "returns"}]
    assert answer["appliedRules"] == [rule["id"]]
    off = secret(client, shop, q="return policy", profile={**PROFILE, "rules": False})
    assert off["appliedRules"] == [] and "redirect" not in off


def test_rules_test_shows_matched_rules_and_the_resulting_hits(client, shop, catalog, clean):
    tenant, index_id, _, _ = shop
    organic = top(client, shop, "charger")
    off = add(client, shop, "rules", {"name": "off", "enabled": False,
                                      "conditions": [{"pattern": "charger", "anchoring": "contains"}],
                                      "consequence": {"hide": organic[:1]}})
    draft = {"name": "try", "conditions": [{"pattern": "charger", "anchoring": "is"}],
             "consequence": {"pin": [{"id": organic[5], "position": 1}]}}
    response = client.post(tenant.url(index_id, "/rules/test"), json={"q": "charger", "rule": draft},
                           headers=tenant.read_headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert {(m["id"], m["active"]) for m in body["matchedRules"]} == {(off["id"], False), ("draft", True)}
    assert body["appliedRules"] == ["draft"] and body["hits"][0]["id"] == organic[5]
    # nothing was saved, and the cached storefront answer did not take the draft
    assert top(client, shop, "charger") == organic
    bad = client.post(tenant.url(index_id, "/rules/test"), json={"q": "x", "rule": {**draft, "consequence": {}}},
                      headers=tenant.headers)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "VALIDATION_ERROR"


def test_rules_test_with_a_saved_rules_id_previews_the_edit_in_its_place(client, shop, catalog, clean):
    tenant, index_id, profile_key, _ = shop
    organic = top(client, shop, "charger")
    saved = add(client, shop, "rules", {"name": "hide first", "conditions": [{"pattern": "charger", "anchoring": "is"}],
                                        "consequence": {"hide": organic[:1]}})
    edit = {**{k: saved[k] for k in ("id", "name", "conditions")}, "consequence": {"pin": [{"id": organic[3],
                                                                                            "position": 1}]}}
    response = client.post(tenant.url(index_id, "/rules/test"), json={"q": "charger", "rule": edit,
                                                                      "profileKey": profile_key},
                           headers=tenant.read_headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [m["id"] for m in body["matchedRules"]] == ["draft"]  # the saved version is left out
    assert body["appliedRules"] == ["draft"]
    hits = [h["id"] for h in body["hits"]]
    assert hits[0] == organic[3] and organic[0] in hits  # pinned, and organic[0] no longer hidden
