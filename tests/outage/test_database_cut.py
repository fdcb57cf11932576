"""The database cut under traffic: 503 UNAVAILABLE naming it meanwhile (never 500, never a hang),
storefront searches from cached resolutions keep answering, and everything answered 202 is
searchable once the database is back — without restarting the service."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.outage.conftest import ORIGIN, Stack, assert_unavailable, create_index, upload, wait_task

pytestmark = pytest.mark.exclusive  # bounds how long requests wait during the cut


class Uploader(threading.Thread):
    """Uploads one document at a time, each with a word of its own, recording every answer."""

    def __init__(self, stack: Stack, index_id: str) -> None:
        super().__init__(daemon=True)
        self.stack, self.index_id = stack, index_id
        self.answers: list[tuple[str, int, dict[str, Any]]] = []  # (word, status, body)
        self.stop = threading.Event()

    def run(self) -> None:
        with self.stack.client() as http:
            n = 0
            while not self.stop.is_set():
                n += 1
                word = f"traffic{n}x"
                try:
                    response = http.post(self.stack.index_url(self.index_id, "/documents"),
                                         json=[{"id": f"d{n}", "name": f"{word} widget", "brand": "acme"}])
                except httpx.HTTPError as exc:  # no answer at all is a failure of its own
                    self.answers.append((word, 0, {"transport": repr(exc)}))
                    continue
                self.answers.append((word, response.status_code, response.json()))
                time.sleep(0.05)


def test_database_cut_under_traffic(stack: Stack) -> None:
    http = stack.client()
    shop_index = create_index(http, stack, "shop")
    first_task = upload(http, stack, shop_index, [{"id": "p1", "name": "blue kettle", "brand": "acme"}])
    profile = http.post(stack.index_url(shop_index, "/profiles"), json={"name": "web", "queryFields": {"name": {"weight": 1}}})
    assert profile.status_code == 201, profile.text
    storefront = httpx.Client(base_url=stack.base, timeout=15,
                              headers={"Authorization": f"Bearer {stack.public}", "Origin": ORIGIN})
    search_url = f"/v1/search/{profile.json()['profileKey']}"
    assert [h["id"] for h in storefront.post(search_url, json={"q": "kettle"}).json()["hits"]] == ["p1"]
    secret_search = stack.index_url(shop_index, "/search")
    assert http.post(secret_search, json={"q": "kettle"}).json()["total"] == 1
    # a write moves the index epoch: the resolutions above are then re-read, and must survive the cut
    upload(http, stack, shop_index, [{"id": "p0", "name": "green teapot", "brand": "acme"}])

    traffic_index = create_index(http, stack, "traffic")
    uploader = Uploader(stack, traffic_index)
    uploader.start()
    time.sleep(1.0)

    stack.db.cut()
    cut_at = len(uploader.answers)
    try:
        checks = {
            "list indices": lambda: http.get(f"/v1/projects/{stack.project_id}/indices"),
            "upload": lambda: http.post(stack.index_url(shop_index, "/documents"), json=[{"id": "p2", "name": "red kettle"}]),
            "read a task": lambda: http.get(f"/v1/projects/{stack.project_id}/tasks/{first_task}"),
            "sign in": lambda: httpx.post(stack.base + "/v1/auth/login", json={"email": stack.email, "password": "x"}),
            "unknown profile": lambda: storefront.post("/v1/search/pk_never_seen_before", json={"q": "kettle"}),
        }
        for name, call in checks.items():
            started = time.monotonic()
            response = call()
            assert time.monotonic() - started < 5, f"{name} hung"
            assert_unavailable(response, "database")
        ready = httpx.get(stack.base + "/ready", timeout=10)
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
        # good degradation: a storefront search whose key and profile are resolved needs no database
        cached = storefront.post(search_url, json={"q": "kettle"})
        assert cached.status_code == 200 and [h["id"] for h in cached.json()["hits"]] == ["p1"]
        resolved = http.post(secret_search, json={"q": "blue kettle"}, headers={"Cache-Control": "no-cache"})
        assert resolved.status_code == 200 and resolved.json()["total"] == 1
        time.sleep(1.0)
    finally:
        stack.db.restore()

    deadline = time.monotonic() + 20
    while httpx.get(stack.base + "/ready", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "not ready again after the database came back"
        time.sleep(0.2)
    time.sleep(1.0)  # traffic succeeds again
    uploader.stop.set()
    uploader.join(10)

    statuses = [status for _, status, _ in uploader.answers]
    assert set(statuses) <= {202, 503}, [a for a in uploader.answers if a[1] not in (202, 503)]
    assert 503 in statuses[cut_at:], "the cut was not seen by the traffic"
    assert statuses[-1] == 202, "uploads did not recover"
    for _, status, body in uploader.answers:
        if status == 503:
            assert body["error"]["code"] == "UNAVAILABLE"
    accepted = [(word, body["taskId"]) for word, status, body in uploader.answers if status == 202]
    for _, task_id in accepted:
        assert wait_task(http, stack.project_id, task_id)["status"] == "succeeded"
    for word, _ in accepted:
        found = http.post(stack.index_url(traffic_index, "/search"), json={"q": word},
                          headers={"Cache-Control": "no-cache"})
        assert found.status_code == 200 and found.json()["total"] == 1, (word, found.text)
    assert http.get(f"/v1/projects/{stack.project_id}/indices").status_code == 200
