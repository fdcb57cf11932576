"""The Python client's retry decisions, task waiting and error parsing, against scripted answers
(httpx.MockTransport): the cases a real server can't be made to give on demand."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from shopsearch_client import AsyncClient, Client, RetryPolicy, ShopsearchError
from shopsearch_client.errors import parse_retry_after

FAST = RetryPolicy(max_retries=3, backoff=0.01, max_backoff=0.02)
TASK = {"taskId": "tsk_1", "projectId": "prj_1", "indexId": "idx_1", "type": "documents.upsert",
        "createdAt": "2026-01-01T00:00:00Z", "startedAt": None, "finishedAt": None, "details": {}, "error": None}


def error(status: int, code: str, headers: dict[str, str] | None = None, **extra: Any) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": code.lower(), **extra}}, headers=headers)


class Script:
    """Answers requests in turn (the last one repeats), recording what was asked."""

    def __init__(self, *answers: httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer

    def client(self, retry: RetryPolicy = FAST) -> Client:
        return Client("http://shop.test", "ss_sk_x", retry=retry, transport=httpx.MockTransport(self))


def index_of(client: Client) -> Any:
    return client.index("prj_1", "idx_1")


def ok_search(_: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"hits": [], "total": 0, "page": 1, "perPage": 20, "facets": {}, "sort": None,
                                     "appliedRules": [], "queryId": "q", "tookMs": 1.0})


@pytest.mark.parametrize(("answer", "safe_retried", "unsafe_retried"), [
    (error(429, "RATE_LIMITED", {"Retry-After": "0"}), True, True),
    (error(503, "UNAVAILABLE", {"Retry-After": "0"}), True, False),
    (error(503, "SEARCH_TIMEOUT"), False, False),
    (httpx.Response(502, text="Bad gateway"), True, False),
    (httpx.Response(504, text="Gateway timeout"), True, False),
    (error(500, "INTERNAL"), False, False),
    (error(400, "VALIDATION_ERROR"), False, False),
    (error(409, "CONFLICT"), False, False),
    (httpx.ConnectError("refused"), True, True),
    (httpx.ConnectTimeout("slow"), True, True),
    (httpx.RemoteProtocolError("server disconnected"), True, False),
    (httpx.ReadError("reset"), True, False),
    (httpx.ReadTimeout("slow"), True, False),
])
def test_what_is_retried(answer: Any, safe_retried: bool, unsafe_retried: bool) -> None:
    """A search (safe to repeat) and a create (not) after one failure, then success."""
    created = httpx.Response(201, json={"id": "idx_2", "name": "x", "projectId": "prj_1", "shards": 1,
                                        "replicas": 1, "language": "en", "documentCount": 0, "status": "ready",
                                        "integration": None, "feed": None, "createdAt": "2026-01-01T00:00:00Z",
                                        "updatedAt": "2026-01-01T00:00:00Z"})
    for call, success, retried in ((lambda c: index_of(c).search("x"), ok_search, safe_retried),
                                   (lambda c: c.project("prj_1").create_index("x"), created, unsafe_retried)):
        script = Script(answer, success)
        with script.client() as client:
            if retried:
                call(client)
                assert len(script.requests) == 2
            else:
                with pytest.raises(ShopsearchError):
                    call(client)
                assert len(script.requests) == 1


def test_retries_stop_after_max_retries_with_the_last_error() -> None:
    script = Script(error(503, "UNAVAILABLE", {"Retry-After": "0"}, details=[{"path": "database", "message": "down"}]))
    with script.client(RetryPolicy(max_retries=2, backoff=0.01)) as client, pytest.raises(ShopsearchError) as info:
        client.index("prj_1", "idx_1").get()
    assert len(script.requests) == 3
    assert (info.value.status, info.value.code, info.value.retry_after) == (503, "UNAVAILABLE", 0.0)
    assert info.value.details == [{"path": "database", "message": "down"}]


def test_each_upload_batch_has_its_own_key_and_keeps_it_when_repeated() -> None:
    def accepted(request: httpx.Request) -> httpx.Response:
        return httpx.Response(202, json={"taskId": f"tsk_{len(json.loads(request.content))}"})

    script = Script(accepted, httpx.ReadError("reset"), error(409, "CONFLICT"), accepted, accepted)
    with script.client() as client:
        tasks = index_of(client).upload_documents(({"id": str(i)} for i in range(5)), batch_size=2)
    keys = [r.headers["Idempotency-Key"] for r in script.requests]
    # batch 1; batch 2's answer lost, its repeat raced the first attempt still holding the key (409),
    # its third attempt answered; batch 3
    assert [len(json.loads(r.content)) for r in script.requests] == [2, 2, 2, 2, 1]
    assert keys[1] == keys[2] == keys[3] and len({keys[0], keys[1], keys[4]}) == 3
    assert script.requests[1].content == script.requests[3].content  # the very same bytes
    assert [t.task_id for t in tasks] == ["tsk_2", "tsk_2", "tsk_1"]


def test_a_conflict_on_a_first_attempt_is_raised() -> None:
    script = Script(error(409, "CONFLICT"))
    with script.client() as client, pytest.raises(ShopsearchError) as info:
        index_of(client).upload_documents([{"id": "1"}])
    assert info.value.code == "CONFLICT" and len(script.requests) == 1


def test_upload_batch_size_is_checked() -> None:
    with Script(ok_search).client() as client:
        for size in (0, 1001):
            with pytest.raises(ValueError):
                index_of(client).upload_documents([{"id": "1"}], batch_size=size)


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff=0.25, max_backoff=2.0)
    for attempt, ceiling in ((0, 0.25), (1, 0.5), (2, 1.0), (3, 2.0), (6, 2.0)):
        delays = [policy._backoff(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(set(delays)) > 1


def test_retry_after_is_waited_with_at_most_ten_percent_more() -> None:
    policy = RetryPolicy()
    answer = ShopsearchError(429, "RATE_LIMITED", "slow down", retry_after=4.0)
    delays = [policy.error_delay(0, answer, safe=False, keyed=False) for _ in range(100)]
    assert all(d is not None and 4.0 <= d <= 4.4 for d in delays)
    assert policy.error_delay(3, answer, safe=True, keyed=False) is None  # max_retries used up
    assert RetryPolicy(max_retry_after=3).error_delay(0, answer, safe=True, keyed=False) is None


def test_retry_after_as_seconds_or_http_date() -> None:
    assert parse_retry_after("3") == 3.0 and parse_retry_after(" 1.5 ") == 1.5
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (parse_retry_after(later) or 0) <= 30
    assert parse_retry_after(email.utils.formatdate(time.time() - 30, usegmt=True)) == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None


def test_errors_that_are_not_the_spec_body() -> None:
    script = Script(httpx.Response(418, text="I'm a teapot"))
    with script.client() as client, pytest.raises(ShopsearchError) as info:
        client.status()
    assert (info.value.status, info.value.code, info.value.message, info.value.details) == (
        418, "HTTP_418", "I'm a teapot", [])
    assert str(info.value) == "418 HTTP_418: I'm a teapot"


def running(status: str = "processing", **fields: Any) -> httpx.Response:
    return httpx.Response(200, json={**TASK, "status": status, **fields})


def test_wait_for_task_gives_up_after_its_timeout() -> None:
    script = Script(running())
    with script.client() as client:
        started = time.monotonic()
        with pytest.raises(ShopsearchError) as info:
            client.project("prj_1").wait_for_task("tsk_1", timeout=0.5)
        waited = time.monotonic() - started
    assert (info.value.status, info.value.code) == (None, "TASK_TIMEOUT")
    assert info.value.task is not None and info.value.task.status == "processing"
    assert 0.5 <= waited < 1.5 and 4 <= len(script.requests) <= 12  # 50 ms growing by half each poll
    steady = Script(running())
    with steady.client() as client, pytest.raises(ShopsearchError):
        client.project("prj_1").wait_for_task("tsk_1", timeout=0.5, poll_interval=0.02)
    assert len(steady.requests) >= 15  # never more than 20 ms apart


def test_wait_for_task_raises_a_failed_tasks_error() -> None:
    failed = running("failed", finishedAt="2026-01-01T00:00:01Z",
                     error={"code": "MAPPING_BREAKS_CONFIG", "message": "a profile uses it"})
    with Script(running(), failed).client() as client:
        with pytest.raises(ShopsearchError) as info:
            client.index("prj_1", "idx_1").wait_for_task("tsk_1")
        assert (info.value.status, info.value.code, info.value.message) == (
            None, "MAPPING_BREAKS_CONFIG", "a profile uses it")
        assert info.value.task is not None and info.value.task.status == "failed"
    with Script(running("canceled")).client() as client:
        with pytest.raises(ShopsearchError) as info:
            client.index("prj_1", "idx_1").wait_for_task("tsk_1")
        assert info.value.code == "TASK_CANCELED"
        task = client.index("prj_1", "idx_1").wait_for_task("tsk_1", raise_on_failure=False)
        assert task.status == "canceled" and task.finished


def test_the_async_client_waits_and_retries_the_same_way() -> None:
    script = Script(httpx.ConnectError("refused"), running(), running("succeeded"))

    async def main() -> Any:
        async with AsyncClient("http://shop.test", "ss_sk_x", retry=FAST,
                               transport=httpx.MockTransport(script)) as client:
            return await client.project("prj_1").wait_for_task("tsk_1", timeout=5)

    task = asyncio.run(main())
    assert task.status == "succeeded" and len(script.requests) == 3


def test_requests_carry_the_key_and_the_json_body() -> None:
    script = Script(ok_search)
    with Client("http://shop.test/", "ss_sk_secret", headers={"Origin": "https://shop.example"},
                transport=httpx.MockTransport(script)) as client:
        client.search("pk_1", "red shoes", filters={"brand": ["Acme"]}, per_page=5)
    request = script.requests[0]
    assert request.method == "POST" and request.url.path == "/v1/search/pk_1"
    assert request.headers["Authorization"] == "Bearer ss_sk_secret"
    assert request.headers["Origin"] == "https://shop.example"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"].startswith("shopsearch-client-python/")
    assert json.loads(request.content) == {"q": "red shoes", "filters": {"brand": ["Acme"]}, "perPage": 5}


def test_ids_are_escaped_in_paths() -> None:
    script = Script(httpx.Response(200, json={"id": "a/b?c"}))
    with script.client() as client:
        assert client.index("prj_1", "idx_1").get_document("a/b?c") == {"id": "a/b?c"}
    assert script.requests[0].url.raw_path == b"/v1/projects/prj_1/indices/idx_1/documents/a%2Fb%3Fc"
