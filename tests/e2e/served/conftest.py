"""One served catalog per backend for the per-area e2e modules in this package: a real
``shopsearch serve`` process (SQLite, or PostgreSQL + Redis), a tenant, an index holding a small
catalog (and a public key allowed from ``SHOP_ORIGIN``), all over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import _ensure_services
from tests.fixtures.server import Server, running_server
from tests.fixtures.tasks import wait_succeeded
from tests.fixtures.tenants import Tenant, make_tenant

MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "price": {"type": "float", "filterable": True, "sortable": True},
        "model": {"type": "keyword", "filterable": True, "facetable": True},
    },
}
CATALOG = [
    {"id": "p1", "name": "couch with cushions", "brand": "acme", "price": 400.0, "model": "lounge"},
    {"id": "p2", "name": "oak dining table", "brand": "zed", "price": 250.0, "model": "dine"},
    {"id": "p3", "name": "reading lamp", "brand": "acme", "price": 35.0, "model": "light"},
    {"id": "p4", "name": "leather sofa bed", "brand": "orbit", "price": 900.0, "model": "lounge"},
]
SHOP_ORIGIN = "https://shop.example"  # the served tenant's public key is allowed from here only


@dataclass
class Served:
    server: Server
    tenant: Tenant
    index_id: str
    http: httpx.Client

    def url(self, tail: str = "") -> str:
        return f"/v1/projects/{self.tenant.project_id}/indices/{self.index_id}{tail}"

    def wait(self, response: httpx.Response) -> None:
        assert response.status_code == 202, response.text
        wait_succeeded(self.http, self.tenant.project_id, response.json()["taskId"], timeout=120)

    def new_index(self, name: str, mapping: dict[str, Any] | None = None) -> str:
        """Another index in the same project (for areas that would change the shared catalog); its id."""
        created = self.http.post(f"/v1/projects/{self.tenant.project_id}/indices",
                                 json={"name": name, "mapping": mapping or MAPPING})
        assert created.status_code == 201, created.text
        return str(created.json()["id"])

    def search_ids(self, q: str) -> list[str]:
        response = self.http.post(self.url("/search"), json={"q": q}, headers={"Cache-Control": "no-cache"})
        assert response.status_code == 200, response.text
        return [hit["id"] for hit in response.json()["hits"]]


@pytest.fixture(scope="package", params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    postgres = request.param == "postgres"
    if postgres:
        _ensure_services()
    with running_server(postgres=postgres, redis=postgres) as server:
        tenant = make_tenant(server.database_url, public_origins=[SHOP_ORIGIN])
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            created = http.post(f"/v1/projects/{tenant.project_id}/indices", json={"name": "shop", "mapping": MAPPING})
            assert created.status_code == 201, created.text
            shop = Served(server, tenant, created.json()["id"], http)
            shop.wait(http.post(shop.url("/documents"), json=CATALOG))
            yield shop
