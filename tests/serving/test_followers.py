"""Two serving processes on one data directory: the primary (shard files, task runner) and a follower
(memory replicas following the database). Both apps run in this process, each with its own runtime,
shard host and lock handle, so the test can hold the follower's loop still; the real processes are
driven in tests/e2e/test_serving_processes.py. On SQLite and on PostgreSQL + Redis (scratch database:
a follower follows every index of its database)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from control_plane.app import create_app
from control_plane.document import tasks as document_tasks
from control_plane.migrate import upgrade
from control_plane.serving import follower as follower_module
from control_plane.serving import repository as registry
from control_plane.serving.follower import LEASE_S, Follower, wait_for_replicas
from tests.conftest import make_settings
from tests.factories import runtime_of
from tests.fixtures.app import started
from tests.fixtures.server import scratch_pg_database
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, products, wait_task
from tests.mailbox import Mailbox


@pytest.fixture(params=["sqlite", "postgres"])
def pair(request: pytest.FixtureRequest, tmp_path: Path, mailbox: Mailbox) -> Iterator[tuple[Any, Any]]:
    """(primary app, follower app) sharing one database and data directory."""
    with contextlib.ExitStack() as stack:
        pg_url = None
        if request.param == "postgres":
            name = stack.enter_context(scratch_pg_database("shopsearch_serving"))
            pg_url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        settings = make_settings(request.param, tmp_path, mailbox, pg_url, serving_processes=2)
        upgrade(settings)
        primary, follower = create_app(settings), create_app(settings)
        with started(primary), started(follower):  # entered in order: the first takes the lock
            assert runtime_of(primary).task_runner is not None
            assert isinstance(runtime_of(follower).follower, Follower)
            yield primary, follower


def _follower(app: Any) -> Follower:
    return runtime_of(app).follower  # type: ignore[no-any-return]


def _search(client: TestClient, tenant: Any, index_id: str, q: str, **body: Any) -> dict[str, Any]:
    response = client.post(tenant.url(index_id, "/search"), json={"q": q, **body},
                           headers={**tenant.headers, "Cache-Control": "no-cache"})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _answer(found: dict[str, Any]) -> tuple[Any, ...]:
    return found["total"], [h["id"] for h in found["hits"]], found.get("facets")


def _write(client: TestClient, tenant: Any, index_id: str, method: str, suffix: str, body: Any) -> dict[str, Any]:
    response = client.request(method, tenant.url(index_id, suffix), json=body, headers=tenant.headers)
    assert response.status_code == 202, response.text
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded", task
    return task


def test_a_succeeded_task_is_in_both_processes(pair: tuple[Any, Any]) -> None:
    primary, follower = pair
    with TestClient(primary) as p, TestClient(follower) as f:
        tenant = make_tenant(primary)
        index_id = create_index(p, tenant, shards=2)["id"]
        _write(p, tenant, index_id, "POST", "/documents", products(60))
        query = {"facets": ["brand", "tags"], "sort": "price:asc"}
        assert _answer(_search(p, tenant, index_id, "", **query)) == _answer(_search(f, tenant, index_id, "", **query))
        for n, word in enumerate(("zebra", "quokka", "narwhal", "okapi")):  # right after each success
            _write(p, tenant, index_id, "POST", "/documents", [{"id": f"new{n}", "name": f"{word} lamp"}])
            assert [h["id"] for h in _search(f, tenant, index_id, word)["hits"]] == [f"new{n}"]
            _write(p, tenant, index_id, "POST", "/documents/delete", [f"new{n}"])
            assert _search(f, tenant, index_id, word)["total"] == 0
        assert _answer(_search(p, tenant, index_id, "lamp", **query)) == _answer(_search(f, tenant, index_id, "lamp", **query))

        # a rebuilt generation (reindex, mapping change) is built by the follower too before the swap
        mapping = PRODUCT_MAPPING
        changed = {**mapping, "fields": {**mapping["fields"], "stock": {"type": "integer", "filterable": True,
                                                                       "facetable": True}}}
        _write(p, tenant, index_id, "PUT", "/mapping", changed)
        assert _answer(_search(f, tenant, index_id, "", facets=["stock"])) == _answer(
            _search(p, tenant, index_id, "", facets=["stock"]))
        rows = _registry(primary)
        assert len(rows) == 1 and set(rows[0].replicas[index_id]) >= {"2"}


def test_a_task_waits_for_a_follower_behind(pair: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    primary, follower = pair
    with TestClient(primary) as p, TestClient(follower) as f:
        tenant = make_tenant(primary)
        index_id = create_index(p, tenant)["id"]
        _write(p, tenant, index_id, "POST", "/documents", products(5))
        held = threading.Event()
        syncs = _follower(follower)
        real_sync = syncs._sync
        monkeypatch.setattr(syncs, "_sync", lambda state: (held.wait(30), real_sync(state)))
        response = p.post(tenant.url(index_id, "/documents"), json=[{"id": "late", "name": "quokka"}],
                          headers=tenant.headers)
        task_url = f"{tenant.tasks_url}/{response.json()['taskId']}"
        time.sleep(1.5)
        assert p.get(task_url, headers=tenant.headers).json()["status"] in ("enqueued", "processing")
        held.set()
        assert wait_task(p, tenant.headers, tenant.project_id, response.json()["taskId"])["status"] == "succeeded"
        assert _search(f, tenant, index_id, "quokka")["total"] == 1


def test_a_follower_past_its_lease_answers_only_once_caught_up(pair: tuple[Any, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    primary, follower = pair
    with TestClient(primary) as p, TestClient(follower) as f:
        tenant = make_tenant(primary)
        index_id = create_index(p, tenant)["id"]
        _write(p, tenant, index_id, "POST", "/documents", products(5))
        loop = _follower(follower)
        stalled, real_pass = threading.Event(), loop._pass
        monkeypatch.setattr(loop, "_pass", lambda: (stalled.wait(30), real_pass()))
        monkeypatch.setattr(follower_module, "GATE_WAIT_S", 0.3)
        time.sleep(0.2)  # the loop is now held before its next pass
        loop._reported_at -= LEASE_S  # as if it stalled past its lease: tasks no longer wait for it
        stale = f.post(tenant.url(index_id, "/search"), json={"q": ""}, headers=tenant.headers)
        assert stale.status_code == 503 and stale.json()["error"]["code"] == "UNAVAILABLE"
        stalled.set()
        deadline = time.monotonic() + 10
        while not loop.fresh():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert _search(f, tenant, index_id, "")["total"] == 5


def test_wait_for_replicas_counts_live_processes_only(pair: tuple[Any, Any]) -> None:
    primary, _ = pair
    sessions = runtime_of(primary).sessions
    with sessions.begin() as db:
        registry.report(db, "gone", time.time() - 2 * LEASE_S, {"idx_x": {"1": 0}})
        registry.report(db, "behind", time.time(), {"idx_x": {"1": 4}})
    # the real follower holds no idx_x either: only the two rows made here are looked at
    made = {"gone", "behind"}
    assert made & set(wait_for_replicas(sessions, "idx_x", 1, 5, timeout=0.2)) == {"behind"}
    with sessions.begin() as db:
        registry.report(db, "behind", time.time(), {"idx_x": {"1": 5}})
    assert made & set(wait_for_replicas(sessions, "idx_x", 1, 5, timeout=0.2)) == set()
    assert made & set(wait_for_replicas(sessions, "idx_x", 2, 1, timeout=0.2)) == {"behind"}  # another generation
    with sessions.begin() as db:
        registry.forget(db, "behind")
        registry.forget(db, "gone")


def _registry(app: Any) -> list[Any]:
    with runtime_of(app).sessions() as db:
        return registry.live(db, time.time() - LEASE_S)



class _Rewrite:
    """Wraps a catch-up: the first call after :meth:`arm` writes document ``d`` again (committed, at
    a sequence past the one the catch-up was asked for) before it reads any row; every later call
    waits until the test looked, so no other catch-up mends the replica meanwhile."""

    def __init__(self, p: TestClient, tenant: Any, index_id: str) -> None:
        self.p, self.tenant, self.index_id = p, tenant, index_id
        self.armed, self.fired, self.checked = threading.Event(), threading.Event(), threading.Event()

    def wrap(self, real: Any) -> Any:
        def catching_up(*args: Any, **kwargs: Any) -> Any:
            if self.armed.is_set():
                self.armed.clear()
                again = self.p.post(self.tenant.url(self.index_id, "/documents"), headers=self.tenant.headers,
                                    json=[{"id": "d", "name": "quokka lamp v2"}])
                assert again.status_code == 202, again.text
                self.fired.set()
            elif self.fired.is_set():
                self.checked.wait(30)
            return real(*args, **kwargs)
        return catching_up


@pytest.mark.parametrize("where", ["follower", "primary"])
def test_a_catch_up_reads_its_rows_and_its_sequence_at_one_moment(pair: tuple[Any, Any], where: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A document rewritten between the read of the index's sequence and the read of the rows has
    taken a sequence past the one read. A catch-up to that sequence called a replica that lacked the
    document (here: deleted, then added again) complete, the write's task succeeded, and search
    missed the document until the next catch-up (CI: a follower's search short of 3 documents just
    after a reindex swapped in a generation built without them)."""
    primary, follower = pair
    with TestClient(primary) as p, TestClient(follower) as f:
        tenant = make_tenant(primary)
        index_id = create_index(p, tenant, shards=2)["id"]
        _write(p, tenant, index_id, "POST", "/documents", products(5) + [{"id": "d", "name": "quokka lamp v0"}])
        _write(p, tenant, index_id, "POST", "/documents/delete", ["d"])
        rewrite = _Rewrite(p, tenant, index_id)
        if where == "follower":  # after the pass read the sequences, before its catch-up
            loop = _follower(follower)
            monkeypatch.setattr(loop, "_sync", rewrite.wrap(loop._sync))
        else:  # the primary's task, once it read the index
            monkeypatch.setattr(document_tasks, "catch_up", rewrite.wrap(document_tasks.catch_up))
        rewrite.armed.set()
        try:
            first = p.post(tenant.url(index_id, "/documents"), json=[{"id": "d", "name": "quokka lamp v1"}],
                           headers=tenant.headers)
            assert first.status_code == 202, first.text
            task = wait_task(p, tenant.headers, tenant.project_id, first.json()["taskId"])
            assert task["status"] == "succeeded", task
            assert rewrite.fired.is_set()
            found = _search(f if where == "follower" else p, tenant, index_id, "quokka")
            assert [h["id"] for h in found["hits"]] == ["d"]
        finally:
            rewrite.checked.set()
        for client in (p, f):
            assert [h["document"]["name"] for h in _search(client, tenant, index_id, "quokka")["hits"]] in (
                ["quokka lamp v1"], ["quokka lamp v2"])
