"""A dependency that accepts connections and then says nothing (a hung server, a black-holed
network), under a running service: the README's "never a hang" ("When a dependency is down").

* PostgreSQL stalled: every route that needs it answers 503 ``UNAVAILABLE`` naming ``database``
  within ``DATABASE_CONNECT_TIMEOUT`` (the stack sets 2 s), writes included, and ``/ready`` says so;
  the service recovers by itself when the database answers again.
* Redis stalled (open connections held silent too): Redis calls give up after 2 s, and the service
  answers as it does with Redis cut (ready, management, sign-in and search all work) without any
  request waiting longer than one 2 s timeout per Redis client it uses (two at most: the shared
  state's and the rate limits' storage).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from tests.outage.conftest import CONNECT_TIMEOUT_S, ORIGIN, PASSWORD, Stack, create_index, upload

pytestmark = pytest.mark.exclusive  # bounds how long requests wait during the stall

REDIS_TIMEOUT_S = 2.0  # README: "Redis calls after 2 s"
SLACK_S = 1.5  # the request's own work on a loaded 2-core machine


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def _unavailable(response: httpx.Response, path: str) -> None:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error["code"] == "UNAVAILABLE", error
    assert [d["path"] for d in error["details"]] == [path], error
    assert int(response.headers["retry-after"]) >= 1


def test_a_stalled_database_answers_503_within_the_connect_timeout(stack: Stack) -> None:
    http = stack.client()
    index_id = create_index(http, stack, "shop")
    upload(http, stack, index_id, [{"id": "p1", "name": "blue kettle", "brand": "acme"}])
    bound = CONNECT_TIMEOUT_S + SLACK_S

    stack.db.stall()
    try:
        # a client timeout well past the bound: a hang fails the test, it does not stall the suite
        slow = httpx.Client(base_url=stack.base, headers=stack.headers, timeout=30)
        for what, call in (
            ("list indices", lambda: slow.get(f"/v1/projects/{stack.project_id}/indices")),
            ("upload", lambda: slow.post(stack.index_url(index_id, "/documents"),
                                         json=[{"id": "p2", "name": "red kettle", "brand": "acme"}])),
            ("sign-in", lambda: slow.post("/v1/auth/login", json={"email": stack.email, "password": PASSWORD})),
        ):
            response, took = _timed(call)
            _unavailable(response, "database")
            assert took <= bound, f"{what} waited {took:.1f} s on the stalled database (bound {bound} s)"
        ready, took = _timed(lambda: slow.get("/ready"))
        assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
        assert took <= bound, f"/ready waited {took:.1f} s on the stalled database (bound {bound} s)"
        assert stack.db.accepted > 0  # the service did try the stalled database
    finally:
        stack.db.restore()

    deadline = time.monotonic() + 30
    while httpx.get(stack.base + "/ready", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the service did not recover after the database came back"
        time.sleep(0.2)
    listed = http.get(f"/v1/projects/{stack.project_id}/indices")
    assert listed.status_code == 200 and [i["id"] for i in listed.json()["items"]] == [index_id], listed.text


def test_a_stalled_redis_costs_at_most_its_timeout(stack: Stack) -> None:
    http = stack.client()
    index_id = create_index(http, stack, "shop")
    upload(http, stack, index_id, [{"id": "p1", "name": "blue kettle", "brand": "acme"}])
    profile = http.post(stack.index_url(index_id, "/profiles"), json={"name": "web", "queryFields": {"name": {"weight": 1}}})
    assert profile.status_code == 201, profile.text
    storefront = httpx.Client(base_url=stack.base, timeout=30,
                              headers={"Authorization": f"Bearer {stack.public}", "Origin": ORIGIN})
    search_url = f"/v1/search/{profile.json()['profileKey']}"
    assert storefront.post(search_url, json={"q": "kettle"}).status_code == 200

    stack.redis.stall(hold_open=True)  # its pooled connections go silent too: only the 2 s timeout helps
    try:
        slow = httpx.Client(base_url=stack.base, headers=stack.headers, timeout=30)
        # ``calls``: the Redis clients a request may wait on. Rate limits and quotas live in their own
        # client (the limits library's storage) with its own 2 s timeout and no shared back-off, so a
        # sign-in, or a search once the back-off lets Redis be tried again, may wait for two timeouts
        for what, call, status, calls in (
            ("search", lambda: storefront.post(search_url, json={"q": "kettle"}), 200, 1),
            ("ready", lambda: slow.get("/ready"), 200, 1),
            ("list indices", lambda: slow.get(f"/v1/projects/{stack.project_id}/indices"), 200, 1),
            ("sign-in", lambda: slow.post("/v1/auth/login", json={"email": stack.email, "password": PASSWORD}),
             200, 2),
            ("upload", lambda: slow.post(stack.index_url(index_id, "/documents"),
                                         json=[{"id": "p2", "name": "red kettle", "brand": "acme"}]), 202, 1),
            ("search again", lambda: storefront.post(search_url, json={"q": "kettle"}), 200, 2),
        ):
            response, took = _timed(call)
            assert response.status_code == status, (what, response.text)
            limit = calls * REDIS_TIMEOUT_S + SLACK_S
            assert took <= limit, f"{what} waited {took:.1f} s on the stalled Redis (bound {limit} s)"
    finally:
        stack.redis.restore()
    hits = storefront.post(search_url, json={"q": "kettle"}, headers={"Cache-Control": "no-cache"})
    assert hits.status_code == 200, hits.text
