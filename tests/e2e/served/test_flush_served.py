"""Flush over real HTTP (both backends), on a second index of the served project so that the
shared catalog keeps its documents: ``POST .../documents/flush`` answers 202 with ``taskId`` and
``previousDocCount``, its ``documents.flush`` task empties the index for listing, reading and
search, the index takes new documents afterwards, and the shared catalog is untouched."""

from __future__ import annotations

from typing import Any

from tests.e2e.served.conftest import Served
from tests.fixtures.tasks import wait_succeeded


def _search(served: Served, index_id: str) -> dict[str, Any]:
    response = served.http.post(f"/v1/projects/{served.tenant.project_id}/indices/{index_id}/search",
                                json={"q": "", "perPage": 50}, headers={"Cache-Control": "no-cache"})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_flush_empties_only_its_index(served: Served) -> None:
    index_id = served.new_index("to flush")
    url = f"/v1/projects/{served.tenant.project_id}/indices/{index_id}"
    served.wait(served.http.post(url + "/documents", json=[
        {"id": f"f{i}", "name": f"flushable chair {i}", "brand": "acme", "price": 10.0 + i, "model": "chair"}
        for i in range(3)]))
    assert _search(served, index_id)["total"] == 3

    flushed = served.http.post(url + "/documents/flush")
    assert flushed.status_code == 202, flushed.text
    body = flushed.json()
    assert body["previousDocCount"] == 3 and body["taskId"]
    task = wait_succeeded(served.http, served.tenant.project_id, body["taskId"], timeout=120)
    assert task["type"] == "documents.flush" and task["indexId"] == index_id
    assert task["details"]["previousDocCount"] == 3

    answer = _search(served, index_id)
    assert answer["total"] == 0 and answer["hits"] == []
    listing = served.http.get(url + "/documents")
    assert listing.status_code == 200 and listing.json()["items"] == [], listing.text
    gone = served.http.get(url + "/documents/f1")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"
    assert served.http.get(url).json()["documentCount"] == 0

    # an empty index flushes again (nothing before), and takes new documents
    again = served.http.post(url + "/documents/flush")
    assert again.status_code == 202 and again.json()["previousDocCount"] == 0, again.text
    wait_succeeded(served.http, served.tenant.project_id, again.json()["taskId"], timeout=120)
    served.wait(served.http.post(url + "/documents", json=[{"id": "n1", "name": "new stool", "model": "stool"}]))
    assert [hit["id"] for hit in _search(served, index_id)["hits"]] == ["n1"]

    # the shared catalog kept its documents
    assert sorted(served.search_ids("")) == ["p1", "p2", "p3", "p4"]
    assert served.http.delete(url).status_code == 204


def test_flush_wrong_method_and_unknown_index(served: Served) -> None:
    wrong = served.http.get(served.url("/documents/flush"))
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "METHOD_NOT_ALLOWED", wrong.text
    missing = served.http.post(f"/v1/projects/{served.tenant.project_id}/indices/idx_nothing/documents/flush")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND", missing.text
    assert sorted(served.search_ids("")) == ["p1", "p2", "p3", "p4"]
