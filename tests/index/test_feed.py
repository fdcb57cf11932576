import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, search, wait_task

FILES = {
    "/feed.json": json.dumps([{"sku": f"s{i}", "title": f"Feed phone {i}", "price": 5.0 + i} for i in range(12)]),
    "/feed.jsonl": "\n".join(json.dumps({"sku": f"j{i}", "title": f"Line laptop {i}"}) for i in range(4)),
    "/feed.csv": "sku,title,price,stock\nc1,Csv kettle,9.5,3\nc2,Csv toaster,19,0\n",
    "/broken.json": "[{",
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = FILES.get(self.path)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def feed_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def allow_private(app, monkeypatch):
    monkeypatch.setattr(app.state.runtime.settings, "feed_allow_private_hosts", True)


def test_feed_url_rules(app, client, feed_server):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/feed")
    assert client.get(url, headers=tenant.headers).status_code == 404
    for bad in (f"{feed_server}/feed.json", "ftp://example.com/x.json", "http://10.1.2.3/x.json", "not a url",
                "http://[::1]/x"):
        response = client.put(url, json={"url": bad, "format": "json"}, headers=tenant.headers)
        assert response.status_code == 400, bad
        assert response.json()["error"]["details"][0]["path"] == "url"
    assert client.put(url, json={"url": "https://example.com/x", "format": "xml"}, headers=tenant.headers).status_code == 400
    assert client.put(url, json={"url": "https://example.com/x", "format": "json"}, headers=tenant.read_headers).status_code == 403
    nothing = client.post(url + "/sync", headers=tenant.headers)
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "CONFLICT"


def test_feed_sync_replaces_catalog(app, client, feed_server, allow_private):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    client.post(tenant.url(index["id"], "/documents"), json=[{"id": "old", "name": "old phone"}], headers=tenant.headers)
    url = tenant.url(index["id"], "/feed")
    body = {"url": f"{feed_server}/feed.json", "format": "json", "schedule": "daily", "fieldMap": {"sku": "id", "title": "name"}}
    response = client.put(url, json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    got = client.get(url, headers=tenant.read_headers).json()
    assert got["url"] == body["url"] and got["fieldMap"] == body["fieldMap"] and got["schedule"] == "daily"
    sync = client.post(url + "/sync", headers=tenant.headers)
    assert sync.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, sync.json()["taskId"])
    assert task["status"] == "succeeded", task
    assert task["type"] == "feed.sync" and task["details"]["received"] == 12
    answer = search(client, tenant, index["id"], q="phone", perPage=50)
    assert answer["total"] == 12 and "old" not in {h["id"] for h in answer["hits"]}
    assert client.get(url, headers=tenant.headers).json()["lastSyncAt"]
    # the field map's targets are uses of the mapping
    usage = client.get(tenant.url(index["id"], "/mapping/usage"), headers=tenant.headers).json()["fields"]
    assert usage["name"][0]["kind"] == "dataSource" and usage["name"][0]["path"] == "fieldMap.title"
    removed = {"idField": "id", "fields": {k: v for k, v in PRODUCT_MAPPING["fields"].items() if k != "name"}}
    broken = client.put(tenant.url(index["id"], "/mapping"), json=removed, headers=tenant.headers)
    assert broken.status_code == 409 and broken.json()["error"]["details"][0]["path"] == "feed.fieldMap.title"
    # jsonl and csv
    for path, expected, _q in (("/feed.jsonl", 4, "laptop"), ("/feed.csv", 2, "csv")):
        client.put(url, json={"url": f"{feed_server}{path}", "format": path.rsplit(".", 1)[1],
                              "fieldMap": {"sku": "id", "title": "name"}}, headers=tenant.headers)
        task = wait_task(client, tenant.headers, tenant.project_id,
                         client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
        assert task["status"] == "succeeded", task
        assert search(client, tenant, index["id"], q="")["total"] == expected
    assert client.get(tenant.url(index["id"], "/documents/c1"), headers=tenant.headers).json()["price"] == 9.5
    # a broken feed fails and leaves the catalog
    client.put(url, json={"url": f"{feed_server}/broken.json", "format": "json"}, headers=tenant.headers)
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "failed" and task["error"]["code"] == "VALIDATION_ERROR"
    client.put(url, json={"url": f"{feed_server}/missing.json", "format": "json"}, headers=tenant.headers)
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(url + "/sync", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "failed"
    assert search(client, tenant, index["id"], q="")["total"] == 2
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert client.delete(url, headers=tenant.headers).status_code == 204
    assert client.get(url, headers=tenant.headers).status_code == 404
