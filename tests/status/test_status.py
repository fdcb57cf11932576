"""``GET /v1/status`` and ``/status`` on the session's app (both backends): shape, caching, the page,
the per-IP limit, one answer across two API instances, and the thresholds of each state."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from control_plane.app import create_app
from control_plane.state import FileState, MemoryState, state_file
from control_plane.status import checks, service
from control_plane.status.checks import DEGRADED, DOWN, OPERATIONAL, Database
from tests.factories import runtime_of

STATES = {"operational", "degraded", "down"}


def _checked(answer: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(answer["checkedAt"].replace("Z", "+00:00"))


def _age(answer: dict[str, Any]) -> float:
    return (datetime.now(UTC) - _checked(answer)).total_seconds()


def _expire(app) -> None:  # type: ignore[no-untyped-def]
    """Drop the shared answer (as if its 15 s were over)."""
    runtime = runtime_of(app)
    runtime.state.delete(service.ANSWER_KEY)
    runtime.status.state.delete(service.ANSWER_KEY)


def test_answer_shape_and_same_answer_within_15_seconds(app, client):
    _expire(app)
    response = client.get("/v1/status")
    assert response.status_code == 200
    answer = response.json()
    assert set(answer) == {"status", "services", "checkedAt"}
    assert [s["name"] for s in answer["services"]] == ["search", "indexing", "dashboard", "mcp"]
    assert all(set(s) == {"name", "state"} and s["state"] in STATES for s in answer["services"])
    # the session app is healthy: its shards, runner, database (and Redis) and MCP app all work
    assert answer["status"] == "operational", answer
    assert answer["checkedAt"].endswith("Z") and 0 <= _age(answer) <= service.CACHE_SECONDS
    again = client.get("/v1/status").json()
    assert again == answer  # within 15 s: the same answer


def test_answer_changes_when_it_expires_and_is_never_older_than_15_s(app, client, monkeypatch):
    monkeypatch.setattr(service, "CACHE_SECONDS", 0.3)
    _expire(app)
    first = client.get("/v1/status").json()
    # (that an answer is shared within its window is the test above's, with the real 15 s: two
    # requests 0.3 s apart are not a promise a busy machine keeps; CI once took 0.7 s)
    deadline = time.monotonic() + 10
    while True:
        asked = datetime.now(UTC)
        answer = client.get("/v1/status").json()
        # an answer is at most 0.3 s older than the moment it was asked for (checked within the
        # request, or shared for 0.3 s at most): no wall-clock bound on the request's own time
        assert (asked - _checked(answer)).total_seconds() <= 0.3 + 0.05, (asked, answer["checkedAt"])
        if answer != first:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert answer["checkedAt"] > first["checkedAt"]


def test_search_is_degraded_when_the_probe_is_slow_and_down_when_it_cannot_serve(app, client, monkeypatch):
    monkeypatch.setattr(checks, "SEARCH_SLOW_MS", -1.0)  # every probe is "too slow"
    _expire(app)
    answer = client.get("/v1/status").json()
    assert answer["status"] == "degraded" and answer["services"][0] == {"name": "search", "state": "degraded"}
    # this instance cannot serve search (what /ready answers 503 for): down
    monkeypatch.setattr(runtime_of(app), "readiness_checks", [lambda: False])
    _expire(app)
    answer = client.get("/v1/status").json()
    assert answer["status"] == "down" and answer["services"][0] == {"name": "search", "state": "down"}
    monkeypatch.undo()
    _expire(app)
    assert client.get("/v1/status").json()["status"] == "operational"


def test_mcp_is_down_when_its_app_does_not_answer(app, client, monkeypatch):
    async def silent() -> bool:
        raise TimeoutError

    monkeypatch.setattr(runtime_of(app), "mcp_check", silent)
    _expire(app)
    answer = client.get("/v1/status").json()
    assert answer["status"] == "down" and answer["services"][3] == {"name": "mcp", "state": "down"}
    monkeypatch.undo()
    _expire(app)
    assert client.get("/v1/status").json()["status"] == "operational"


def test_status_page_shows_the_same_data_without_script(app, client):
    answer = client.get("/v1/status").json()
    page = client.get("/status")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "<script" not in html.lower()
    assert f'Overall: <span class="{answer["status"]}">' in html
    for name, label in (("search", "Search"), ("indexing", "Indexing"), ("dashboard", "Dashboard and API"),
                        ("mcp", "MCP server")):
        state = next(s["state"] for s in answer["services"] if s["name"] == name)
        assert f'<th scope="row">{label}</th><td class="{state}">' in html
    assert answer["checkedAt"] in html


def test_rate_limited_per_ip(app, client, monkeypatch):
    runtime = runtime_of(app)
    monkeypatch.setattr(runtime, "settings", runtime.settings.model_copy(update={"status_limit_per_ip": "3/minute"}))
    codes = [client.get("/v1/status").status_code for _ in range(3)]
    refused = client.get("/status")
    assert codes == [200, 200, 200]
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["Retry-After"]) >= 1


@pytest.mark.backend("postgres")  # instances share the answer through Redis (else: one process, or the state file)
def test_one_answer_across_two_api_instances(app, settings, monkeypatch):
    other = create_app(settings)  # a second API instance on the same PostgreSQL and Redis
    computed: list[int] = []
    real = service.run_checks

    async def counted(runtime):  # type: ignore[no-untyped-def]
        computed.append(id(runtime))
        time.sleep(0.3)  # a slow check: the other instance asks meanwhile
        return await real(runtime)

    monkeypatch.setattr(service, "run_checks", counted)
    _expire(app)
    answers: list[dict[str, Any]] = []

    def ask(application) -> None:  # type: ignore[no-untyped-def]
        answers.append(TestClient(application).get("/v1/status").json())

    try:
        threads = [threading.Thread(target=ask, args=(a,)) for a in (app, other, app, other)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(answers) == 4 and all(a == answers[0] for a in answers)
        assert len(computed) == 1  # one instance computed, the others read its answer
        assert TestClient(other).get("/v1/status").json() == answers[0]
    finally:
        runtime_of(other).close()


@pytest.mark.parametrize(("db", "state"), [
    (Database(up=True, runners=1), OPERATIONAL),
    (Database(up=True, runners=2, waiting=5, oldest_wait_s=checks.TASK_WAIT_DEGRADED_S - 1), OPERATIONAL),
    (Database(up=True, runners=1, waiting=1, oldest_wait_s=checks.TASK_WAIT_DEGRADED_S + 1), DEGRADED),
    (Database(up=True, runners=1, waiting=checks.QUEUE_LAG_DEGRADED + 1, oldest_wait_s=1), DEGRADED),
    (Database(up=True, runners=1, waiting=1, oldest_wait_s=checks.TASK_WAIT_DOWN_S + 1), DOWN),
    (Database(up=True, runners=1, disk_refuses=True), DEGRADED),  # replicas serve from memory, retrying
    (Database(up=True, runners=0), DOWN),
    (Database(up=False), DOWN),
])
def test_indexing_thresholds(db, state):
    assert checks.indexing_state(db) == state


def test_dashboard_thresholds():
    assert checks.dashboard_state(Database(up=True, took_ms=3), redis_down=False) == OPERATIONAL
    assert checks.dashboard_state(Database(up=True, took_ms=checks.DB_SLOW_MS + 1), redis_down=False) == DEGRADED
    assert checks.dashboard_state(Database(up=True, took_ms=3), redis_down=True) == DEGRADED
    assert checks.dashboard_state(Database(up=False), redis_down=False) == DOWN
    assert checks.worst([OPERATIONAL, DEGRADED, OPERATIONAL]) == DEGRADED
    assert checks.worst([DEGRADED, DOWN]) == DOWN


def test_first_answer_stored_wins_in_memory_and_in_the_state_file(tmp_path):
    def raw(tag: str, ttl: float) -> bytes:
        return orjson.dumps({"answer": {"tag": tag}, "until": time.time() + ttl})

    for state in (MemoryState(), FileState(state_file(tmp_path))):
        assert service._fresh(state.set_first(service.ANSWER_KEY, raw("a", 0.3), 0.3)) == {"tag": "a"}
        kept = service._fresh(state.set_first(service.ANSWER_KEY, raw("b", 5), 5))
        assert kept == {"tag": "a"}, state  # a fresh answer is there: the later one is dropped
        time.sleep(0.35)
        assert service._fresh(state.set_first(service.ANSWER_KEY, raw("c", 5), 5)) == {"tag": "c"}, state
