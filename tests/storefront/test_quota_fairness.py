"""Quota fairness (issue 9, item 7): storefront shoppers and the shop's own server have separate
search buckets, and each shopper's address its own share of the storefront's.

The free plan allows 10 searches/s over 10-second windows: 100 for the shop's secret keys, 100 for
all storefront callers together, and 50 for any one shopper's address.
"""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from control_plane.search.quota import _client
from control_plane.state.limits import Batches
from tests.factories import bearer, make_key
from tests.fixtures.server import running_server
from tests.index.helpers import create_index, make_tenant, products, upload

ORIGIN = "https://shop.example.com"
WORKERS = 2  # serving processes of the real server: they share the counts through the state file


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(10))
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "web", "queryFields": {"name": {"weight": 1}}}).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return tenant, index, profile, public


def _shopper(app, ip: str) -> TestClient:
    return TestClient(app, raise_server_exceptions=False, client=(ip, 40000))


def _statuses(client: TestClient, url: str, headers: dict[str, str], n: int) -> list[int]:
    return [client.post(url, json={"q": "phone"}, headers=headers).status_code for _ in range(n)]


def test_storefront_traffic_never_uses_up_the_shops_own_searches(app, shop):
    tenant, index, profile, public = shop
    url = f"/v1/search/{profile['profileKey']}"
    storefront = {**bearer(public), "Origin": ORIGIN}
    first, second, third = (_shopper(app, ip) for ip in ("127.0.0.2", "127.0.0.3", "127.0.0.4"))

    # one address gets half of the storefront's share, then 429
    statuses = _statuses(first, url, storefront, 51)
    assert statuses[:50] == [200] * 50 and statuses[50] == 429
    refused = first.post(url, json={"q": "phone"}, headers=storefront)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    # another shopper is not held up by the first one's refusals
    assert _statuses(second, url, storefront, 50) == [200] * 50
    # all storefront callers together stop at the plan's rate
    assert _statuses(third, url, storefront, 1) == [429]

    # the shop's server, with its secret key, still searches (on both routes), up to its own quota
    secret_route = tenant.url(index["id"], "/search")
    assert first.post(secret_route, json={"q": "phone"}, headers=tenant.headers).status_code == 200
    assert first.post(url, json={"q": "phone"}, headers=tenant.headers).status_code == 200
    statuses = _statuses(first, secret_route, tenant.headers, 99)
    assert statuses[:98] == [200] * 98 and statuses[98] == 429


def test_ipv6_shoppers_are_counted_per_64_block():
    assert _client("2001:db8:1:2:aaaa::1") == _client("2001:db8:1:2:bbbb::2") == "2001:db8:1:2::/64"
    assert _client("2001:db8:1:3::1") != _client("2001:db8:1:2::1")
    assert _client("127.0.0.2") == "127.0.0.2"


@pytest.mark.exclusive  # real processes counting a quota in batches
def test_over_http_each_client_address_has_its_own_share():
    """On a real server the address is the connection's: shoppers bound to 127.0.0.2 and 127.0.0.3."""
    with running_server(workers=WORKERS) as server, httpx.Client(base_url=server.base, timeout=30) as http:
        email, password = "quota@shop.example", "a long enough password"
        created = json.loads(server.cli("tenants", "create", "--email", email, "--password", password,
                                  "--org", "Shop", "--project", "web", "--verified", "--json"))
        project = f"/v1/projects/{created['projectId']}"
        session = bearer(http.post("/v1/auth/login", json={"email": email, "password": password}).json()["accessToken"])
        secret = bearer(http.post(project + "/api-keys", headers=session,
                                  json={"type": "secret", "name": "server", "access": "full"}).json()["key"])
        public = http.post(project + "/api-keys", headers=session,
                           json={"type": "public", "name": "web", "allowedOrigins": [ORIGIN]}).json()["key"]
        index = http.post(project + "/indices", headers=secret, json={
            "name": "p", "mapping": {"idField": "id", "fields": {"name": {"type": "text", "searchable": True}}}}).json()
        profile = http.post(f"{project}/indices/{index['id']}/profiles", headers=secret,
                            json={"name": "web", "queryFields": {"name": {"weight": 1}}}).json()
        url = f"/v1/search/{profile['profileKey']}"
        storefront = {**bearer(public), "Origin": ORIGIN}
        for ip in ("127.0.0.2", "127.0.0.3"):
            with httpx.Client(base_url=server.base, transport=httpx.HTTPTransport(local_address=ip),
                              timeout=30) as shopper:
                statuses = [shopper.post(url, json={"q": ""}, headers=storefront).status_code for _ in range(51)]
            assert statuses[:50] == [200] * 50 and statuses[50] == 429, (ip, statuses)
        # the storefront's share is used up. The serving processes count it in batches
        # (control_plane.state.limits.Batches): each may let through fewer than 100 // SHARE more
        # before it learns the others' count, so a third address is refused within that slack.
        slack = WORKERS * (100 // Batches.SHARE - 1)
        statuses = [http.post(url, json={"q": ""}, headers=storefront).status_code for _ in range(slack + 1)]
        assert 429 in statuses and statuses.count(200) <= slack, statuses
        assert http.post(url, json={"q": ""}, headers=secret).status_code == 200
        assert http.post(f"{project}/indices/{index['id']}/search", json={"q": ""}, headers=secret).status_code == 200
