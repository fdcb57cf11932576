import threading
import time

import pytest
from sqlalchemy import select

from control_plane.shard import feed
from control_plane.task import queue
from control_plane.task.models import Task
from control_plane.task.queue import LeaseLost
from control_plane.task.runner import TaskRunner
from tests.factories import add_member, bearer, make_key
from tests.index.helpers import create_index, make_tenant, products, search, upload, wait_task


def test_list_filter_page_get(app, client):
    tenant = make_tenant(app)
    a = create_index(client, tenant, name="a")
    b = create_index(client, tenant, name="b")
    t1 = upload(client, tenant, a["id"], products(2))
    t2 = upload(client, tenant, b["id"], products(2))
    flush = client.post(tenant.url(a["id"], "/documents/flush"), headers=tenant.headers).json()
    wait_task(client, tenant.headers, tenant.project_id, flush["taskId"])
    items = client.get(tenant.tasks_url, headers=tenant.read_headers).json()["items"]
    assert [t["taskId"] for t in items] == [flush["taskId"], t2["taskId"], t1["taskId"]]  # newest first
    assert set(items[0]) == {"taskId", "projectId", "indexId", "type", "status", "createdAt", "startedAt",
                             "finishedAt", "details", "error"}
    by_index = client.get(tenant.tasks_url + f"?indexId={a['id']}", headers=tenant.headers).json()["items"]
    assert {t["taskId"] for t in by_index} == {t1["taskId"], flush["taskId"]}
    by_type = client.get(tenant.tasks_url + "?type=documents.flush", headers=tenant.headers).json()["items"]
    assert [t["taskId"] for t in by_type] == [flush["taskId"]]
    assert client.get(tenant.tasks_url + "?status=succeeded&status=failed", headers=tenant.headers).json()["items"]
    assert client.get(tenant.tasks_url + "?status=enqueued", headers=tenant.headers).json()["items"] == []
    assert client.get(tenant.tasks_url + "?status=bogus", headers=tenant.headers).status_code == 400
    assert client.get(tenant.tasks_url + "?cursor=!!", headers=tenant.headers).status_code == 400
    page1 = client.get(tenant.tasks_url + "?limit=2", headers=tenant.headers).json()
    page2 = client.get(tenant.tasks_url + f"?limit=2&cursor={page1['nextCursor']}", headers=tenant.headers).json()
    assert len(page1["items"]) == 2 and [t["taskId"] for t in page2["items"]] == [t1["taskId"]]
    assert page2["nextCursor"] is None
    got = client.get(tenant.tasks_url + f"/{t1['taskId']}", headers=tenant.headers).json()
    assert got["status"] == "succeeded" and got["indexId"] == a["id"]
    # members read, index-scoped keys see only their index, other tenants 404
    member = add_member(app, tenant.account, "member")
    assert client.get(tenant.tasks_url, headers=member.headers).status_code == 200
    scoped = bearer(make_key(app, tenant.project_id, access="read", index_id=b["id"]))
    assert [t["taskId"] for t in client.get(tenant.tasks_url, headers=scoped).json()["items"]] == [t2["taskId"]]
    assert client.get(tenant.tasks_url + f"/{t1['taskId']}", headers=scoped).status_code == 404
    other = make_tenant(app)
    assert client.get(tenant.tasks_url + f"/{t1['taskId']}", headers=other.headers).status_code == 404
    assert client.get(other.tasks_url + f"/{t1['taskId']}", headers=other.headers).status_code == 404
    assert client.get(tenant.tasks_url, headers=other.headers).status_code == 404
    assert client.get(tenant.tasks_url + "/tsk_nope", headers=tenant.headers).status_code == 404


class Killed(BaseException):
    """Simulates the runner process dying (not an Exception: nothing gets recorded)."""


class KillingBridge:
    def __init__(self, bridge, after):
        self._bridge = bridge
        self._left = after

    def apply(self, *args, **kwargs):
        if self._left <= 0:
            raise Killed()
        self._left -= 1
        return self._bridge.apply(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._bridge, name)


