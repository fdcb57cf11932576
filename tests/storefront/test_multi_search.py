"""``POST /v1/multi-search`` (CONTRACT §9): a page's storefront queries in one round trip, each
answered exactly as the single route would, each refused as it would refuse, each counted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import bearer, make_account, make_key
from tests.index.helpers import create_index, make_tenant, products, upload

ORIGIN = "https://shop.example.com"
URL = "/v1/multi-search"


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(40))
    web = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers, json={
        "name": "web", "queryFields": {"name": {"weight": 1}}, "facets": ["brand", "tags"], "perPage": 5,
        "retrieve": ["name", "brand"],
        "sortOptions": [{"key": "cheap", "label": "Price", "sort": ["price:asc"]}]}).json()
    lean = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers, json={
        "name": "lean", "queryFields": {"name": {"weight": 1}}}).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return {"tenant": tenant, "index": index, "web": web["profileKey"], "lean": lean["profileKey"],
            "public": {**bearer(public), "Origin": ORIGIN}, "public_key": public}


def _same(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("queryId", "tookMs")}


def test_answers_in_order_each_as_the_single_route(client, shop):
    queries = [
        {"profileKey": shop["web"], "q": "product", "filters": {"brand": "Acme"}, "facets": ["brand"]},
        {"profileKey": shop["lean"], "q": "laptop"},
        {"profileKey": shop["web"], "q": "product", "perPage": 0, "facets": ["brand"]},
        {"profileKey": shop["web"], "q": "", "sort": "cheap", "page": 2},
    ]
    response = client.post(URL, json={"queries": queries}, headers=shop["public"])
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ORIGIN
    results = response.json()["results"]
    assert len(results) == len(queries)
    for query, result in zip(queries, results, strict=True):
        body = {k: v for k, v in query.items() if k != "profileKey"}
        single = client.post(f"/v1/search/{query['profileKey']}", json=body, headers=shop["public"]).json()
        assert _same(result) == _same(single)
    assert results[2]["hits"] == [] and results[2]["total"] > 0 and results[2]["facets"]["brand"]
    assert results[2]["perPage"] == 0 and results[0]["total"] < results[2]["total"]


def test_per_page_zero_on_the_single_route_gives_counts_only(client, shop):
    answer = client.post(f"/v1/search/{shop['web']}", json={"q": "product", "perPage": 0}, headers=shop["public"])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["hits"] == [] and body["total"] > 0 and set(body["facets"]) == {"brand", "tags"}


@pytest.mark.parametrize("bad, path, code", [
    ({"q": "x", "sort": "nope"}, "queries[1].sort", "VALIDATION_ERROR"),
    ({"q": "x", "filters": {"price": {"lt": 5}}}, "queries[1].filters.price", "VALIDATION_ERROR"),  # not exposed
    ({"q": "x", "facets": ["price"]}, "queries[1].facets.0", "VALIDATION_ERROR"),
    ({"q": "x", "profile": {"queryFields": {}}}, "queries[1].profile", "VALIDATION_ERROR"),
    ({"q": "x", "perPage": 101}, "queries[1].perPage", "VALIDATION_ERROR"),
    ({"q": "x", "page": 300, "perPage": 5}, "queries[1].page", "VALIDATION_ERROR"),
])
def test_one_refused_query_fails_the_batch_naming_it(client, shop, bad, path, code):
    queries = [{"profileKey": shop["web"], "q": "product"}, {"profileKey": shop["web"], **bad}]
    response = client.post(URL, json={"queries": queries}, headers=shop["public"])
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert any(d["path"].startswith(path) for d in error["details"]), error["details"]


def test_batch_size_and_shape(client, shop):
    one = {"profileKey": shop["web"], "q": "product"}
    for body, path in (({"queries": [one] * 21}, "queries"), ({"queries": []}, "queries"),
                       ({"queries": [{"q": "x"}]}, "queries[0].profileKey"), ({}, "queries")):
        response = client.post(URL, json=body, headers=shop["public"])
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == path, error
    assert client.post(URL, json={"queries": [one] * 20}, headers=shop["public"]).status_code == 200


def test_another_tenants_profile_and_unknown_handles_are_404(app, client, shop):
    other = make_tenant(app)
    other_index = create_index(client, other)
    theirs = client.post(other.url(other_index["id"], "/profiles"), headers=other.headers,
                         json={"name": "web", "queryFields": {"name": {"weight": 1}}}).json()["profileKey"]
    for handle in (theirs, "pk_unknown"):
        queries = [{"profileKey": shop["web"], "q": "a"}, {"profileKey": handle, "q": "a"}]
        for headers in (shop["public"], shop["tenant"].headers):
            response = client.post(URL, json={"queries": queries}, headers=headers)
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "NOT_FOUND"
            assert response.json()["error"]["details"][0]["path"] == "queries[1]"


def test_keys_origins_and_sessions(app, client, shop):
    queries = {"queries": [{"profileKey": shop["web"], "q": "product"}]}
    refused = client.post(URL, json=queries, headers={**bearer(shop["public_key"]), "Origin": "https://evil.example"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    assert client.post(URL, json=queries, headers=bearer(shop["public_key"])).json()["error"]["code"] == (
        "ORIGIN_NOT_ALLOWED")
    assert client.post(URL, json=queries).status_code == 401
    session = bearer(make_account(app).token)
    assert client.post(URL, json=queries, headers=session).json()["error"]["code"] == "FORBIDDEN"
    assert client.post(URL, json=queries, headers=shop["tenant"].read_headers).status_code == 200
    preflight = client.options(URL, headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                                             "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == ORIGIN


def test_each_query_counts_against_the_quota(client, shop):
    """The free plan: 50 searches per shopper's address per 10 s; a batch of 20 is 20 searches."""
    batch = {"queries": [{"profileKey": shop["web"], "q": "product"}] * 20}
    statuses = [client.post(URL, json=batch, headers=shop["public"]).status_code for _ in range(6)]
    assert 429 in statuses and statuses.index(429) <= 5, statuses
    refused = client.post(URL, json=batch, headers=shop["public"])
    assert refused.status_code == 429 and refused.headers["retry-after"]


def test_counts_only_queries_are_not_recorded_in_analytics(app, client, shop):
    events = app.state.runtime.search.events
    before = events.emitted
    queries = [{"profileKey": shop["web"], "q": "recorded"}, {"profileKey": shop["web"], "q": "x", "perPage": 0}]
    assert client.post(URL, json={"queries": queries}, headers=shop["public"]).status_code == 200
    assert events.emitted == before + 1
