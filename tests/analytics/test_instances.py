"""Several API instances on one PostgreSQL + Redis: each counts its own searches into the shared
rows (added, not overwritten), none twice, and the last ones when it stops."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from control_plane.analytics.hooks import flush_analytics
from control_plane.app import create_app
from tests.analytics.helpers import Shop


@pytest.mark.backend("postgres")  # several instances share a database on PostgreSQL + Redis
def test_two_instances_count_each_search_once(shop: Shop, settings):
    index_id = shop.new_index("shared")
    url = shop.tenant.url(index_id, "/search")
    second = create_app(settings)
    with TestClient(second, raise_server_exceptions=False) as other:
        for q in ("phone", "laptop", "phone"):
            assert shop.client.post(url, json={"q": q}, headers=shop.tenant.headers).status_code == 200
        for q in ("phone", "zanzibar"):
            response = other.post(url, json={"q": q}, headers=shop.tenant.headers)
            assert response.status_code == 200, response.text
        flush_analytics(second.state.runtime)
        flush_analytics(shop.app.state.runtime)
        assert shop.analytics(index_id)["totals"]["searches"] == 5
        # a click on a search answered by the other instance is taken by this one
        query_id = other.post(url, json={"q": "laptop"}, headers=shop.tenant.headers).json()["queryId"]
        click = shop.client.post("/v1/events", json={"events": [{"type": "click", "queryId": query_id, "documentId": "p2"}]},
                                 headers=shop.tenant.headers)
        assert click.status_code == 200, click.text
    # the second instance stopped: its last search was written on shutdown, once
    report = shop.analytics(index_id)
    assert report["totals"]["searches"] == 6 and report["totals"]["clicks"] == 1
    top = {q["query"]: q["count"] for q in report["topQueries"]}
    assert top == {"phone": 3, "laptop": 2, "zanzibar": 1}
