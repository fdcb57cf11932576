"""A storefront on a real ``shopsearch serve``, set up as a merchant would (operator CLI for the
tenants, REST for the rest): the Best Buy catalog with the demo's mapping, facets, profile and
autocomplete, a public key for one shop origin and a revoked one, a merchandising rule that holds only
with a brand filter, and a second tenant on the free plan (a small catalog) for quotas and 404s.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx

from benchmarks.common import load_products, upload_catalog
from cli.demo import FACETS, MAPPING, STOREFRONT, SUGGESTIONS, storefront_products
from tests.fixtures.server import Server
from tests.fixtures.tasks import wait_task
from tests.fixtures.tenants import Tenant

ORIGIN = "https://shop.test"
PASSWORD = "a long password for tests"


def _ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.content else None


def _tenant(server: Server, plan: str) -> dict[str, Any]:
    email = f"shop-{secrets.token_hex(4)}@shop.test"
    created = json.loads(server.cli("tenants", "create", "--email", email, "--password", PASSWORD, "--org", "Shop",
                                    "--project", "web", "--verified", "--with-key", "full", "--plan", plan, "--json"))
    token = _ok(httpx.post(f"{server.base}/v1/auth/login", json={"email": email, "password": PASSWORD}))["accessToken"]
    return {"projectId": created["projectId"], "secret": created["key"], "token": token}


def _public_key(server: Server, tenant: dict[str, Any], name: str) -> dict[str, Any]:
    return _ok(httpx.post(f"{server.base}/v1/projects/{tenant['projectId']}/api-keys",
                          headers={"Authorization": f"Bearer {tenant['token']}"},
                          json={"type": "public", "name": name, "allowedOrigins": [ORIGIN]}), 201)  # type: ignore[no-any-return]


def _catalog(server: Server, tenant: dict[str, Any], products: list[dict[str, Any]]) -> dict[str, Any]:
    """An index with the demo's mapping, facets and storefront profile, holding ``products``."""
    http = httpx.Client(base_url=server.base, headers={"Authorization": f"Bearer {tenant['secret']}"}, timeout=60)
    base = f"/v1/projects/{tenant['projectId']}/indices"
    index = _ok(http.post(base, json={"name": "products", "mapping": MAPPING}), 201)
    url = f"{base}/{index['id']}"
    _ok(http.put(f"{url}/facets", json={"facets": FACETS}))
    upload_catalog(server.base, Tenant(tenant["projectId"], tenant["secret"], None,
                                       {"Authorization": f"Bearer {tenant['secret']}"}), index["id"], products)
    profile = _ok(http.post(f"{url}/profiles", json=STOREFRONT), 201)
    return {"http": http, "url": url, "index": index, "profileKey": profile["profileKey"]}


def make_shop(server: Server) -> dict[str, Any]:
    """Everything the client's tests need, as JSON-ready values."""
    products = storefront_products(load_products())
    main = _tenant(server, "enterprise")
    shop = _catalog(server, main, products)
    http, url = shop["http"], shop["url"]
    config = _ok(http.put(f"{url}/suggestions/config", json={
        **SUGGESTIONS, "products": {**SUGGESTIONS["products"], "profileKey": shop["profileKey"]}}))
    wait_task(http, main["projectId"], _ok(http.post(f"{url}/suggestions/rebuild"), 202)["taskId"], timeout=300)
    # holds only with a brand filter: a facet-only query without that filter gets other counts
    rule = _ok(http.post(f"{url}/rules", json={
        "name": "cheap samsung chargers", "conditions": [{"pattern": "charger", "anchoring": "contains"}],
        "filters": {"brand": ["Samsung"]},
        "consequence": {"addFilters": {"price": {"lt": 30}}, "userData": {"banner": "Chargers under $30"}}}), 201)
    public = _public_key(server, main, "shop page")
    revoked = _public_key(server, main, "old shop page")
    _ok(httpx.delete(f"{server.base}/v1/projects/{main['projectId']}/api-keys/{revoked['id']}",
                     headers={"Authorization": f"Bearer {main['token']}"}), 204)

    free = _tenant(server, "free")
    small = _catalog(server, free, products[:30])
    free_public = _public_key(server, free, "free shop page")
    for opened in (http, small["http"]):
        opened.close()
    return {
        "url": server.base, "origin": ORIGIN, "projectId": main["projectId"], "indexId": shop["index"]["id"],
        "secretKey": main["secret"], "publicKey": public["key"], "revokedKey": revoked["key"],
        "profileKey": shop["profileKey"], "suggestKey": config["suggestKey"], "ruleId": rule["id"],
        "documents": len(products),
        "free": {"publicKey": free_public["key"], "secretKey": free["secret"], "profileKey": small["profileKey"]},
    }
