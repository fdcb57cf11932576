"""Redis cut under a running service (production mode): nothing refuses, everything stays correct.

While Redis is unreachable: the instance stays ready; sign-in and management work (rate limits
count locally); a revoked key is refused at once (the database decides); a search never gets an
answer older than a change (no answer cache). When Redis is back the revocation and the epoch
bump made meanwhile are written to it."""

from __future__ import annotations

import time

import httpx
import pytest
import redis

from tests.conftest import REDIS_URL
from tests.outage.conftest import ORIGIN, PASSWORD, Stack, create_index, upload

pytestmark = pytest.mark.exclusive  # bounds how long requests wait during the cut


def _ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["hits"]]


def test_redis_cut_degrades_without_refusing(stack: Stack) -> None:
    direct = redis.Redis.from_url(REDIS_URL)  # the real Redis, behind the proxy's back
    http = stack.client()
    index_id = create_index(http, stack, "shop")
    upload(http, stack, index_id, [{"id": "p1", "name": "blue kettle", "brand": "acme"}])
    profile = http.post(stack.index_url(index_id, "/profiles"), json={"name": "web", "queryFields": {"name": {"weight": 1}}})
    assert profile.status_code == 201, profile.text
    storefront = httpx.Client(base_url=stack.base, timeout=15,
                              headers={"Authorization": f"Bearer {stack.public}", "Origin": ORIGIN})
    search_url = f"/v1/search/{profile.json()['profileKey']}"
    assert _ids(storefront.post(search_url, json={"q": "zanzibar"})) == []  # cached at the current epoch
    epoch_key = f"{stack.redis_prefix}epoch:index:{index_id}"
    epoch_before = int(direct.get(epoch_key) or 0)

    login = httpx.post(stack.base + "/v1/auth/login", json={"email": stack.email, "password": PASSWORD})
    assert login.status_code == 200, login.text
    admin = {"Authorization": f"Bearer {login.json()['accessToken']}"}
    created = http.post(f"/v1/projects/{stack.project_id}/api-keys", headers=admin,
                        json={"type": "secret", "name": "doomed", "access": "read"})
    assert created.status_code == 201, created.text
    doomed = {"Authorization": f"Bearer {created.json()['key']}"}
    assert http.get(f"/v1/projects/{stack.project_id}/indices", headers=doomed).status_code == 200

    stack.redis.cut()
    try:
        started = time.monotonic()
        ready = httpx.get(stack.base + "/ready", timeout=10)
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert http.get(f"/v1/projects/{stack.project_id}/indices").status_code == 200
        again = httpx.post(stack.base + "/v1/auth/login", json={"email": stack.email, "password": PASSWORD})
        assert again.status_code == 200, again.text
        wrong = httpx.post(stack.base + "/v1/auth/login", json={"email": stack.email, "password": "not it"})
        assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "UNAUTHENTICATED")

        # a key revoked while Redis is down is refused at once, though this instance had it cached
        revoke = http.delete(f"/v1/projects/{stack.project_id}/api-keys/{created.json()['id']}", headers=admin)
        assert revoke.status_code == 204, revoke.text
        refused = http.get(f"/v1/projects/{stack.project_id}/indices", headers=doomed)
        assert (refused.status_code, refused.json()["error"]["code"]) == (401, "UNAUTHENTICATED")

        # the epoch cannot move while Redis is down: the answer cached before must not be served
        upload(http, stack, index_id, [{"id": "p2", "name": "zanzibar teapot", "brand": "acme"}])
        assert _ids(storefront.post(search_url, json={"q": "zanzibar"})) == ["p2"]
        assert _ids(storefront.post(search_url, json={"q": "kettle"})) == ["p1"]
        secret = http.post(stack.index_url(index_id, "/search"), json={"q": "zanzibar"})
        assert _ids(secret) == ["p2"]
        assert time.monotonic() - started < 20, "requests waited on the unreachable Redis"
    finally:
        stack.redis.restore()

    # back: the bump and the revocation kept meanwhile reach Redis, and caching resumes
    deadline = time.monotonic() + 20  # Redis is tried again within 8 s
    revoked_key = f"{stack.redis_prefix}revoked:key:{created.json()['id']}"
    while int(direct.get(epoch_key) or 0) <= epoch_before or not direct.exists(revoked_key):
        assert time.monotonic() < deadline, "kept writes were not replayed"
        time.sleep(0.2)
    assert _ids(storefront.post(search_url, json={"q": "zanzibar"})) == ["p2"]
    refused = http.get(f"/v1/projects/{stack.project_id}/indices", headers=doomed)
    assert refused.status_code == 401
    upload(http, stack, index_id, [{"id": "p3", "name": "zanzibar mug", "brand": "acme"}])
    assert sorted(_ids(storefront.post(search_url, json={"q": "zanzibar"}))) == ["p2", "p3"]
