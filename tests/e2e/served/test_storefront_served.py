"""Storefront exposure over real HTTP against a served catalog (both backends): a public key
searching a profile gets only the fields the profile retrieves, may filter and facet only on what
the profile exposes (else 400 ``VALIDATION_ERROR`` naming each path), is accepted only from its
allowed origin (the preflight from any), and may not use management routes; the project's secret
key on the same route is not restricted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.served.conftest import SHOP_ORIGIN, Served


@pytest.fixture
def profile_key(served: Served) -> Iterator[str]:
    created = served.http.post(served.url("/profiles"), json={
        "name": "storefront", "queryFields": {"name": {"weight": 1}}, "retrieve": ["name", "brand"],
        "facets": ["brand"], "sortOptions": [{"key": "cheap", "label": "Cheapest", "sort": ["price:asc"]}]})
    assert created.status_code == 201, created.text
    yield created.json()["profileKey"]
    assert served.http.delete(served.url(f"/profiles/{created.json()['id']}")).status_code == 204


def _public(served: Served, origin: str | None = SHOP_ORIGIN) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {served.tenant.public_key}"}
    if origin is not None:
        headers["Origin"] = origin
    return headers


def _storefront(served: Served, key: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{served.server.base}/v1/search/{key}", json=body, headers=headers, timeout=60)


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["error"]  # type: ignore[no-any-return]


def test_a_public_key_sees_only_the_exposed_fields(served: Served, profile_key: str) -> None:
    answer = _storefront(served, profile_key, {"q": "", "sort": "cheap", "facets": ["brand"]}, _public(served))
    assert answer.status_code == 200, answer.text
    assert answer.headers["access-control-allow-origin"] == SHOP_ORIGIN
    body = answer.json()
    assert [hit["id"] for hit in body["hits"]] == ["p3", "p2", "p1", "p4"]  # sorted by the unexposed price
    for hit in body["hits"]:
        assert set(hit["document"]) <= {"id", "name", "brand"}, hit
        assert "price" not in hit["document"] and "model" not in hit["document"]
    assert {f["value"]: f["count"] for f in body["facets"]["brand"]} == {"acme": 2, "zed": 1, "orbit": 1}
    narrowed = _storefront(served, profile_key, {"q": "", "filters": {"brand": ["acme"]}}, _public(served))
    assert narrowed.status_code == 200 and {h["id"] for h in narrowed.json()["hits"]} == {"p1", "p3"}


def test_filters_facets_and_sorts_on_unexposed_fields_are_refused(served: Served, profile_key: str) -> None:
    price = _error(_storefront(served, profile_key, {"q": "", "filters": {"price": {"lt": 100}}}, _public(served)), 400)
    assert price["code"] == "VALIDATION_ERROR" and [d["path"] for d in price["details"]] == ["filters.price"]
    model = _error(_storefront(served, profile_key, {"q": "", "facets": ["brand", "model"]}, _public(served)), 400)
    assert model["code"] == "VALIDATION_ERROR" and [d["path"] for d in model["details"]] == ["facets.1"]
    both = _error(_storefront(served, profile_key, {"q": "", "filters": {"model": ["lounge"]}, "facets": ["model"]},
                              _public(served)), 400)
    assert both["code"] == "VALIDATION_ERROR" and {d["path"] for d in both["details"]} == {"filters.model", "facets.0"}
    sort = _error(_storefront(served, profile_key, {"q": "", "sort": "price:desc"}, _public(served)), 400)
    assert sort["code"] == "VALIDATION_ERROR"

    # the project's secret key on the same route is not restricted
    secret = _storefront(served, profile_key, {"q": "", "filters": {"price": {"lt": 100}}, "facets": ["model"]},
                         served.tenant.headers)
    assert secret.status_code == 200, secret.text
    assert [hit["id"] for hit in secret.json()["hits"]] == ["p3"]
    assert {f["value"]: f["count"] for f in secret.json()["facets"]["model"]} == {"light": 1}


def test_a_public_key_is_accepted_only_from_its_origins(served: Served, profile_key: str) -> None:
    for origin in (None, "https://evil.example", "http://shop.example", "https://shop.example.evil.com"):
        refused = _error(_storefront(served, profile_key, {"q": "lamp"}, _public(served, origin)), 403)
        assert refused["code"] == "ORIGIN_NOT_ALLOWED", origin
    # the preflight is answered for every origin, without cookies
    preflight = httpx.options(f"{served.server.base}/v1/search/{profile_key}", timeout=30, headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert preflight.status_code in (200, 204), preflight.text
    assert preflight.headers["access-control-allow-origin"] in ("https://evil.example", "*")
    assert preflight.headers.get("access-control-allow-credentials") != "true"
    # a public key reaches no management route, and no search through the index id
    listing = httpx.get(f"{served.server.base}/v1/projects/{served.tenant.project_id}/indices",
                        headers=_public(served), timeout=30)
    assert _error(listing, 403)["code"] == "FORBIDDEN"
    secret_route = httpx.post(served.server.base + served.url("/search"), json={"q": ""}, headers=_public(served),
                              timeout=30)
    assert _error(secret_route, 403)["code"] == "FORBIDDEN"
    # an unknown handle is 404 for the public key
    assert _error(_storefront(served, "no-such-handle", {"q": ""}, _public(served)), 404)["code"] == "NOT_FOUND"
