"""Every route that runs a search goes through the one search door (``door.service``): the same
request limits, the same quota, the same exposure rules, whatever the route.

``rules/test`` once skipped the limits and the quota (900-level nesting, 200,000 values, 130 calls in
0.7 s all answered 200 where ``/search`` answered 429), and MCP's search lacked the storefront's
fall-back during a database outage. Each route below is one way in; each must refuse the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from shared.limits import MAX_FILTER_DEPTH, MAX_FILTER_VALUES
from shared.plans import PLANS
from tests.factories import bearer, make_key
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, products, upload
from tests.mcp.helpers import call_tool, mcp_client, serving
from tests.search.test_search_limits import _nested_json

ORIGIN = "https://shop.example.com"
#: the quota tests' plan: 1 search/s over 10-second windows (``one_search_per_second``), so 21
#: requests cross a window's 10 however slowly the machine answers them (at the free plan's 10/s,
#: 201 requests answered at fewer than 10 a second, on a loaded machine, filled no window)
BURST = 21


@pytest.fixture
def one_search_per_second(monkeypatch):
    monkeypatch.setitem(PLANS, "free", dataclasses.replace(PLANS["free"], max_searches_per_second=1))


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    mapping = {**PRODUCT_MAPPING, "fields": {**PRODUCT_MAPPING["fields"],
                                             "name": {"type": "text", "searchable": True, "suggest": True}}}
    index = create_index(client, tenant, mapping=mapping)
    upload(client, tenant, index["id"], products(20))
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "web", "queryFields": {"name": {"weight": 1}}, "facets": ["brand"]}).json()
    config = client.put(tenant.url(index["id"], "/suggestions/config"), headers=tenant.headers,
                        json={"enabled": True, "sources": [{"field": "name", "weight": 1}]})
    assert config.status_code == 200, config.text
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return {"tenant": tenant, "index": index, "profile": profile["profileKey"], "suggest": config.json()["suggestKey"],
            "public": {**bearer(public), "Origin": ORIGIN}}


def _nested(depth: int) -> dict[str, Any]:
    flt: dict[str, Any] = {"brand": "Acme"}
    for i in range(depth):
        flt = {"not": flt} if i % 2 else {"and": [flt]}
    return flt


# One way in per route: (client, shop, body) -> (status, error code or None)
Route = Callable[[Any, dict[str, Any], dict[str, Any]], tuple[int, str | None]]


def _answer(response: Any) -> tuple[int, str | None]:
    code = response.json().get("error", {}).get("code") if response.status_code >= 400 else None
    return response.status_code, code


def _post(client: Any, url: str, body: dict[str, Any] | str, headers: dict[str, str]) -> tuple[int, str | None]:
    """``body`` as JSON, or a JSON text already (nested deeper than a client's encoder goes)."""
    if isinstance(body, str):
        return _answer(client.post(url, content=body, headers={**headers, "Content-Type": "application/json"}))
    return _answer(client.post(url, json=body, headers=headers))


def storefront(client, shop, body):  # type: ignore[no-untyped-def]
    return _post(client, f"/v1/search/{shop['profile']}", body, shop["public"])


def secret(client, shop, body):  # type: ignore[no-untyped-def]
    tenant = shop["tenant"]
    return _post(client, tenant.url(shop["index"]["id"], "/search"), body, tenant.headers)


def rules_test(client, shop, body):  # type: ignore[no-untyped-def]
    tenant = shop["tenant"]
    return _post(client, tenant.url(shop["index"]["id"], "/rules/test"), body, tenant.headers)


def multi_search(client, shop, body):  # type: ignore[no-untyped-def]
    handle = f'{{"profileKey": "{shop["profile"]}", '
    batch = ('{"queries": [' + handle + body[1:] + "]}" if isinstance(body, str)
             else {"queries": [{"profileKey": shop["profile"], **body}]})
    return _post(client, "/v1/multi-search", batch, shop["public"])


SEARCH_ROUTES: dict[str, Route] = {"storefront": storefront, "multi-search": multi_search, "secret": secret,
                                   "rules/test": rules_test}


@pytest.mark.parametrize("route", SEARCH_ROUTES)
def test_every_search_route_has_the_request_limits(client, shop, route):
    send = SEARCH_ROUTES[route]
    assert send(client, shop, {"q": "product", "filters": {"brand": "Acme"}}) == (200, None)
    assert send(client, shop, _nested_json(900)) == (400, "VALIDATION_ERROR")
    assert send(client, shop, {"q": "x", "filters": _nested(MAX_FILTER_DEPTH + 1)}) == (400, "VALIDATION_ERROR")
    many = [f"v{i}" for i in range(200_000)]
    assert send(client, shop, {"q": "x", "filters": {"brand": many}}) == (400, "VALIDATION_ERROR")
    assert send(client, shop, {"q": "x", "filters": {"brand": many[: MAX_FILTER_VALUES + 1]}}) == (
        400, "VALIDATION_ERROR")
    assert send(client, shop, {"q": "x", "filters": {"brand": "y" * 100_000}}) == (400, "VALIDATION_ERROR")
    assert send(client, shop, {"q": "x" * 100_000}) == (400, "VALIDATION_ERROR")


def _burst(send: Callable[[], int]) -> list[int]:
    statuses = []
    for _ in range(BURST):
        statuses.append(send())
        if statuses[-1] == 429:
            break
    return statuses


@pytest.mark.parametrize("route", SEARCH_ROUTES)
def test_every_search_route_counts_against_the_quota(client, shop, route, one_search_per_second):
    send = SEARCH_ROUTES[route]
    statuses = _burst(lambda: send(client, shop, {"q": "product"})[0])
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses[-3:]


@pytest.mark.parametrize("route", ["storefront", "secret"])
def test_every_suggest_route_counts_against_the_quota(client, shop, route, one_search_per_second):
    tenant = shop["tenant"]
    if route == "storefront":
        url, headers = f"/v1/suggest/{shop['suggest']}", shop["public"]
    else:
        url, headers = tenant.url(shop["index"]["id"], "/suggest"), tenant.headers
    statuses = _burst(lambda: client.post(url, json={"q": "pro"}, headers=headers).status_code)
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses[-3:]


def test_mcp_search_has_the_limits_and_the_quota(app, shop, one_search_per_second):
    tenant = shop["tenant"]
    index_id = shop["index"]["id"]

    async def run() -> None:
        with serving(app) as base:
            failed, answer = await call_tool(base, tenant.key, "search", {"index_id": index_id, "q": "product"})
            assert not failed and answer["total"] > 0
            failed, text = await call_tool(base, tenant.key, "search",
                                           {"index_id": index_id, "q": "x", "filters": _nested(60)})
            assert failed and "VALIDATION_ERROR" in text
            async with mcp_client(base, tenant.key) as session:  # one session: calls a few ms apart
                for _ in range(BURST):
                    result = await session.call_tool("search", {"index_id": index_id, "q": "product"})
                    if result.is_error:
                        break
            assert result.is_error and "RATE_LIMITED" in result.content[0].text

    asyncio.run(run())


@pytest.mark.parametrize("number", ["123456789012345678901234567890", "1e999", "-1.5E+400"])
def test_mcp_arguments_have_the_json_checks_of_rest_bodies(app, shop, number):
    """An MCP tool's arguments once skipped the checks REST bodies get: a 30-digit integer filter
    raised TypeError in the cache key after the quota was charged, and 1e999 became infinity."""
    tenant = shop["tenant"]
    arguments = '{"index_id": "' + shop["index"]["id"] + '", "q": "x", "filters": {"price": {"lt": ' + number + "}}}"
    call = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search", "arguments": ' + arguments + "}}"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {tenant.key}"}
    with serving(app) as base:
        response = httpx.post(base + "/mcp", content=call, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] and result["content"][0]["text"].startswith("VALIDATION_ERROR"), result
    assert "filters.price.lt" in result["content"][0]["text"]
