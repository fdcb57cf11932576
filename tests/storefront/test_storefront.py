"""Storefront search: public keys from allowed origins, CORS, tenancy of profile handles."""

from __future__ import annotations

import pytest

from tests.factories import bearer, make_account, make_key, make_project
from tests.index.helpers import create_index, make_tenant, products, upload

ORIGIN = "https://shop.example.com"


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(30))
    profile = client.post(
        tenant.url(index["id"], "/profiles"),
        json={
            "name": "web",
            "queryFields": {"name": {"weight": 10}, "brand": {"weight": 3}},
            "facets": ["brand"],
            "sortOptions": [{"key": "cheap", "label": "Cheapest", "sort": ["price:asc"]}],
            "perPage": 5,
            "highlight": ["name"],
        },
        headers=tenant.headers,
    ).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None,
                      allowed_origins=[ORIGIN, "https://*.shops.example"])
    return tenant, index, profile, public


def test_public_key_from_allowed_origin(client, shop):
    tenant, index, profile, public = shop
    response = client.post(f"/v1/search/{profile['profileKey']}", json={"q": "phone", "facets": ["brand"]},
                           headers={**bearer(public), "Origin": ORIGIN})
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "access-control-allow-credentials" not in response.headers
    body = response.json()
    assert body["total"] == 15 and len(body["hits"]) == 5 and body["perPage"] == 5
    assert all("phone" in h["document"]["name"] for h in body["hits"])
    assert body["hits"][0]["highlights"]["name"].count("<em>") == 1
    assert sum(f["count"] for f in body["facets"]["brand"]) == 15
    assert body["queryId"].startswith("q_") and body["appliedRules"] == []

    wildcard = client.post(f"/v1/search/{profile['profileKey']}", json={"q": "phone"},
                           headers={**bearer(public), "Origin": "https://eu.shops.example"})
    assert wildcard.status_code == 200


def test_origin_rules(client, shop):
    _tenant, _index, profile, public = shop
    url = f"/v1/search/{profile['profileKey']}"
    for origin in ("https://evil.example", "https://shops.example", "http://shop.example.com", None):
        headers = bearer(public) | ({"Origin": origin} if origin else {})
        response = client.post(url, json={"q": "phone"}, headers=headers)
        assert response.status_code == 403, origin
        assert response.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"


