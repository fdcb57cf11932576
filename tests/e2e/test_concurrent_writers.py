"""Concurrent writers of one name, over real HTTP: one wins with 201, the others answer 409 CONFLICT,
and exactly one resource exists afterwards (no half state, no 500) — whether the service's own check
or the database's unique constraint at commit catches the race."""

from __future__ import annotations

import secrets
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.fixtures.server import running_server
from tests.fixtures.tenants import make_tenant

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

WRITERS = 8
MAPPING = {"idField": "id", "fields": {"name": {"type": "text", "searchable": True}}}


def _race(base: str, method: str, path: str, headers: dict[str, str], body: Any) -> Counter[tuple[int, str]]:
    def one(_: int) -> tuple[int, str]:
        with httpx.Client(base_url=base, timeout=60) as http:
            response = http.request(method, path, headers=headers, json=body)
        code = response.json().get("error", {}).get("code", "") if response.status_code >= 400 else ""
        return response.status_code, code

    with ThreadPoolExecutor(WRITERS) as pool:
        return Counter(pool.map(one, range(WRITERS)))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_one_name_many_writers(backend: str) -> None:
    production = backend == "postgres"
    with running_server(postgres=production, redis=production) as server:
        tenant = make_tenant(server.database_url)
        indices = f"/v1/projects/{tenant.project_id}/indices"
        name = f"products-{secrets.token_hex(3)}"

        outcome = _race(server.base, "POST", indices, tenant.headers, {"name": name, "mapping": MAPPING})
        assert outcome == Counter({(201, ""): 1, (409, "CONFLICT"): WRITERS - 1}), outcome
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            listed = [i for i in http.get(indices, params={"limit": 1000}).json()["items"] if i["name"] == name]
            assert len(listed) == 1
            profiles = f"{indices}/{listed[0]['id']}/profiles"

        outcome = _race(server.base, "POST", profiles, tenant.headers,
                        {"name": "web", "queryFields": {"name": {"weight": 5}}})
        assert outcome == Counter({(201, ""): 1, (409, "CONFLICT"): WRITERS - 1}), outcome
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            assert [p["name"] for p in http.get(profiles).json()["items"]] == ["web"]

        email = f"race-{secrets.token_hex(3)}@shop.example"
        outcome = _race(server.base, "POST", "/v1/auth/register", {}, {"email": email, "password": "a long password"})
        assert outcome == Counter({(201, ""): 1, (409, "CONFLICT"): WRITERS - 1}), outcome
        with httpx.Client(base_url=server.base, timeout=60) as http:
            assert http.post("/v1/auth/login", json={"email": email, "password": "a long password"}).status_code == 200