def test_runner_killed_mid_task_is_resumed(app, client, monkeypatch):
    runtime = app.state.runtime
    bridge = runtime.shards
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    monkeypatch.setattr(feed, "PAGE_ROWS", 10)
    with runtime.task_runner.paused():
        response = client.post(tenant.url(index["id"], "/documents"), json=products(60), headers=tenant.headers)
        task_id = response.json()["taskId"]
        dying = TaskRunner(runtime.sessions, KillingBridge(bridge, after=2), runtime.settings, lease_seconds=0.5, state=runtime.state,
                           maintenance=False)
        claim = dying.claim()
        assert claim is not None and claim.id == task_id
        with pytest.raises(Killed):
            dying.run_claim(claim)
        assert 0 < search(client, tenant, index["id"], q="", perPage=100)["total"] < 60  # partly applied
        rescuer = TaskRunner(runtime.sessions, bridge, runtime.settings, lease_seconds=30, maintenance=False,
                               state=runtime.state)
        assert rescuer.claim() is None  # the lease is still held
        time.sleep(0.6)
        second = rescuer.claim()
        assert second is not None and second.id == task_id and second.attempts == 2
        assert rescuer.run_claim(second) == "succeeded"
        with runtime.sessions.begin() as db, pytest.raises(LeaseLost):
            queue.finish(db, claim, "failed")  # the dead runner's late write changes nothing
    task = wait_task(client, tenant.headers, tenant.project_id, task_id)
    assert task["status"] == "succeeded" and task["details"]["indexed"] == 60
    answer = search(client, tenant, index["id"], q="", perPage=100)
    assert answer["total"] == 60
    assert sorted(h["id"] for h in answer["hits"]) == sorted(f"p{i}" for i in range(60))


def test_cancel_enqueued_and_failure_recorded(app, client):
    runtime = app.state.runtime
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    with runtime.task_runner.paused():
        first = client.post(tenant.url(index["id"], "/reindex"), headers=tenant.headers).json()["taskId"]
        upload_task = upload(client, tenant, index["id"], products(3), wait=False)["taskId"]
        assert client.get(tenant.tasks_url + f"/{upload_task}", headers=tenant.headers).json()["status"] == "enqueued"
        canceled = client.post(tenant.url(index["id"], "/reindex/cancel"), headers=tenant.headers).json()
        assert canceled == {"taskId": first, "status": "canceled"}
    task = wait_task(client, tenant.headers, tenant.project_id, upload_task)
    assert task["status"] == "succeeded"
    got = client.get(tenant.tasks_url + f"/{first}", headers=tenant.headers).json()
    assert got["status"] == "canceled" and got["finishedAt"]


def test_two_runners_never_overlap_on_one_index(app, client):
    runtime = app.state.runtime
    bridge = runtime.shards
    tenant = make_tenant(app)
    indices = [create_index(client, tenant, name=f"i{n}", shards=2)["id"] for n in range(3)]
    runners = [TaskRunner(runtime.sessions, bridge, runtime.settings, concurrency=3, poll_interval=0.01,
                          maintenance=False, name=f"runner-{n}") for n in range(2)]
    with runtime.task_runner.paused():
        task_ids = []
        for batch in range(6):
            for index_id in indices:
                task_ids.append(upload(client, tenant, index_id, products(20, start=batch * 20), wait=False)["taskId"])
        for runner in runners:
            runner.start()
        try:
            for task_id in task_ids:
                assert wait_task(client, tenant.headers, tenant.project_id, task_id)["status"] == "succeeded"
        finally:
            for runner in runners:
                runner.stop()
    with runtime.sessions() as db:
        rows = list(db.scalars(select(Task).where(Task.id.in_(task_ids))))
    for index_id in indices:
        runs = sorted((t for t in rows if t.index_id == index_id), key=lambda t: t.started_at)
        assert [t.pk for t in runs] == sorted(t.pk for t in runs)  # in order
        for earlier, later in zip(runs, runs[1:], strict=False):
            assert earlier.finished_at <= later.started_at
    for index_id in indices:
        assert search(client, tenant, index_id, q="")["total"] == 120


def test_concurrent_uploads_from_threads(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=3)
    task_ids, errors = [], []
    lock = threading.Lock()

    def worker(n):
        try:
            for k in range(3):
                start = (n * 3 + k) * 30
                response = client.post(tenant.url(index["id"], "/documents"), json=products(30, start=start),
                                       headers=tenant.headers)
                assert response.status_code == 202, response.text
                with lock:
                    task_ids.append(response.json()["taskId"])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for task_id in task_ids:
        assert wait_task(client, tenant.headers, tenant.project_id, task_id)["status"] == "succeeded"
    assert search(client, tenant, index["id"], q="")["total"] == 540
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 540
