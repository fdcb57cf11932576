"""Autocomplete on the Best Buy catalog (3,291 products), loaded once per backend.

The mapping marks ``brand`` and ``categories`` ``suggest``; the catalog's names are searched but
are not a suggestion source unless a test adds them.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from benchmarks.common import FIELDS, MAPPING, load_products
from control_plane.analytics.hooks import flush_analytics
from control_plane.analytics.query_ids import QueryRef, normalize_query, query_hash
from control_plane.analytics.repository import write
from control_plane.analytics.store import Aggregate, today
from control_plane.suggestion.quality import MIN_CLIENTS
from control_plane.suggestion.tasks import schedule_rebuilds
from tests.factories import bearer, make_key, runtime_of
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import Tenant, create_catalog_index, make_tenant, wait_task

ORIGIN = "https://shop.example"
SUGGEST_MAPPING: dict[str, Any] = {
    **MAPPING,
    "fields": {**MAPPING["fields"],
               "brand": {**MAPPING["fields"]["brand"], "suggest": True},
               "categories": {**MAPPING["fields"]["categories"], "suggest": True}},
}


class Shop:
    def __init__(self, tenant: Tenant, index_id: str, public_key: str, profile_key: str) -> None:
        self.tenant = tenant
        self.index_id = index_id
        self.public_key = public_key
        self.profile_key = profile_key

    def url(self, suffix: str) -> str:
        return self.tenant.url(self.index_id, suffix)

    @property
    def headers(self) -> dict[str, str]:
        return self.tenant.headers


@pytest.fixture(scope="module")
def shop(app) -> Shop:
    catalog = load_products()
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_catalog_index(client, tenant, catalog, SUGGEST_MAPPING, "bestbuy")
        profile = client.post(tenant.url(index["id"], "/profiles"),
                              json={"name": "storefront", "queryFields": FIELDS, "perPage": 10},
                              headers=tenant.headers).json()
        public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
        shop = Shop(tenant, index["id"], public, profile["profileKey"])
        rebuild(client, shop)
    return shop


def rebuild(client: TestClient, shop: Shop) -> dict[str, Any]:
    response = client.post(shop.url("/suggestions/rebuild"), headers=shop.headers)
    assert response.status_code == 202, response.text
    task = wait_task(client, shop.headers, shop.tenant.project_id, response.json()["taskId"], timeout=120)
    assert task["status"] == "succeeded", task
    assert task["type"] == "suggestions.rebuild"
    return task


def settle(client: TestClient, shop: Shop) -> None:
    """Wait for the rebuilds that settings changes enqueued (each moves the epoch when it lands)."""
    tasks = client.get(f"/v1/projects/{shop.tenant.project_id}/tasks", headers=shop.headers,
                       params={"type": "suggestions.rebuild", "indexId": shop.index_id,
                               "status": ["enqueued", "processing"]}).json()
    for task in tasks["items"]:
        wait_task(client, shop.headers, shop.tenant.project_id, task["taskId"], timeout=120)


def config(client: TestClient, shop: Shop) -> dict[str, Any]:
    response = client.get(shop.url("/suggestions/config"), headers=shop.tenant.read_headers)
    assert response.status_code == 200, response.text
    return response.json()


def put_config(client: TestClient, shop: Shop, **changes: Any) -> dict[str, Any]:
    body = {**config(client, shop), **changes}
    response = client.put(shop.url("/suggestions/config"), json=body, headers=shop.headers)
    assert response.status_code == 200, response.text
    return response.json()


def suggest(client: TestClient, shop: Shop, q: str, **extra: Any) -> dict[str, Any]:
    key = config(client, shop)["suggestKey"]
    response = client.post(f"/v1/suggest/{key}", json={"q": q, **extra},
                           headers=bearer(shop.public_key) | {"Origin": ORIGIN})
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ORIGIN
    return response.json()


def texts(answer: dict[str, Any]) -> list[str]:
    return [s["text"] for s in answer["suggestions"]]


def test_config_defaults_to_the_suggest_fields(client, shop):
    body = config(client, shop)
    assert [s["field"] for s in body["sources"]] == ["brand", "categories"]
    assert body["suggestKey"] and body["enabled"] is True
    assert body["builtCount"] > 0 and body["builtAt"].endswith("Z")
    assert 1 <= body["maxSuggestions"] <= 20


@pytest.mark.parametrize("change, path", [
    ({"sources": [{"field": "description", "weight": 1}]}, "sources.0.field"),
    ({"sources": [{"field": "brand"}, {"field": "nope"}]}, "sources.1.field"),
    ({"maxSuggestions": 21}, "maxSuggestions"),
    ({"maxSuggestions": 0}, "maxSuggestions"),
    ({"products": {"enabled": True, "count": 3, "profileKey": "pk_unknown"}}, "products.profileKey"),
])
def test_bad_config_is_refused_with_its_path_and_nothing_applied(client, shop, change, path):
    before = config(client, shop)
    response = client.put(shop.url("/suggestions/config"), json={**before, **change}, headers=shop.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert path in [d["path"] for d in error["details"]]
    assert config(client, shop) == before


def test_three_letters_of_a_brand_suggest_it_highlighted(client, shop):
    answer = suggest(client, shop, "sam")
    first = answer["suggestions"][0]
    assert first == {"text": "Samsung", "highlighted": "<em>Sam</em>sung", "source": "brand"}
    assert "tookMs" in answer and "products" not in answer
    assert "OtterBox" in texts(suggest(client, shop, "ott"))


@pytest.mark.parametrize("q", ["samsnug", "smasung", "otterbix", "insignai"])
def test_a_typo_in_the_last_word_still_suggests(client, shop, q):
    wanted = {"samsnug": "Samsung", "smasung": "Samsung", "otterbix": "OtterBox", "insignai": "Insignia™"}[q]
    assert wanted in texts(suggest(client, shop, q))


def test_typo_tolerance_off(client, shop):
    put_config(client, shop, typoTolerance=False)
    try:
        assert "Samsung" not in texts(suggest(client, shop, "samsnug"))
    finally:
        put_config(client, shop, typoTolerance=True)
    assert "Samsung" in texts(suggest(client, shop, "samsnug"))


def test_limit_and_max_suggestions(client, shop):
    assert len(suggest(client, shop, "c", limit=3)["suggestions"]) == 3
    put_config(client, shop, maxSuggestions=2)
    try:
        assert len(suggest(client, shop, "c", limit=10)["suggestions"]) == 2
    finally:
        put_config(client, shop, maxSuggestions=8)


LONG_CUSTOM = "Zanzibar deals " + "on every beach holiday and spice tour " * 4  # over 120 characters


def test_custom_suggestions_rank_by_weight_and_are_served_whatever_the_catalog_holds(client, shop, app):
    """A merchant's text is served when it matches the typed prefix, also when no product has its
    words: a landing page, a campaign or a redirect rule may stand behind it (issue 29)."""
    with runtime_of(app).sessions.begin() as db:  # also searched by shoppers, with results once
        aggregate = Aggregate()
        for i in range(9):
            aggregate.add_search(shop.index_id, today(), "zanzibar deals", 2, f"ip:10.0.0.{i}")
        write(db, aggregate)
    put_config(client, shop, popularQueries={"enabled": True, "minSearches": 5, "days": 7})
    created = []
    for text, weight in (("Samsung Galaxy", 40), ("Samsung Gear", 90), ("Samsung zzqxv unobtainium", 1000),
                         ("zanzibar deals", 10), (LONG_CUSTOM, 5)):
        response = client.post(shop.url("/suggestions/custom"), json={"text": text, "weight": weight},
                               headers=shop.headers)
        assert response.status_code == 201, response.text
        assert response.json()["text"] == " ".join(text.split()) and response.json()["weight"] == weight
        created.append(response.json()["id"])
    try:
        listed = client.get(shop.url("/suggestions/custom"), headers=shop.tenant.read_headers).json()
        assert {i["id"] for i in listed["items"]} == set(created) and listed["nextCursor"] is None
        settle(client, shop)
        rebuild(client, shop)
        got = suggest(client, shop, "samsung")["suggestions"]
        assert got[0] == {"text": "Samsung zzqxv unobtainium", "highlighted": "<em>Samsung</em> zzqxv unobtainium",
                          "source": "custom"}  # no product has these words; the heaviest weight
        assert texts({"suggestions": got}).index("Samsung Gear") < texts({"suggestions": got}).index("Samsung Galaxy")
        custom = [s for s in suggest(client, shop, "samsung g")["suggestions"] if s["source"] == "custom"]
        assert [s["text"] for s in custom] == ["Samsung Gear", "Samsung Galaxy"]
        # the shoppers' query finds nothing now, the merchant's same text is kept, as custom
        assert suggest(client, shop, "zan")["suggestions"][:2] == [
            {"text": "zanzibar deals", "highlighted": "<em>zan</em>zibar deals", "source": "custom"},
            {"text": " ".join(LONG_CUSTOM.split()), "highlighted": "<em>Zan</em>" + " ".join(LONG_CUSTOM.split())[3:],
             "source": "custom"}]
        assert texts(suggest(client, shop, "zzqxv")) == ["Samsung zzqxv unobtainium"]  # a later word's prefix
        assert texts(suggest(client, shop, "galaxy unob")) == []  # the typed words must match
        # a deleted one is gone at once, before any rebuild
        response = client.delete(shop.url(f"/suggestions/custom/{created[1]}"), headers=shop.headers)
        assert response.status_code == 204
        assert "Samsung Gear" not in texts(suggest(client, shop, "samsung"))
    finally:
        for suggestion_id in created:
            client.delete(shop.url(f"/suggestions/custom/{suggestion_id}"), headers=shop.headers)
        put_config(client, shop, popularQueries={"enabled": False, "minSearches": 5, "days": 7})
        settle(client, shop)
    response = client.delete(shop.url(f"/suggestions/custom/{created[0]}"), headers=shop.headers)
    assert response.status_code == 404
    assert "zanzibar deals" not in texts(suggest(client, shop, "zan"))


@pytest.mark.parametrize("text", ["   ", "!!! ...", "_"])
def test_a_custom_suggestion_without_a_letter_or_digit_is_refused(client, shop, text):
    response = client.post(shop.url("/suggestions/custom"), json={"text": text}, headers=shop.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and [d["path"] for d in error["details"]] == ["text"]


def test_no_suggestion_finds_nothing(client, shop):
    seen = set()
    for q in ("a", "c", "s", "ot", "ip", "sma", "case", "samsung g"):
        # texts from the catalog and from shoppers (a merchant's custom text is served regardless)
        seen.update(s["text"] for s in suggest(client, shop, q, limit=20)["suggestions"] if s["source"] != "custom")
    assert len(seen) > 30
    for text in sorted(seen):
        response = client.post(f"/v1/search/{shop.profile_key}", json={"q": text, "perPage": 1},
                               headers=shop.headers)
        assert response.status_code == 200, response.text
        assert response.json()["total"] > 0, text


def test_a_disabled_source_disappears(client, shop):
    assert any(s["source"] == "brand" for s in suggest(client, shop, "s", limit=20)["suggestions"])
    put_config(client, shop, sources=[{"field": "categories", "weight": 1}])
    try:
        # at once (served suggestions are filtered by the settings), and after the rebuild it enqueued
        assert all(s["source"] != "brand" for s in suggest(client, shop, "s", limit=20)["suggestions"])
        assert "Samsung" not in texts(suggest(client, shop, "sam"))
        rebuild(client, shop)
        assert "Samsung" not in texts(suggest(client, shop, "sam"))
        assert "Smartwatches & Accessories" in texts(suggest(client, shop, "smartw"))
    finally:
        put_config(client, shop, sources=[{"field": "brand", "weight": 1}, {"field": "categories", "weight": 1}])
        rebuild(client, shop)
    assert "Samsung" in texts(suggest(client, shop, "sam"))


def test_suggestion_sources_are_in_the_usage_registry(client, shop):
    usage = client.get(shop.url("/mapping/usage"), headers=shop.headers).json()["fields"]
    assert any(u["kind"] == "suggestions" and u["path"] == "sources.0.field" for u in usage["brand"])
    fields = {**SUGGEST_MAPPING["fields"], "brand": {**SUGGEST_MAPPING["fields"]["brand"], "suggest": False}}
    response = client.put(shop.url("/mapping"), json={**SUGGEST_MAPPING, "fields": fields}, headers=shop.headers)
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "MAPPING_BREAKS_CONFIG"
    assert "suggestions.sources.0.field" in [d["path"] for d in error["details"]]


def test_rebuilds_follow_the_catalog(client, shop, app):
    runtime = runtime_of(app)
    settle(client, shop)
    response = client.post(shop.url("/documents"), json=[
        {"id": "zx-1", "name": "Quuxbeam Wireless Speaker", "brand": "Quuxbeam", "categories": ["Speakers"],
         "description": "A speaker", "price": 99.0, "popularity": 1}], headers=shop.headers)
    assert wait_task(client, shop.headers, shop.tenant.project_id, response.json()["taskId"])["status"] == "succeeded"
    assert "Quuxbeam" not in texts(suggest(client, shop, "quux"))
    # debounced: not again right after a build ...
    assert shop.index_id not in schedule_rebuilds(runtime.sessions, debounce_s=3600)
    # ... and once the debounce has passed (unless the runner's own maintenance got there first)
    enqueued = schedule_rebuilds(runtime.sessions, debounce_s=0)
    tasks = client.get(f"/v1/projects/{shop.tenant.project_id}/tasks",
                       params={"type": "suggestions.rebuild", "indexId": shop.index_id}, headers=shop.headers).json()
    assert shop.index_id in enqueued or tasks["items"][0]["status"] in ("enqueued", "processing")
    task = wait_task(client, shop.headers, shop.tenant.project_id, tasks["items"][0]["taskId"])
    assert task["status"] == "succeeded"
    assert "Quuxbeam" in texts(suggest(client, shop, "quux"))
    assert shop.index_id not in schedule_rebuilds(runtime.sessions, debounce_s=0)  # nothing moved since


def test_products_through_a_profile(client, shop):
    put_config(client, shop, products={"enabled": True, "count": 3, "profileKey": shop.profile_key})
    try:
        answer = suggest(client, shop, "otterbox defender")
        assert 1 <= len(answer["products"]) <= 3
        assert all("OtterBox" in hit["document"]["name"] or hit["document"]["brand"].lower() == "otterbox"
                   for hit in answer["products"])
    finally:
        put_config(client, shop, products={"enabled": False, "count": 4, "profileKey": None})


def test_products_without_a_profile_show_only_the_suggestion_fields(client, shop):
    """No profile named: products once carried every field (description, popularity, ...)."""
    put_config(client, shop, products={"enabled": True, "count": 3, "profileKey": None})
    try:
        settle(client, shop)
        sources = {s["field"] for s in config(client, shop)["sources"]}
        for key in (shop.tenant.key, shop.public_key):
            headers = bearer(key) | {"Origin": ORIGIN}
            answer = client.post(f"/v1/suggest/{config(client, shop)['suggestKey']}", json={"q": "otterbox"},
                                 headers=headers).json()
            assert answer["products"]
            for hit in answer["products"]:
                assert set(hit["document"]) <= sources | {"id", "name"} and "name" in hit["document"], hit["document"]
                assert "description" not in hit["document"] and "popularity" not in hit["document"]
    finally:
        put_config(client, shop, products={"enabled": False, "count": 4, "profileKey": None})


def test_suggest_is_cached_under_the_epoch_and_recorded(client, shop, app):
    state = runtime_of(app).search
    settle(client, shop)
    suggest(client, shop, "spec")
    hits, emitted = state.answers.hits, state.events.emitted
    assert texts(suggest(client, shop, "spec")) == texts(suggest(client, shop, "SPEC "))
    assert state.answers.hits >= hits + 2
    assert state.events.emitted == emitted + 2


def test_secret_suggest_by_index_id(client, shop):
    response = client.post(shop.url("/suggest"), json={"q": "ott"}, headers=shop.tenant.read_headers)
    assert response.status_code == 200, response.text
    assert "OtterBox" in texts(response.json())
    assert client.post(shop.url("/suggest"), json={"q": "ott", "limit": 50},
                       headers=shop.headers).json()["error"]["code"] == "VALIDATION_ERROR"


def test_storefront_origins_and_preflight(client, shop):
    key = config(client, shop)["suggestKey"]
    refused = client.post(f"/v1/suggest/{key}", json={"q": "sam"},
                          headers=bearer(shop.public_key) | {"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    no_origin = client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=bearer(shop.public_key))
    assert no_origin.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    preflight = client.options(f"/v1/suggest/{key}", headers={
        "Origin": "https://anything.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://anything.example"
    server = client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=shop.headers)  # secret key, no Origin
    assert server.status_code == 200 and "Samsung" in texts(server.json())


def test_other_tenants_get_404(client, shop, app):
    key = config(client, shop)["suggestKey"]
    other = make_tenant(app)
    other_public = make_key(app, other.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    for headers in (bearer(other_public) | {"Origin": ORIGIN}, other.headers):
        response = client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=headers)
        assert response.status_code == 404, response.text
    unknown = client.post("/v1/suggest/sk_unknown", json={"q": "sam"}, headers=bearer(shop.public_key) | {"Origin": ORIGIN})
    assert unknown.status_code == 404
    foreign = f"/v1/projects/{other.project_id}/indices/{shop.index_id}"
    for method, suffix in (("post", "/suggest"), ("get", "/suggestions/config"), ("get", "/suggestions/custom"),
                           ("post", "/suggestions/rebuild"), ("delete", "/suggestions/custom/sug_x")):
        kwargs: dict[str, Any] = {"json": {"q": "sam"}} if suffix == "/suggest" else {}
        response = getattr(client, method)(foreign + suffix, headers=other.headers, **kwargs)
        assert response.status_code == 404, (suffix, response.text)
    own = client.post(shop.url("/suggest"), json={"q": "sam"}, headers=other.headers)
    assert own.status_code == 404
    scoped = make_key(app, shop.tenant.project_id, index_id="idx_other")
    assert client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=bearer(scoped)).status_code == 404


def test_queries_searched_often_enough_become_suggestions_after_rebuild(client, shop, app):
    aggregate = Aggregate()
    for q, times, total in (("otterbox defender iphone", 6, 12), ("OtterBox Commuter iPhone", 20, 9),
                            ("otterbox symmetry iphone", 6, 8), ("speck presidio grip", 2, 5),
                            ("qqzzx vanished gadget", 9, 3)):
        for i in range(times):
            aggregate.add_search(shop.index_id, today(), q, total, f"user:shopper-{i}")
    clicked = QueryRef(shop.index_id, today(), query_hash(normalize_query("otterbox symmetry iphone")))
    for _ in range(10):
        aggregate.add_event(clicked, "click", "1324", 1)
    with runtime_of(app).sessions.begin() as db:
        write(db, aggregate)
    put_config(client, shop, popularQueries={"enabled": True, "minSearches": 5, "days": 7})
    settle(client, shop)
    rebuild(client, shop)
    popular = [s for s in suggest(client, shop, "otterbox", limit=20)["suggestions"] if s["source"] == "popular"]
    # ranked by searches that found results and clicks (6 + 3 x 10 clicks, 20, 6)
    assert [s["text"] for s in popular] == ["otterbox symmetry iphone", "otterbox commuter iphone",
                                            "otterbox defender iphone"]
    assert popular[1]["highlighted"] == "<em>otterbox</em> commuter iphone"
    assert "speck presidio grip" not in texts(suggest(client, shop, "speck p"))  # searched twice: under minSearches
    assert texts(suggest(client, shop, "qqzzx")) == []  # it found results once; the catalog has nothing now
    put_config(client, shop, popularQueries={"enabled": False, "minSearches": 5, "days": 7})
    assert all(s["source"] != "popular" for s in suggest(client, shop, "otterbox", limit=20)["suggestions"])
    settle(client, shop)


def test_a_new_index_answers_before_and_after_its_first_build(client, shop):
    tenant = shop.tenant
    index = client.post(tenant.url(), json={"name": "fresh", "mapping": SUGGEST_MAPPING}, headers=tenant.headers).json()
    url = tenant.url(index["id"])
    task = client.post(url + "/documents", json=load_products()[:50], headers=tenant.headers).json()
    assert wait_task(client, tenant.headers, tenant.project_id, task["taskId"])["status"] == "succeeded"
    # no settings yet: nothing to suggest, and no settings row is made by suggesting
    response = client.post(url + "/suggest", json={"q": "sam"}, headers=tenant.headers)
    assert response.status_code == 200 and response.json()["suggestions"] == []
    key = client.get(url + "/suggestions/config", headers=tenant.headers).json()["suggestKey"]
    public = bearer(shop.public_key) | {"Origin": ORIGIN}
    response = client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=public)
    assert response.status_code == 200, response.text  # the handle made on first use is found at once
    response = client.post(url + "/suggestions/rebuild", headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])["status"] == "succeeded"
    assert "Samsung" in texts(client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=public).json())
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert client.post(f"/v1/suggest/{key}", json={"q": "sam"}, headers=public).status_code == 404


def test_suggests_are_counted_in_analytics(client, shop, app):
    runtime = runtime_of(app)

    def suggests() -> int:
        flush_analytics(runtime)
        response = client.get(shop.url("/analytics"), headers=shop.headers)
        assert response.status_code == 200, response.text
        return int(response.json()["totals"]["suggests"])

    before = suggests()
    for q in ("a", "ap", "app"):
        suggest(client, shop, q)
    client.post(shop.url("/suggest"), json={"q": "appl"}, headers=shop.headers)
    assert suggests() == before + 4


def _popular(client: TestClient, shop: Shop, q: str) -> list[str]:
    return [s["text"] for s in suggest(client, shop, q, limit=20)["suggestions"] if s["source"] == "popular"]


def test_popular_queries_need_distinct_clients_and_read_like_queries(client, shop, app):
    """Issue 30, finding 2: replayed searches pushed junk into public suggestions. A popular query
    becomes a suggestion only when several distinct clients searched it — a storefront (public key)
    search counts by address, whatever ``userToken`` it sends; a secret key's (the shop's backend)
    by its ``userToken`` — and when it reads like a query: no markup, not only stop words."""
    plan = client.put(f"/v1/orgs/{shop.tenant.account.org_id}/plan", json={"plan": "enterprise"},
                      headers={"Authorization": f"Bearer {shop.tenant.account.token}"})
    assert plan.status_code == 200, plan.text  # the module's suggests used the free plan's searches
    storefront = {**bearer(shop.public_key), "Origin": ORIGIN}
    for i in range(6):  # one shopper (one address) replaying a search under many tokens
        response = client.post(f"/v1/search/{shop.profile_key}", json={"q": "Samsung Galaxy Tab", "userToken": f"t{i}"},
                               headers=storefront)
        assert response.status_code == 200 and response.json()["total"] > 0, response.text
    for i in range(8):  # the shop's backend, searching for its shoppers
        response = client.post(shop.url("/search"), json={"q": "samsung galaxy s7", "userToken": f"shopper-{i % 4}"},
                               headers=shop.headers)
        assert response.status_code == 200 and response.json()["total"] > 0, response.text
    for i in range(8):  # as many searches by fewer clients than needed
        client.post(shop.url("/search"), json={"q": "samsung galaxy note", "userToken": f"u{i % (MIN_CLIENTS - 1)}"},
                    headers=shop.headers)
    flush_analytics(runtime_of(app))
    aggregate = Aggregate()  # searches of many shoppers that find products but are no query to show
    for text in ("<i>samsung galaxy</i>", "samsung galaxy &lt;3", "samsung\u0007galaxy", "samsung `galaxy`",
                 "the of and", "!!! ???"):
        for i in range(10):
            aggregate.add_search(shop.index_id, today(), text, 5, f"ip:192.0.2.{i}")
    with runtime_of(app).sessions.begin() as db:
        write(db, aggregate)
    put_config(client, shop, popularQueries={"enabled": True, "minSearches": 5, "days": 7})
    try:
        settle(client, shop)
        rebuild(client, shop)
        popular = _popular(client, shop, "samsung") + _popular(client, shop, "the") + _popular(client, shop, "i")
        assert popular == ["samsung galaxy s7"]
    finally:
        put_config(client, shop, popularQueries={"enabled": False, "minSearches": 5, "days": 7})
        settle(client, shop)
