"""The Python client under faults, against a real ``shopsearch serve``: a TCP proxy the test controls
sits between the client and the server (``tests/tcp_proxy.py``), or between the server and its
PostgreSQL (``tests/outage``).

- a connection cut mid-upload (the answer lost, or the request cut half-way) is retried with the
  batch's Idempotency-Key, and each batch is applied exactly once;
- a 429 with ``Retry-After`` is waited out that long, also for a call that is not idempotent, and the
  server's own search quota (429) is ridden out;
- 503 while the database is cut is retried until it is back, then the call succeeds;
- a call that is not idempotent is not repeated after its answer was lost (nor is an event batch),
  but is after a refused connection (nothing was sent); a lost commit answer is settled by reading
  the session instead of committing again;
- timeouts are the client's to set; a read timeout repeats a read but not a create.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from shopsearch_client import NO_RETRY, AsyncClient, Client, RetryPolicy, ShopsearchError, UploadProgress
from shopsearch_client import models as m

from tests.clients.conftest import MAPPING, Shop, free_plan_shop, serve
from tests.fixtures.tenants import make_tenant
from tests.outage.conftest import Stack, stack  # noqa: F401  (the fixture: a server whose database is proxied)
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.long


def product(i: int) -> dict[str, Any]:
    return {"id": f"p{i}", "name": f"copper kettle {i}", "brand": "Acme", "price": float(i)}


@pytest.fixture(scope="module")
def shop() -> Iterator[Shop]:
    with serve("sqlite") as server:
        tenant = make_tenant(server.database_url)
        yield Shop(server, tenant.project_id, tenant.key, "")


@pytest.fixture
def proxy(shop: Shop) -> Iterator[TcpProxy]:
    with TcpProxy(int(shop.base.rsplit(":", 1)[1])) as running:
        yield running


def through(proxy: TcpProxy) -> str:
    return f"http://127.0.0.1:{proxy.port}"


def seen(proxy: TcpProxy, method: str, path_end: str) -> int:
    """How many requests ``METHOD …path_end`` the proxy let through to the server."""
    return sum(1 for line in proxy.requests
               if line.startswith(method.encode() + b" ") and line.split(b" ")[1].split(b"?")[0].endswith(path_end.encode()))


def new_index(shop: Shop, name: str) -> str:
    with Client(shop.base, shop.key) as direct:
        return direct.project(shop.project_id).create_index(name, mapping=MAPPING).id


# --------------------------------------------------------------------------- a connection cut mid-upload
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_cut_upload_is_sent_again_and_applied_once(shop: Shop, proxy: TcpProxy, flavour: str) -> None:
    index_id = new_index(shop, f"cut-{flavour}")
    cuts = {1: proxy.fail_next_response, 2: lambda: proxy.fail_next_request(after=300)}

    def progress(step: UploadProgress) -> None:  # break the batch after this one
        if step.batches in cuts:
            cuts[step.batches]()

    docs = (product(i) for i in range(2500))
    if flavour == "sync":
        with Client(through(proxy), shop.key) as client:
            tasks = client.index(shop.project_id, index_id).upload_documents(docs, on_progress=progress)
    else:
        async def upload() -> list[m.TaskAccepted]:
            async with AsyncClient(through(proxy), shop.key) as client:
                return await client.index(shop.project_id, index_id).upload_documents(docs, on_progress=progress)
        tasks = asyncio.run(upload())

    # batch 2's answer was lost after the server applied it, batch 3's request was cut half-way:
    # each was sent twice, and each batch is one task
    assert seen(proxy, "POST", f"/indices/{index_id}/documents") == 5
    assert len({t.task_id for t in tasks}) == 3
    with Client(shop.base, shop.key) as direct:
        index = direct.index(shop.project_id, index_id)
        index.wait_for_tasks(tasks)
        upserts = list(index.iter_tasks(type=["documents.upsert"]))
        assert sorted(t.task_id for t in upserts) == sorted(t.task_id for t in tasks)
        assert sorted(t.details["received"] for t in upserts) == [500, 1000, 1000]
        assert index.get().document_count == 2500


# --------------------------------------------------------------------------- 429 and Retry-After
def rate_limited(retry_after: str) -> bytes:
    body = b'{"error": {"code": "RATE_LIMITED", "message": "Too many requests; try again later"}}'
    return (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: "
            + retry_after.encode() + b"\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


def test_a_429_is_waited_out_for_its_retry_after(shop: Shop, proxy: TcpProxy) -> None:
    index_id = new_index(shop, "limited")
    with Client(through(proxy), shop.key) as client:
        index = client.index(shop.project_id, index_id)
        proxy.answer_next(rate_limited("2"))
        started = time.monotonic()
        answer = index.search("kettle")
        waited = time.monotonic() - started
        assert isinstance(answer, m.SearchAnswer) and answer.total == 0
        assert 2.0 <= waited < 2.0 + 0.2 + 1.5, waited  # Retry-After, at most 10 % jitter, the search itself
        assert seen(proxy, "POST", "/search") == 1  # the 429 came from the proxy; the retry went through

        # a refused call was not applied: a create is repeated too
        proxy.answer_next(rate_limited("1"))
        started = time.monotonic()
        created = client.project(shop.project_id).create_index("after 429")
        assert time.monotonic() - started >= 1.0 and created.name == "after 429"
        assert seen(proxy, "POST", f"/projects/{shop.project_id}/indices") == 1

    with Client(through(proxy), shop.key, retry=NO_RETRY) as client:
        proxy.answer_next(rate_limited("2"))
        with pytest.raises(ShopsearchError) as info:
            client.index(shop.project_id, index_id).search("kettle")
        assert (info.value.status, info.value.code, info.value.retry_after) == (429, "RATE_LIMITED", 2.0)

    with Client(through(proxy), shop.key, retry=RetryPolicy(max_retry_after=5)) as client:
        proxy.answer_next(rate_limited("3600"))  # too long to wait: raised at once for the caller to decide
        started = time.monotonic()
        with pytest.raises(ShopsearchError) as info:
            client.index(shop.project_id, index_id).search("kettle")
        assert info.value.retry_after == 3600 and time.monotonic() - started < 1


def test_the_servers_search_quota_is_ridden_out(shop: Shop) -> None:
    """The free plan's secret-key searches: 100 per fixed 10-second window (control_plane.search.quota)."""
    free = free_plan_shop(shop.server)
    with Client(shop.base, free["key"]) as client:
        index = client.project(free["projectId"]).create_index("quota", mapping=MAPPING)
    with Client(shop.base, free["key"], retry=NO_RETRY) as client:
        quick = client.index(free["projectId"], index.id)
        with pytest.raises(ShopsearchError) as info:
            for _ in range(150):
                quick.search("kettle")
        assert (info.value.status, info.value.code) == (429, "RATE_LIMITED")
        assert info.value.retry_after is not None and 1 <= info.value.retry_after <= 10
    recording = Recording()
    with Client(shop.base, free["key"], retry=RetryPolicy(max_retry_after=15), transport=recording) as client:
        patient = client.index(free["projectId"], index.id)
        answers = [patient.search("kettle") for _ in range(3)]  # the window is used up: they wait for the next
    assert all(isinstance(a, m.SearchAnswer) for a in answers)
    statuses = recording.statuses("POST", "/search")
    assert statuses[0] == 429 and statuses[-3:] == [200, 200, 200] and set(statuses) == {200, 429}


