"""A wrong method answers 405 ``METHOD_NOT_ALLOWED`` with ``Allow`` naming every method the path
takes (RFC 9110 §15.5.6), for every path of the OpenAPI document; OPTIONS too, except a CORS
preflight of the storefront routes. A concrete path wins over a templated one, as in OpenAPI."""

from __future__ import annotations

import pytest

from tests.index.helpers import create_index, make_tenant

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
PREFLIGHT_PATHS = ("/v1/search/{profile_key}", "/v1/suggest/{suggest_key}", "/v1/events")


def _concrete(path: str) -> str:
    return "/".join("x" if part.startswith("{") else part for part in path.split("/"))


def test_every_path_answers_a_wrong_method_with_all_its_methods(client):
    paths = client.get("/openapi.json").json()["paths"]
    checked = 0
    for path, item in paths.items():
        documented = sorted(method.upper() for method in item)
        for method in METHODS:
            if method in documented:
                continue
            response = client.request(method, _concrete(path))
            assert response.status_code == 405, (method, path, response.status_code, response.text)
            assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
            assert response.headers["allow"] == ", ".join(documented), (method, path)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("path", PREFLIGHT_PATHS)
def test_a_storefront_preflight_is_cors_and_a_plain_options_is_405(client, path):
    url = _concrete(path)
    preflight = client.options(url, headers={"Origin": "https://shop.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://shop.example"
    plain = client.options(url)
    assert plain.status_code == 405 and plain.headers["allow"] == "POST"


def test_a_concrete_path_is_not_taken_for_an_id(app, client):
    """``GET .../documents/delete`` is not the document ``delete``: that path takes POST only."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    for suffix, allow in (("/documents/delete", "POST"), ("/documents/flush", "POST"), ("/rules/order", "PUT"),
                          ("/rules/test", "POST"), ("/synonyms/import", "POST"), ("/synonyms/export", "GET")):
        for method in ("GET", "PUT", "DELETE", "POST"):
            if method == allow:
                continue
            response = client.request(method, tenant.url(index["id"], suffix), headers=tenant.headers)
            assert response.status_code == 405, (method, suffix, response.text)
            assert response.headers["allow"] == allow and response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    # an id that is no route's literal still reaches its route
    response = client.get(tenant.url(index["id"], "/documents/deleted"), headers=tenant.headers)
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
