"""Helpers of the analytics and events tests. ``open_shop``: a tenant on the enterprise plan (no
search quota in the way), an index of 30 products, a storefront profile, a public key, and a
second tenant."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from control_plane.analytics.hooks import flush_analytics
from tests.factories import make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import Tenant, create_index, make_tenant, products, upload

ORIGIN = "https://shop.example.com"


@dataclass
class Shop:
    app: Any
    client: TestClient
    tenant: Tenant
    index_id: str
    profile: dict[str, Any]
    public: str
    other: Tenant

    def analytics(self, index_id: str | None = None, **params: Any) -> dict[str, Any]:
        flush_analytics(self.app.state.runtime)
        response = self.client.get(self.tenant.url(index_id or self.index_id, "/analytics"), params=params,
                                   headers=self.tenant.read_headers)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def search(self, q: str, index_id: str | None = None, **body: Any) -> dict[str, Any]:
        response = self.client.post(self.tenant.url(index_id or self.index_id, "/search"), json={"q": q, **body},
                                    headers=self.tenant.headers)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def new_index(self, name: str) -> str:
        index = create_index(self.client, self.tenant, name=name)
        upload(self.client, self.tenant, index["id"], products(30))
        return index["id"]  # type: ignore[no-any-return]


def _enterprise(client: TestClient, tenant: Tenant) -> None:
    response = client.put(f"/v1/orgs/{tenant.account.org_id}/plan", json={"plan": "enterprise"},
                          headers={"Authorization": f"Bearer {tenant.account.token}"})
    assert response.status_code == 200, response.text


@contextmanager
def open_shop(app: Any) -> Iterator[Shop]:
    with StartedAppClient(app, raise_server_exceptions=False) as client:
        tenant = make_tenant(app)
        _enterprise(client, tenant)
        index = create_index(client, tenant)
        upload(client, tenant, index["id"], products(30))
        profile = client.post(tenant.url(index["id"], "/profiles"),
                              json={"name": "web", "queryFields": {"name": {"weight": 10}, "brand": {"weight": 3}}},
                              headers=tenant.headers)
        assert profile.status_code == 201, profile.text
        public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
        other = make_tenant(app)
        yield Shop(app, client, tenant, index["id"], profile.json(), public, other)