# --------------------------------------------------------------------------- 503 while the database is cut
class Recording(httpx.BaseTransport):
    """The statuses the client got, request by request."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.seen: list[tuple[str, str, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.seen.append((request.method, request.url.path, response.status_code))
        return response

    def statuses(self, method: str, path_end: str) -> list[int]:
        return [status for m_, path, status in self.seen if m_ == method and path.endswith(path_end)]


def restore_after(proxy: TcpProxy, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, proxy.restore)
    timer.start()
    return timer


@pytest.mark.exclusive  # the cut's timing bounds the test
def test_503_during_a_database_cut_is_retried_then_succeeds(stack: Stack) -> None:  # noqa: F811
    recording = Recording()
    policy = RetryPolicy(max_retries=8)
    with Client(stack.base, stack.secret, retry=policy, transport=recording) as client:
        project = client.project(stack.project_id)
        index = project.index(project.create_index("cut", mapping=MAPPING).id)
        index.wait_for_tasks(index.upload_documents([product(1)]))

        stack.db.cut()
        restore_after(stack.db, 3.0)
        started = time.monotonic()
        info = index.get()
        assert info.document_count == 1 and time.monotonic() - started >= 2.0
        statuses = recording.statuses("GET", f"/indices/{index.id}")
        assert statuses[-1] == 200 and set(statuses[:-1]) == {503} and len(statuses) >= 2

        stack.db.cut()
        restore_after(stack.db, 3.0)
        tasks = index.upload_documents([product(2), product(3)])  # keyed: safe to repeat
        statuses = recording.statuses("POST", f"/indices/{index.id}/documents")
        assert statuses[-1] == 202 and 503 in statuses
        index.wait_for_tasks(tasks)
        assert index.get().document_count == 3
        assert len(list(index.iter_tasks(type=["documents.upsert"]))) == 2

        stack.db.cut()
        timer = restore_after(stack.db, 3.0)
        before = len(recording.seen)
        with pytest.raises(ShopsearchError) as error:  # a create is not repeated after a 503
            project.create_index("during the cut")
        assert (error.value.status, error.value.code, error.value.retry_after) == (503, "UNAVAILABLE", 2.0)
        assert [d["path"] for d in error.value.details] == ["database"]
        assert len(recording.seen) == before + 1
        timer.join()
        assert [i.name for i in project.iter_indices()] == ["cut"]


# --------------------------------------------------------------------------- not repeated blindly
def test_a_call_that_is_not_idempotent_is_not_repeated_blindly(shop: Shop, proxy: TcpProxy) -> None:
    with Client(through(proxy), shop.key, retry=RetryPolicy(max_retries=5, backoff=0.2)) as client:
        project = client.project(shop.project_id)
        proxy.fail_next_response()
        with pytest.raises(ShopsearchError) as info:
            project.create_index("once")
        assert (info.value.status, info.value.code) == (None, "CONNECTION_ERROR")
        assert seen(proxy, "POST", f"/projects/{shop.project_id}/indices") == 1
        assert [i.name for i in project.iter_indices()].count("once") == 1  # the server did create it, once

        # a search is repeated
        index = project.index(project.create_index("repeat", mapping=MAPPING).id)
        index.wait_for_tasks(index.upload_documents([product(i) for i in range(5)]))
        proxy.fail_next_response()
        assert index.search("kettle").total == 5
        assert seen(proxy, "POST", f"/indices/{index.id}/search") == 2

        # events are not: they would be counted twice
        answer = index.search("kettle")
        proxy.fail_next_response()
        with pytest.raises(ShopsearchError) as info:
            client.send_events([m.Event(type="click", query_id=answer.query_id, document_id="p1", position=1)])
        assert info.value.code == "CONNECTION_ERROR" and seen(proxy, "POST", "/v1/events") == 1

        # a lost commit answer: the session says whether it was committed, by which task
        session = index.open_replace_session()
        session.upload([product(9)])
        proxy.fail_next_response()
        accepted = session.commit()
        assert seen(proxy, "POST", f"/replace-sessions/{session.id}/commit") == 1
        assert seen(proxy, "GET", f"/replace-sessions/{session.id}") == 1
        task = index.wait_for_task(accepted)
        assert task.type == "replace.commit" and session.task_id == accepted.task_id
        assert [d["id"] for d in index.iter_documents()] == ["p9"]

        # nothing sent (the connection refused): a create is repeated
        proxy.cut()
        restore_after(proxy, 0.5)
        created = project.create_index("after a refusal")
        assert created.name == "after a refusal"
        assert seen(proxy, "POST", f"/projects/{shop.project_id}/indices") == 3  # once, repeat, this one


# --------------------------------------------------------------------------- timeouts
@pytest.fixture
def silent() -> Iterator[str]:
    """An address that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_timeouts_are_the_clients_to_set(silent: str) -> None:
    with Client(silent, "ss_sk_x", timeout=0.3, retry=NO_RETRY) as client:
        started = time.monotonic()
        with pytest.raises(ShopsearchError) as info:
            client.status()
        assert (info.value.status, info.value.code) == (None, "TIMEOUT")
        assert 0.3 <= time.monotonic() - started < 1.5
    with Client(silent, "ss_sk_x", timeout=0.3, retry=RetryPolicy(max_retries=2, backoff=0.01)) as client:
        started = time.monotonic()
        with pytest.raises(ShopsearchError):
            client.status()  # a read: tried three times
        assert time.monotonic() - started >= 0.9
        started = time.monotonic()
        with pytest.raises(ShopsearchError) as info:
            client.project("prj_x").create_index("x")  # a create: once
        assert info.value.code == "TIMEOUT" and time.monotonic() - started < 0.9
