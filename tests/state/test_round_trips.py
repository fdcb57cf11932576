"""Production mode (PostgreSQL + Redis) keeps Redis off the storefront's request path (issue 37).

Two API instances on one PostgreSQL and one Redis, in this process (each its own runtime, caches,
listener and shards, as the two serving processes of ``serve --workers 2``). The Redis round trips of a storefront search, a suggest and a secret search are counted,
cached and uncached; changes made through one instance (documents, a revoked key) hold in the
other as soon as the write's answer (or its task's) says they are done.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from control_plane.app import create_app
from control_plane.migrate import upgrade
from control_plane.org.models import Organization
from shared.settings import Settings
from tests.conftest import make_settings
from tests.factories import bearer, make_key, runtime_of
from tests.fixtures.server import scratch_pg_database
from tests.index.helpers import PRODUCT_MAPPING, Tenant, make_tenant, products, upload, wait_task
from tests.mailbox import Mailbox
from tests.state.roundtrips import RoundTrips, others, quota

ORIGIN = "https://shop.example"
MAPPING: dict[str, Any] = {
    **PRODUCT_MAPPING,
    "fields": {**PRODUCT_MAPPING["fields"], "brand": {**PRODUCT_MAPPING["fields"]["brand"], "suggest": True}},
}


@dataclass
class Shop:
    tenant: Tenant
    index_id: str
    public: dict[str, str]
    profile_key: str
    suggest_key: str
    public_key_id: str

    @property
    def storefront(self) -> str:
        return f"/v1/search/{self.profile_key}"

    @property
    def suggest(self) -> str:
        return f"/v1/suggest/{self.suggest_key}"


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory, mailbox: Mailbox) -> Iterator[Settings]:
    # the two instances share the data directory as `serve --workers 2` does: the first holds the
    # shards and runs tasks, the second follows the database (a task succeeds once it caught up). A
    # database of their own: the session's app would otherwise run their tasks into its own shards.
    with scratch_pg_database("shopsearch_roundtrips") as name:
        settings = make_settings("postgres", tmp_path_factory.mktemp("data-production"), mailbox,
                                 f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", serving_processes=2)
        upgrade(settings)
        yield settings
    client = redis.Redis.from_url(settings.redis_url or "")
    for key in client.scan_iter(f"{settings.redis_prefix}*"):
        client.delete(key)


@pytest.fixture(scope="module")
def counter() -> Iterator[RoundTrips]:
    trips = RoundTrips()
    with trips.counting():
        yield trips


@pytest.fixture(scope="module")
def instances(production: Settings, counter: RoundTrips) -> Iterator[tuple[TestClient, TestClient]]:
    """Two instances on one PostgreSQL + Redis, their listeners subscribed."""
    first, second = create_app(production), create_app(production)
    with TestClient(first, raise_server_exceptions=False) as one, TestClient(second, raise_server_exceptions=False) as two:
        for app in (first, second):
            assert runtime_of(app).state.mirror.wait_fresh(10)  # type: ignore[attr-defined]
        yield one, two


@pytest.fixture(scope="module")
def shop(instances: tuple[TestClient, TestClient]) -> Shop:
    one, _ = instances
    app = one.app
    tenant = make_tenant(app)
    with runtime_of(app).sessions.begin() as db:  # a plan whose quotas are counted in batches
        db.query(Organization).filter_by(id=tenant.account.org_id).update({"plan": "enterprise"})
    made = one.post(tenant.url(), json={"name": "shop", "mapping": MAPPING}, headers=tenant.headers)
    assert made.status_code == 201, made.text
    index_id = made.json()["id"]
    upload(one, tenant, index_id, products(40))
    profile = one.post(tenant.url(index_id, "/profiles"), headers=tenant.headers,
                       json={"name": "web", "queryFields": {"name": {"weight": 1}}})
    assert profile.status_code == 201, profile.text
    rebuilt = one.post(tenant.url(index_id, "/suggestions/rebuild"), headers=tenant.headers)
    assert rebuilt.status_code == 202, rebuilt.text
    assert wait_task(one, tenant.headers, tenant.project_id, rebuilt.json()["taskId"])["status"] == "succeeded"
    suggest_key = one.get(tenant.url(index_id, "/suggestions/config"), headers=tenant.headers).json()["suggestKey"]
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    keys = one.get(f"/v1/projects/{tenant.project_id}/api-keys", headers=tenant.account.headers).json()["items"]
    key_id = next(k["id"] for k in keys if k["type"] == "public")
    return Shop(tenant, index_id, bearer(public) | {"Origin": ORIGIN}, profile.json()["profileKey"], suggest_key,
                key_id)


def _post(client: TestClient, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    response = client.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _trips(counter: RoundTrips, client: TestClient, url: str, body: dict[str, Any],
           headers: dict[str, str]) -> tuple[int, int]:
    """(round trips other than the quota's, the quota's) of one request."""
    with counter.measure() as trips:
        _post(client, url, body, headers)
    return len(others(trips)), len(quota(trips))


def test_round_trips_of_storefront_and_secret_searches_and_suggest(
        instances: tuple[TestClient, TestClient], shop: Shop, counter: RoundTrips) -> None:
    one, two = instances
    secret = shop.tenant.headers
    search_url = shop.tenant.url(shop.index_id, "/search")
    for client in (one, two):  # each instance learns the key, the handles and the epoch once
        _post(client, shop.storefront, {"q": "warm"}, shop.public)
        _post(client, shop.suggest, {"q": "wa"}, shop.public)
        _post(client, search_url, {"q": "warm"}, secret)
    counts: dict[str, list[tuple[int, int]]] = {}
    heard = runtime_of(two.app).state.mirror  # type: ignore[attr-defined]
    shared = runtime_of(two.app).search.answers
    put_by_one: list[bytes] = []  # the keys of the answers instance one shares, in order
    one_shared = runtime_of(one.app).search.answers.shared
    assert one_shared is not None
    sharing = one_shared.put

    def put(key: bytes, body: bytes, total: int) -> None:
        put_by_one.append(key)
        sharing(key, body, total)

    one_shared.put = put  # type: ignore[method-assign]
    for q in ("phone", "laptop", "product 3", "product 4 phone"):
        counts.setdefault("storefront search, uncached", []).append(_trips(counter, one, shop.storefront, {"q": q}, shop.public))
        counts.setdefault("storefront search, cached here", []).append(_trips(counter, one, shop.storefront, {"q": q}, shop.public))
        key = put_by_one[-1]  # this search's answer (not an earlier one whose announcement came late)
        _until(lambda key=key: heard.answer_announced(key) is True)  # the other instance heard it announced
        shared_hits = shared.shared_hits
        counts.setdefault("storefront search, cached by the other instance", []).append(
            _trips(counter, two, shop.storefront, {"q": q}, shop.public))
        assert shared.shared_hits == shared_hits + 1  # the other instance's answer, not computed again
        counts.setdefault("secret search, uncached", []).append(_trips(counter, one, search_url, {"q": q, "perPage": 3}, secret))
        counts.setdefault("secret search, cached here", []).append(_trips(counter, one, search_url, {"q": q, "perPage": 3}, secret))
    for q in ("ac", "ze", "no", "or"):
        counts.setdefault("suggest, uncached", []).append(_trips(counter, one, shop.suggest, {"q": q}, shop.public))
        counts.setdefault("suggest, cached here", []).append(_trips(counter, one, shop.suggest, {"q": q}, shop.public))
    for name, found in counts.items():
        print(f"{name}: {[n for n, _ in found]} round trips, quota visits {[n for _, n in found]}")
    most = {name: max(n for n, _ in found) for name, found in counts.items()}
    assert most == {
        "storefront search, uncached": 0,  # no instance announced this answer: Redis is not asked
        "storefront search, cached here": 0,
        "storefront search, cached by the other instance": 1,  # announced: read from Redis
        "secret search, uncached": 0,
        "secret search, cached here": 0,
        "suggest, uncached": 0,
        "suggest, cached here": 0,
    }, counts
    # quotas are counted in batches: a visit opens each bucket's 10-second window, none after it
    assert sum(n for found in counts.values() for _, n in found) <= 8, counts


def _until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within 5 s"
        time.sleep(0.005)


def test_changes_hold_in_every_instance_when_their_write_is_done(
        instances: tuple[TestClient, TestClient], shop: Shop, counter: RoundTrips) -> None:
    one, two = instances
    body = {"q": "gadget"}
    assert _post(two, shop.storefront, body, shop.public)["total"] == 0
    assert _trips(counter, two, shop.storefront, body, shop.public) == (0, 0)  # from the process's own cache
    upload(one, shop.tenant, shop.index_id, [{"id": "g1", "name": "gadget", "brand": "Acme", "price": 1.0}])
    # the task succeeded: the other instance no longer answers from what it cached
    assert _post(two, shop.storefront, body, shop.public)["total"] == 1
    assert _trips(counter, two, shop.storefront, body, shop.public) == (0, 0)


def test_a_revoked_key_is_refused_at_once_by_every_instance(
        instances: tuple[TestClient, TestClient], shop: Shop, counter: RoundTrips) -> None:
    one, two = instances
    tenant = shop.tenant
    key = make_key(one.app, tenant.project_id, access="read")
    keys = one.get(f"/v1/projects/{tenant.project_id}/api-keys", headers=tenant.account.headers).json()["items"]
    key_id = next(k["id"] for k in keys if key.startswith(k["prefix"]))
    url = tenant.url(shop.index_id, "/search")
    for client in (one, two):  # known (and not revoked) in both instances, without a round trip
        _post(client, url, {"q": "phone"}, bearer(key))
        assert _trips(counter, client, url, {"q": "phone"}, bearer(key))[0] == 0
    revoked = one.delete(f"/v1/projects/{tenant.project_id}/api-keys/{key_id}", headers=tenant.account.headers)
    assert revoked.status_code == 204, revoked.text
    done = time.monotonic()
    refused = two.post(url, json={"q": "phone"}, headers=bearer(key))
    window = time.monotonic() - done
    assert refused.status_code == 401, refused.text  # the first request after the revocation
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
    assert one.post(url, json={"q": "phone"}, headers=bearer(key)).status_code == 401
    print(f"revocation window: 0 requests answered, first refusal {window * 1000:.1f} ms after the revoke")


def test_a_process_whose_listener_is_not_fresh_reads_redis(
        instances: tuple[TestClient, TestClient], shop: Shop, counter: RoundTrips) -> None:
    _, two = instances
    mirror = runtime_of(two.app).state.mirror  # type: ignore[attr-defined]
    body = {"q": "phone"}
    _post(two, shop.storefront, body, shop.public)
    mirror.stop()  # as if its connection were stuck: no answered ping from now on
    try:
        with counter.measure() as trips:
            _post(two, shop.storefront, body, shop.public)
        assert any(b"epoch:index:" in t for t in trips)  # the epoch, read from Redis again
        assert any(b"revoked:key:" in t for t in trips)
    finally:
        mirror.start()
        assert mirror.wait_fresh(10)
    assert _trips(counter, two, shop.storefront, body, shop.public)[0] <= 2  # learns them again
    assert _trips(counter, two, shop.storefront, body, shop.public) == (0, 0)
