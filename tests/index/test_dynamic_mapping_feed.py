"""A data source (feed) into an index without a mapping: the synced catalog's fields are inferred,
and the feed task's details say which (issue 36, item 1). Fetches from 127.0.0.1 only."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fixtures.feeds import feed_server
from tests.index.helpers import make_tenant, search, wait_task

CATALOG = [{"id": "f1", "title": "Feed kettle", "price": 9.5, "tags": ["kitchen"]},
           {"id": "f2", "title": "Feed toaster", "price": "n/a", "specs": {"watts": 800}},
           {"title": "no id"}]


@pytest.fixture(scope="module")
def feed_url() -> Iterator[str]:
    with feed_server({"/catalog.json": json.dumps(CATALOG)}) as feeds:
        yield f"{feeds.base}/catalog.json"


def test_a_feed_into_an_index_without_a_mapping_infers_its_fields(app, client, feed_url, monkeypatch):
    monkeypatch.setattr(app.state.runtime.settings, "feed_allow_private_hosts", True)
    tenant = make_tenant(app)
    index = client.post(tenant.url(), json={"name": "fed"}, headers=tenant.headers).json()
    assert client.put(tenant.url(index["id"], "/feed"), json={"url": feed_url, "format": "json"},
                      headers=tenant.headers).status_code == 200
    sync = client.post(tenant.url(index["id"], "/feed/sync"), headers=tenant.headers)
    assert sync.status_code == 202, sync.text
    task = wait_task(client, tenant.headers, tenant.project_id, sync.json()["taskId"])
    assert task["status"] == "succeeded", task
    details = task["details"]
    assert (details["received"], details["skipped"], details["indexed"]) == (3, 1, 2)
    assert details["fieldsAdded"] == [{"field": "title", "type": "text"}, {"field": "price", "type": "float"},
                                      {"field": "tags", "type": "keyword[]"}]
    assert [c["path"] for c in details["conflicts"]] == ["[1].price"]
    assert [u["field"] for u in details["unmapped"]] == ["specs"]
    assert [h["id"] for h in search(client, tenant, index["id"], q="toaster")["hits"]] == ["f2"]
    assert [h["id"] for h in search(client, tenant, index["id"], q="", filters={"tags": ["kitchen"]})["hits"]] == ["f1"]
    mapping = client.get(tenant.url(index["id"], "/mapping"), headers=tenant.headers).json()
    assert mapping["dynamic"] is True and set(mapping["fields"]) == {"title", "price", "tags"}
    # a second sync of the same catalog adds nothing
    again = client.post(tenant.url(index["id"], "/feed/sync"), headers=tenant.headers).json()
    assert wait_task(client, tenant.headers, tenant.project_id, again["taskId"])["details"]["fieldsAdded"] == []