def test_preflight_from_any_origin_without_credentials(client, shop):
    _tenant, _index, profile, _public = shop
    response = client.options(
        f"/v1/search/{profile['profileKey']}",
        headers={"Origin": "https://anything.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"},
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://anything.example"
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in response.headers
    # management routes get no CORS headers
    management = client.options(f"/v1/projects/{_tenant.project_id}", headers={"Origin": "https://anything.example",
                                "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in management.headers


def test_secret_keys_and_tenancy(app, client, shop):
    tenant, _index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    assert client.post(url, json={"q": "laptop"}, headers=tenant.read_headers).status_code == 200

    other = make_account(app)
    other_project = make_project(app, other)
    for key in (make_key(app, other_project), make_key(app, other_project, key_type="public", access=None,
                                                        allowed_origins=[ORIGIN])):
        response = client.post(url, json={"q": "laptop"}, headers={**bearer(key), "Origin": ORIGIN})
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "NOT_FOUND"

    unknown = client.post("/v1/search/pk_nope", json={"q": "x"}, headers=tenant.headers)
    assert unknown.status_code == 404
    session = client.post(url, json={"q": "x"}, headers=tenant.account.headers)
    assert session.status_code == 403 and session.json()["error"]["code"] == "FORBIDDEN"
    assert client.post(url, json={"q": "x"}).status_code == 401


def test_bad_bodies(client, shop):
    tenant, _index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    for body in ({"q": 5}, {"page": 0}, {"perPage": 500}, {"sort": "nope"}, {"profile": {}}, [1]):
        response = client.post(url, json=body, headers=tenant.headers)
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    malformed = client.post(url, content=b"{", headers={**tenant.headers, "Content-Type": "application/json"})
    assert malformed.status_code == 400


def test_sort_and_pages(client, shop):
    tenant, _index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    page1 = client.post(url, json={"q": "product", "sort": "cheap"}, headers=tenant.headers).json()
    page2 = client.post(url, json={"q": "product", "sort": "cheap", "page": 2}, headers=tenant.headers).json()
    prices = [h["document"]["price"] for h in page1["hits"] + page2["hits"]]
    assert prices == sorted(prices) and page1["sort"] == "cheap"
    assert not {h["id"] for h in page1["hits"]} & {h["id"] for h in page2["hits"]}


def test_answer_cache_and_no_cache_header(app, client, shop):
    tenant, _index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    answers = app.state.runtime.search.answers
    first = client.post(url, json={"q": "laptop"}, headers=tenant.headers).json()
    hits_before = answers.hits
    second = client.post(url, json={"q": "  LAPTOP"}, headers=tenant.headers).json()
    assert answers.hits == hits_before + 1  # normalized query served from the cache
    assert second["hits"] == first["hits"] and second["queryId"] != first["queryId"]
    fresh = client.post(url, json={"q": "laptop"}, headers={**tenant.headers, "Cache-Control": "no-cache"})
    assert fresh.status_code == 200 and answers.hits == hits_before + 1


def test_no_stale_answer_after_documents_change(client, shop):
    tenant, index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    before = client.post(url, json={"q": "zanzibar"}, headers=tenant.headers).json()
    assert before["total"] == 0
    upload(client, tenant, index["id"], [{"id": "z1", "name": "Zanzibar phone", "brand": "Zed", "price": 5.0}])
    after = client.post(url, json={"q": "zanzibar"}, headers=tenant.headers).json()
    assert after["total"] == 1 and after["hits"][0]["id"] == "z1"


def test_search_events_are_emitted(app, client, shop):
    tenant, _index, profile, _public = shop
    events = app.state.runtime.search.events
    seen: list[dict] = []
    events.subscribe(seen.extend)
    body = client.post(f"/v1/search/{profile['profileKey']}", json={"q": "phone", "userToken": "u1"},
                       headers=tenant.headers).json()
    events.drain()
    mine = [e for e in seen if e["queryId"] == body["queryId"]]
    assert len(mine) == 1
    assert mine[0]["q"] == "phone" and mine[0]["total"] == body["total"] and mine[0]["userToken"] == "u1"
    assert mine[0]["source"] == "storefront" and mine[0]["profileId"] == profile["id"]


def test_plan_search_rate_is_enforced(app, client, shop):
    """The free plan allows 10 searches/s, counted over 10-second windows: the 101st within one is 429."""
    tenant, _index, profile, _public = shop
    url = f"/v1/search/{profile['profileKey']}"
    statuses = [client.post(url, json={"q": "phone"}, headers=tenant.headers).status_code for _ in range(101)]
    assert statuses[:100].count(200) >= 90 and statuses[-1] == 429
    refused = client.post(url, json={"q": "phone"}, headers=tenant.headers)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    # a bigger plan raises the limit at once (the change moves the epochs of the org's indices)
    plan = client.put(f"/v1/orgs/{tenant.account.org_id}/plan", json={"plan": "enterprise"},
                      headers={"Authorization": f"Bearer {tenant.account.token}"})
    assert plan.status_code == 200, plan.text
    assert client.post(url, json={"q": "phone"}, headers=tenant.headers).status_code == 200


def test_caller_is_refused_before_the_body_is_read(client, shop):
    """No key, an unknown key or a disallowed origin is refused as such, whatever the body."""
    _tenant, _index, profile, public = shop
    url = f"/v1/search/{profile['profileKey']}"
    bad = {"q": 5}
    assert client.post(url, json=bad).status_code == 401
    assert client.post(url, json=bad, headers=bearer("ss_pk_unknown")).status_code == 401
    refused = client.post(url, json=bad, headers=bearer(public) | {"Origin": "https://evil.example"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    assert client.post(url, json=bad, headers=bearer(public) | {"Origin": ORIGIN}).status_code == 400
