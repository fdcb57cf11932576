"""Feed sync with its address checks over real HTTP (both backends). The shared served process runs
with the default settings: a feed on a loopback or private address is refused (400
``VALIDATION_ERROR`` at ``url``) before anything is fetched. A second process of the same backend,
started with ``SHOPSEARCH_FEED_ALLOW_PRIVATE_HOSTS=true`` (the operator's allowance), syncs a
catalog from a feed server on 127.0.0.1 in this test process. Every URL here is on 127.0.0.1 or a
literal private address that is refused before any connection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.e2e.served.conftest import Served
from tests.fixtures.feeds import FeedServer
from tests.fixtures.feeds import feed_server as serve_feeds
from tests.fixtures.server import running_server
from tests.fixtures.tasks import wait_task
from tests.fixtures.tenants import Tenant, make_tenant

FILES = {
    "/feed.json": json.dumps([{"sku": f"f{i}", "title": f"feed kettle {i}", "price": 10.0 + i} for i in range(5)]),
    "/feed.csv": "sku,title,price\nc1,csv toaster,19.5\nc2,csv blender,29\n",
    "/broken.json": "[{",
}
MAPPING = {"idField": "id", "fields": {"name": {"type": "text", "searchable": True},
                                       "price": {"type": "float", "filterable": True}}}
FIELD_MAP = {"sku": "id", "title": "name"}


@pytest.fixture(scope="module")
def feeds() -> Iterator[FeedServer]:
    with serve_feeds(FILES) as server:
        yield server


@pytest.fixture(scope="module")
def feed_server(feeds: FeedServer) -> str:
    return feeds.base


@dataclass
class Allowed:
    http: httpx.Client
    tenant: Tenant

    def index_url(self, index_id: str, tail: str = "") -> str:
        return f"/v1/projects/{self.tenant.project_id}/indices/{index_id}{tail}"


@pytest.fixture(scope="module")
def allowed(served: Served) -> Iterator[Allowed]:
    """A second process of the served process's backend whose operator allows private feed hosts."""
    postgres = served.server.database_url.startswith("postgresql")
    with running_server(postgres=postgres, redis=postgres,
                        extra_env={"SHOPSEARCH_FEED_ALLOW_PRIVATE_HOSTS": "true"}) as server:
        tenant = make_tenant(server.database_url, name="feeds")
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            yield Allowed(http, tenant)


def test_private_and_loopback_feeds_are_refused_by_default(served: Served, feeds: FeedServer,
                                                          feed_server: str) -> None:
    feed = served.url("/feed")
    assert served.http.get(feed).status_code == 404
    before = len(feeds.seen)
    for bad in (f"{feed_server}/feed.json", "http://127.0.0.1/feed.json", "http://10.1.2.3/feed.json",
                "http://192.168.0.7/feed.json", "http://[::1]/feed.json", "http://169.254.169.254/latest",
                "ftp://127.0.0.1/feed.json", "not a url"):
        refused = served.http.put(feed, json={"url": bad, "format": "json", "fieldMap": FIELD_MAP})
        assert refused.status_code == 400, (bad, refused.text)
        error = refused.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == "url", (bad, error)
    assert len(feeds.seen) == before  # nothing was fetched
    assert served.http.get(feed).status_code == 404  # and nothing saved
    nothing = served.http.post(feed + "/sync")
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "CONFLICT", nothing.text
    assert sorted(served.search_ids("")) == ["p1", "p2", "p3", "p4"]


def test_an_allowed_private_feed_syncs_the_catalog(allowed: Allowed, feed_server: str) -> None:
    http = allowed.http
    created = http.post(f"/v1/projects/{allowed.tenant.project_id}/indices", json={"name": "feed", "mapping": MAPPING})
    assert created.status_code == 201, created.text
    index_id = created.json()["id"]
    assert http.post(allowed.index_url(index_id, "/documents"), json=[{"id": "old", "name": "old kettle"}]).status_code == 202
    feed = allowed.index_url(index_id, "/feed")
    body = {"url": f"{feed_server}/feed.json", "format": "json", "schedule": "manual", "fieldMap": FIELD_MAP}
    saved = http.put(feed, json=body)
    assert saved.status_code == 200, saved.text
    got = http.get(feed).json()
    assert got["url"] == body["url"] and got["format"] == "json" and got["fieldMap"] == FIELD_MAP

    def sync() -> dict[str, object]:
        started = http.post(feed + "/sync")
        assert started.status_code == 202, started.text
        return wait_task(http, allowed.tenant.project_id, started.json()["taskId"], timeout=120)

    def ids() -> list[str]:
        answer = http.post(allowed.index_url(index_id, "/search"), json={"q": "", "perPage": 50},
                           headers={"Cache-Control": "no-cache"})
        assert answer.status_code == 200, answer.text
        return sorted(hit["id"] for hit in answer.json()["hits"])

    task = sync()
    assert task["status"] == "succeeded" and task["type"] == "feed.sync", task
    assert task["details"]["received"] == 5  # type: ignore[index]
    assert ids() == [f"f{i}" for i in range(5)]  # a full replace: "old" is gone
    assert http.get(feed).json()["lastSyncAt"]
    assert http.get(allowed.index_url(index_id, "/documents/f2")).json()["price"] == 12.0

    # the field map's target is a use of the mapping: removing it is refused
    usage = http.get(allowed.index_url(index_id, "/mapping/usage")).json()["fields"]
    assert {"kind": "dataSource", "path": "fieldMap.title"}.items() <= usage["name"][0].items()
    broken = http.put(allowed.index_url(index_id, "/mapping"),
                      json={"idField": "id", "fields": {"price": MAPPING["fields"]["price"]}})  # type: ignore[index]
    assert broken.status_code == 409 and broken.json()["error"]["code"] == "MAPPING_BREAKS_CONFIG", broken.text
    assert broken.json()["error"]["details"][0]["path"] == "feed.fieldMap.title"

    # csv; then a broken and a missing feed fail and leave the catalog
    assert http.put(feed, json={**body, "url": f"{feed_server}/feed.csv", "format": "csv"}).status_code == 200
    assert sync()["status"] == "succeeded" and ids() == ["c1", "c2"]
    assert http.put(feed, json={**body, "url": f"{feed_server}/broken.json"}).status_code == 200
    failed = sync()
    assert failed["status"] == "failed" and failed["error"]["code"] == "VALIDATION_ERROR", failed  # type: ignore[index]
    assert http.put(feed, json={**body, "url": f"{feed_server}/missing.json"}).status_code == 200
    assert sync()["status"] == "failed"
    assert ids() == ["c1", "c2"]

    # a connected integration takes over: feed changes and syncs answer 409 INDEX_HAS_INTEGRATION
    plugin = http.put(allowed.index_url(index_id, "/integration"),
                      json={"platform": "shopware", "name": "shop", "settings": {"manageMapping": False}})
    assert plugin.status_code == 200, plugin.text
    for response in (http.put(feed, json=body), http.post(feed + "/sync")):
        assert response.status_code == 409 and response.json()["error"]["code"] == "INDEX_HAS_INTEGRATION", response.text
    assert http.delete(allowed.index_url(index_id, "/integration")).status_code == 204
    assert http.delete(feed).status_code == 204 and http.get(feed).status_code == 404
