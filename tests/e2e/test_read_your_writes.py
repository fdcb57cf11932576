"""Every answer is true when it arrives: a client acting on it at once finds the write.

Runs against a real ``shopsearch serve`` process over HTTP (an in-process client waits for the
request's teardown, so it cannot see an answer that left before its commit), on the embedded default
and on PostgreSQL + Redis. Each round does five create-then-use pairs from several client threads:
register → sign in; create an index → upload to it; upload → read its task; create a key → use it;
save a profile → storefront search with it.
"""

from __future__ import annotations

import json
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.fixtures.server import Server, running_server

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

ROUNDS = int(os.environ.get("RYW_ROUNDS", "30"))  # x 5 pairs = 150 create-then-use pairs per backend (RYW_ROUNDS for more)
CLIENTS = 4
ORIGIN = "https://shop.example"
MAPPING = {"idField": "id", "fields": {"name": {"type": "text", "searchable": True}}}




def _owner(server: Server, http: httpx.Client) -> dict[str, Any]:
    """A verified owner (made by the operator CLI) on the largest plan, signed in over HTTP."""
    email, password = f"owner-{secrets.token_hex(4)}@shop.example", "a long password"
    created = json.loads(server.cli("tenants", "create", "--email", email, "--password", password,
                              "--org", "Shop", "--project", "web", "--verified", "--json"))
    login = http.post("/v1/auth/login", json={"email": email, "password": password})
    assert login.status_code == 200, login.text
    session = {"Authorization": f"Bearer {login.json()['accessToken']}"}
    plan = http.put(f"/v1/orgs/{created['orgId']}/plan", json={"plan": "enterprise"}, headers=session)
    assert plan.status_code == 200, plan.text
    secret = http.post(f"/v1/projects/{created['projectId']}/api-keys", headers=session,
                       json={"name": "server", "type": "secret", "access": "full"})
    assert secret.status_code == 201, secret.text
    return {"project": created["projectId"], "session": session,
            "key": {"Authorization": f"Bearer {secret.json()['key']}"}}


def _round(base: str, owner: dict[str, Any], n: int) -> list[str]:
    """One round of the five pairs; returns a line per miss."""
    misses: list[str] = []
    project, key, session = owner["project"], owner["key"], owner["session"]
    with httpx.Client(base_url=base, timeout=60) as http:
        email = f"u{n}-{secrets.token_hex(3)}@shop.example"
        registered = http.post("/v1/auth/register", json={"email": email, "password": "a long password"})
        assert registered.status_code == 201, registered.text
        login = http.post("/v1/auth/login", json={"email": email, "password": "a long password"})
        if login.status_code != 200:
            misses.append(f"register -> login: {login.status_code} {login.text[:120]}")

        created = http.post(f"/v1/projects/{project}/indices", headers=key,
                            json={"name": f"i{n}-{secrets.token_hex(3)}", "mapping": MAPPING})
        assert created.status_code == 201, created.text
        index_url = f"/v1/projects/{project}/indices/{created.json()['id']}"
        uploaded = http.post(index_url + "/documents", headers=key, json=[{"id": "1", "name": f"phone {n}"}])
        if uploaded.status_code != 202:
            misses.append(f"create index -> upload: {uploaded.status_code} {uploaded.text[:120]}")
            return misses
        task = http.get(f"/v1/projects/{project}/tasks/{uploaded.json()['taskId']}", headers=key)
        if task.status_code != 200:
            misses.append(f"upload -> read task: {task.status_code} {task.text[:120]}")

        made = http.post(f"/v1/projects/{project}/api-keys", headers=session,
                         json={"name": f"k{n}", "type": "public", "allowedOrigins": [ORIGIN]})
        assert made.status_code == 201, made.text
        public = {"Authorization": f"Bearer {made.json()['key']}", "Origin": ORIGIN}

        profile = http.post(index_url + "/profiles", headers=key,
                            json={"name": "web", "queryFields": {"name": {"weight": 5}}})
        assert profile.status_code == 201, profile.text
        found = http.post(f"/v1/search/{profile.json()['profileKey']}", headers=public, json={"q": "phone"})
        if found.status_code != 200:
            misses.append(f"create key / save profile -> storefront search: {found.status_code} {found.text[:120]}")
    return misses


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_create_then_use_over_real_http(backend: str) -> None:
    production = backend == "postgres"
    # Every round registers and signs in from 127.0.0.1: lift the per-address limits of those routes.
    limits = {"SHOPSEARCH_REGISTER_LIMIT_PER_IP": "100000/hour", "SHOPSEARCH_AUTH_LIMIT_PER_IP": "100000/minute"}
    with running_server(postgres=production, redis=production, extra_env=limits) as server, \
            httpx.Client(base_url=server.base, timeout=60) as http:
        owner = _owner(server, http)
        with ThreadPoolExecutor(CLIENTS) as pool:
            misses = [m for found in pool.map(lambda n: _round(server.base, owner, n), range(ROUNDS)) for m in found]
    assert misses == [], f"{len(misses)} of {ROUNDS * 5} create-then-use pairs missed: {misses[:10]}"
