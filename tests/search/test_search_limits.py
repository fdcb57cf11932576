"""Every search request's work is bounded: limits answered 400 naming the limit, a deadline answered
503 ``SEARCH_TIMEOUT``, keyword ranges evaluated on the sorted dictionary, and ``Cache-Control:
no-cache`` honoured for secret keys only (issue 9, items 1 and 8)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import bearer, make_key, runtime_of
from tests.index.helpers import create_index, make_tenant, products, upload

ORIGIN = "https://shop.example.com"

# The limits as the README documents them ("Search limits"), written out rather than read from
# shared/limits.py: changing a documented limit in the code must fail here.
MAX_QUERY_CHARS = 512
MAX_QUERY_WORDS = 32
MAX_FILTER_CLAUSES = 64
MAX_FILTER_VALUES = 100
MAX_FILTER_DEPTH = 6
MAX_FILTER_VALUE_CHARS = 256
MAX_FACETS = 20
MAX_RESULT_WINDOW = 1000


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(40))
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "web", "queryFields": {"name": {"weight": 1}}, "perPage": 10}).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return tenant, index, profile, {**bearer(public), "Origin": ORIGIN}


def _storefront(client, shop, body: dict[str, Any], **headers: str):
    _tenant, _index, profile, public = shop
    return client.post(f"/v1/search/{profile['profileKey']}", json=body, headers={**public, **headers})


def _nested(depth: int) -> dict[str, Any]:
    flt: dict[str, Any] = {"brand": "Acme"}
    for i in range(depth):
        flt = {"not": flt} if i % 2 else {"and": [flt]}
    return flt


def _refused(response, path: str, limit: int | None = None) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    matching = [d for d in error["details"] if d["path"] == path]
    assert matching, error["details"]
    if limit is not None:
        assert matching[0]["limit"] == limit


def test_malformed_filters_answer_400_not_500(client, shop):
    for body, path in (
        ({"filters": {"and": 5}}, "filters.and"),
        ({"filters": {"or": [5]}}, "filters.or[0]"),
        ({"filters": {"not": [1]}}, "filters.not"),
        ({"filters": {"brand": {"between": 1}}}, "filters.brand"),
        ({"filters": {"brand": [{"a": 1}]}}, "filters.brand[0]"),
        ({"filters": {"brand": [[1]]}}, "filters.brand[0]"),
    ):
        _refused(_storefront(client, shop, body), path)


def _nested_json(depth: int) -> str:
    """``_nested(depth)`` written out (json.dumps recurses, and gives up near 1000 levels)."""
    opens = "".join('{"not":' if i % 2 else '{"and":[' for i in reversed(range(depth)))
    closes = "".join("}" if i % 2 else "]}" for i in range(depth))
    return '{"filters":' + opens + '{"brand":"Acme"}' + closes + "}"


@pytest.mark.parametrize("depth", [7, 300, 5000])
def test_deep_filters_answer_400_naming_the_depth_limit(client, shop, depth):
    _tenant, _index, profile, public = shop
    response = client.post(f"/v1/search/{profile['profileKey']}", content=_nested_json(depth),
                           headers={**public, "Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    if depth < 1000:  # deeper still, the body is refused as JSON the parser won't nest into
        assert [d["limit"] for d in error["details"]] == [MAX_FILTER_DEPTH]


def test_nested_json_is_nested():
    import json

    assert json.loads(_nested_json(9)) == {"filters": _nested(9)}


def test_filters_at_the_limits_are_served(client, shop):
    at_depth = _storefront(client, shop, {"filters": _nested(MAX_FILTER_DEPTH)})
    assert at_depth.status_code == 200, at_depth.text
    clauses = [{"price": {"gte": 10 + i}} for i in range(MAX_FILTER_CLAUSES - 1)]
    many = _storefront(client, shop, {"filters": {"or": clauses}})
    assert many.status_code == 200, many.text
    assert many.json()["total"] == 40
    values = _storefront(client, shop, {"filters": {"brand": ["Acme"] * MAX_FILTER_VALUES}})
    assert values.status_code == 200 and values.json()["total"] == 10
    value = _storefront(client, shop, {"filters": {"brand": {"lte": "A" * MAX_FILTER_VALUE_CHARS}}})
    assert value.status_code == 200, value.text
    words = _storefront(client, shop, {"q": " ".join(["phone"] * MAX_QUERY_WORDS)})
    assert words.status_code == 200, words.text
    chars = _storefront(client, shop, {"q": "p" * MAX_QUERY_CHARS})
    assert chars.status_code == 200, chars.text
    window = _storefront(client, shop, {"page": MAX_RESULT_WINDOW // 100, "perPage": 100})
    assert window.status_code == 200, window.text


def test_each_limit_is_named(client, shop):
    clauses = [{"price": {"gte": i}} for i in range(MAX_FILTER_CLAUSES)]
    _refused(_storefront(client, shop, {"filters": {"or": clauses}}), "filters", MAX_FILTER_CLAUSES)
    _refused(_storefront(client, shop, {"filters": {"brand": ["Acme"] * (MAX_FILTER_VALUES + 1)}}),
             "filters.brand", MAX_FILTER_VALUES)
    long_value = "x" * (MAX_FILTER_VALUE_CHARS + 1)
    _refused(_storefront(client, shop, {"filters": {"brand": {"gte": long_value}}}), "filters.brand.gte",
             MAX_FILTER_VALUE_CHARS)
    words = " ".join(["phone"] * (MAX_QUERY_WORDS + 1))
    _refused(_storefront(client, shop, {"q": words}), "q", MAX_QUERY_WORDS)
    _refused(_storefront(client, shop, {"q": "p" * (MAX_QUERY_CHARS + 1)}), "q")
    _refused(_storefront(client, shop, {"facets": ["brand"] * (MAX_FACETS + 1)}), "facets", MAX_FACETS)
    _refused(_storefront(client, shop, {"facets": ["brand", "brand"]}), "facets")
    window = MAX_RESULT_WINDOW // 100 + 1
    _refused(_storefront(client, shop, {"page": window, "perPage": 100}), "page", MAX_RESULT_WINDOW)


def test_secret_route_and_profiles_have_the_same_limits(client, shop):
    tenant, index, _profile, _public = shop
    deep = client.post(tenant.url(index["id"], "/search"), json={"filters": _nested(300)}, headers=tenant.headers)
    _refused(deep, "filters.not.and[0].not.and[0].not.and[0].not", MAX_FILTER_DEPTH)  # the 7th level
    inline = client.post(tenant.url(index["id"], "/search"), headers=tenant.headers,
                         json={"profile": {"filters": _nested(300)}})
    assert inline.status_code == 400 and inline.json()["error"]["code"] == "PROFILE_INVALID", inline.text
    saved = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                        json={"name": "deep", "filters": {"and": 5}})
    assert saved.status_code == 400 and saved.json()["error"]["code"] == "PROFILE_INVALID", saved.text
    assert saved.json()["error"]["details"][0]["path"] == "filters.and"


def test_keyword_ranges(client, shop):
    """Brands Acme, Zed, Nova, Orbit (10 products each), compared by code point."""
    def total(cond: dict[str, Any]) -> int:
        response = _storefront(client, shop, {"filters": {"brand": cond}})
        assert response.status_code == 200, response.text
        return int(response.json()["total"])

    assert total({"gte": "B", "lt": "O"}) == 10  # Nova
    assert total({"gt": "Nova"}) == 20  # Orbit, Zed
    assert total({"gte": "Nova"}) == 30
    assert total({"lte": "Nova"}) == 20  # Acme, Nova
    assert total({"lt": "Acme"}) == 0
    assert total({"gt": "Zed", "lt": "A"}) == 0
    assert total({"gte": "a"}) == 0  # lower case sorts after every capital


def test_search_past_its_deadline_answers_503(app, client, shop, monkeypatch):
    monkeypatch.setattr(runtime_of(app).settings, "search_timeout_ms", 0)
    response = _storefront(client, shop, {"q": "phone"}, **{"Cache-Control": "no-cache"})
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "SEARCH_TIMEOUT"


def test_no_cache_is_honoured_for_secret_keys_only(app, client, shop):
    tenant, index, profile, _public = shop
    answers = runtime_of(app).search.answers
    body = {"q": "laptop", "filters": {"brand": "Zed"}}
    assert _storefront(client, shop, body).status_code == 200  # now cached
    hits = answers.hits
    assert _storefront(client, shop, body, **{"Cache-Control": "no-cache"}).status_code == 200
    assert answers.hits == hits + 1  # a public key gets the cached answer

    secret_url = f"/v1/search/{profile['profileKey']}"
    assert client.post(secret_url, json=body, headers=tenant.headers).status_code == 200
    hits = answers.hits
    fresh = client.post(secret_url, json=body, headers={**tenant.headers, "Cache-Control": "no-cache"})
    assert fresh.status_code == 200
    assert answers.hits == hits  # a secret key gets a fresh one
