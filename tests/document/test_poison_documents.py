"""Documents that would fail after their 202 (issue 9, item 5): refused at upload, and a stored one
the engine still refuses fails only its own task."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from control_plane.document import service as documents
from control_plane.index.models import Index
from control_plane.task import service as tasks
from tests.factories import runtime_of
from tests.index.helpers import create_index, make_tenant, products, search, upload, wait_task

JSON = {"content-type": "application/json"}


def nested(depth: int) -> str:
    """A JSON value of ``depth`` nested objects (raw text: encoders recurse)."""
    return '{"a":' * depth + '"x"' + "}" * depth


def post_raw(client: Any, url: str, body: str, headers: dict[str, str]) -> Any:
    return client.post(url, content=body, headers={**headers, **JSON})


def test_deep_documents_answer_400_and_the_index_stays_writable(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    session = client.post(tenant.url(index["id"], "/replace-sessions"), headers=tenant.headers).json()
    session_url = tenant.url(index["id"], f"/replace-sessions/{session['id']}/documents")
    for depth in (32, 200, 300, 900):  # the document itself is level 1: 32 nested objects make 33
        body = '[{"id": "deep", "name": "x"}, {"id": "d", "extra": ' + nested(depth) + "}]"
        for target, headers in ((url, tenant.headers), (url, {**tenant.headers, "Idempotency-Key": f"k{depth}"}),
                                (session_url, tenant.headers)):
            response = post_raw(client, target, body, headers)
            assert response.status_code == 400, (depth, target, response.text)
            error = response.json()["error"]
            assert error["code"] == "VALIDATION_ERROR"
            assert [d["path"].split(".a")[0] for d in error["details"]] == ["[1].extra"]
    ok = post_raw(client, url, '[{"id": "d", "extra": ' + nested(31) + "}]", tenant.headers)
    assert ok.status_code == 202, ok.text
    assert wait_task(client, tenant.headers, tenant.project_id, ok.json()["taskId"])["status"] == "succeeded"
    upload(client, tenant, index["id"], products(3))
    assert search(client, tenant, index["id"], q="")["total"] == 4


def test_deep_delete_body_with_idempotency_key_answers_400(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    response = post_raw(client, tenant.url(index["id"], "/documents/delete"), "[" + nested(300) + "]",
                        {**tenant.headers, "Idempotency-Key": "k"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_document_size_limit(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    limit = runtime_of(app).settings.max_document_bytes
    big = {"id": "big", "name": "n" * (limit - 100)}
    bigger = {"id": "bigger", "name": "n" * limit}
    response = client.post(url, json=[big, bigger], headers=tenant.headers)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"path": "[1]", "message": response.json()["error"]["details"][0]["message"]}]
    upload(client, tenant, index["id"], [big])


def test_reserved_ids_are_refused(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    for doc_id in ("__shopsearch_meta__", "__shopsearch_seq_marker__", "__shopsearch"):
        response = client.post(url, json=[{"id": "fine", "name": "x"}, {"id": doc_id, "name": "x"}], headers=tenant.headers)
        assert response.status_code == 400, doc_id
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
        assert [d["path"] for d in response.json()["error"]["details"]] == ["[1].id"]
    upload(client, tenant, index["id"], [{"id": "_shopsearch_meta__", "name": "x"}, {"id": "__shop", "name": "y"}])


def test_a_stored_document_the_engine_refuses_fails_only_its_own_task(app, client):
    """A document stored before upload validation existed (here written straight to the database):
    its task fails with a clear error, later writes to the index succeed."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(3))
    poison: dict[str, Any] = {"v": 1}
    for _ in range(300):  # deeper than orjson (the engine's stored form) encodes
        poison = {"a": poison}
    with runtime_of(app).sessions.begin() as db:
        row = db.get(Index, index["id"])
        assert row is not None
        last = documents.reserve_seqs(db, row.id, 2)
        documents.upsert_rows(db, row.id, [("fine", {"id": "fine", "name": "fine gadget"}),
                                           ("poison", {"id": "poison", "name": "poison gadget", "deep": poison})], last)
        task_id = tasks.enqueue(db, project_id=row.project_id, index_id=row.id, type="documents.upsert", seq=last,
                                details={"received": 2}, payload={"fromSeq": last - 1}).id
    task = wait_task(client, tenant.headers, tenant.project_id, task_id)
    assert task["status"] == "failed" and task["error"]["code"] == "VALIDATION_ERROR"
    assert "poison" in task["error"]["message"]
    # the failed task's documents are stored: the count is taken afresh all the same (issue 39)
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 5
    upload(client, tenant, index["id"], products(2, start=10))
    assert {h["id"] for h in search(client, tenant, index["id"], q="gadget")["hits"]} == {"fine"}
    assert search(client, tenant, index["id"], q="")["total"] == 6


FEED = ('[{"id": "fine", "name": "fine kettle"}, {"id": "deep", "name": "deep kettle", "x": ' + nested(200)
        + '}, {"id": "__shopsearch_meta__", "name": "meta kettle"}]').encode()


class _Feed(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(FEED)))
        self.end_headers()
        self.wfile.write(FEED)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def feed_url(app: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(runtime_of(app).settings, "feed_allow_private_hosts", True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Feed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/feed.json"
    server.shutdown()


def test_feed_rows_get_the_same_checks(app, client, feed_url):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    assert client.put(url, json={"url": feed_url, "format": "json"}, headers=tenant.headers).status_code == 200
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "succeeded", task
    assert task["details"]["received"] == 3 and task["details"]["skipped"] == 2
    assert [e["path"].split(".a")[0] for e in task["details"]["errors"]] == ["[1].x", "[2].id"]
    assert {h["id"] for h in search(client, tenant, index["id"], q="kettle")["hits"]} == {"fine"}
    upload(client, tenant, index["id"], products(2))
