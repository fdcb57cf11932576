import threading
from datetime import timedelta

from sqlalchemy import update

from control_plane.db import utcnow
from control_plane.document.models import ReplaceSession
from tests.factories import add_member, bearer, make_key
from tests.index.helpers import create_index, make_tenant, products, search, upload, wait_task


def _task_ids(client, tenant):
    return [t["taskId"] for t in client.get(tenant.tasks_url + "?limit=1000", headers=tenant.headers).json()["items"]]


def test_upload_get_list_delete(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    task = upload(client, tenant, index["id"], products(25))
    assert task["type"] == "documents.upsert" and task["details"]["received"] == 25
    assert task["startedAt"] and task["finishedAt"] and task["error"] is None
    doc = client.get(tenant.url(index["id"], "/documents/p3"), headers=tenant.read_headers)
    assert doc.status_code == 200 and doc.json()["name"] == "Product 3 phone"
    assert client.get(tenant.url(index["id"], "/documents/nope"), headers=tenant.headers).status_code == 404
    seen, cursor = [], None
    while True:
        url = tenant.url(index["id"], "/documents?limit=10") + (f"&cursor={cursor}" if cursor else "")
        page = client.get(url, headers=tenant.headers).json()
        seen += [d["id"] for d in page["items"]]
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(f"p{i}" for i in range(25))
    # replace one document, integer ids are accepted
    upload(client, tenant, index["id"], [{"id": "p1", "name": "renamed gadget"}, {"id": 77, "name": "int id"}])
    assert search(client, tenant, index["id"], q="gadget")["hits"][0]["id"] == "p1"
    assert client.get(tenant.url(index["id"], "/documents/77"), headers=tenant.headers).status_code == 200
    response = client.post(tenant.url(index["id"], "/documents/delete"), json=["p1", "p2", "missing"], headers=tenant.headers)
    assert response.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded" and task["details"]["deleted"] == 2
    assert search(client, tenant, index["id"], q="gadget")["total"] == 0
    assert client.get(tenant.url(index["id"], "/documents/p2"), headers=tenant.headers).status_code == 404
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 24


def test_upload_validation_enqueues_nothing(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    before = _task_ids(client, tenant)
    cases = [
        ({"id": "a"}, 400),
        ("text", 400),
        ([{"name": "no id"}], 400),
        ([{"id": ""}], 400),
        ([{"id": True}], 400),
        ([1, 2], 400),
        ([{"id": "a", "price": "cheap"}], 400),
        ([{"id": "a", "inStock": "yes"}], 400),
        ([{"id": "a", "stock": 1.5}], 400),
        ([{"id": "a", "tags": [1.5]}], 400),
        ([{"id": f"d{i}"} for i in range(1001)], 413),
    ]
    for body, status in cases:
        response = client.post(url, json=body, headers=tenant.headers)
        assert response.status_code == status, (body, response.text)
        assert response.json()["error"]["code"] == ("PAYLOAD_TOO_LARGE" if status == 413 else "VALIDATION_ERROR")
    one_bad = products(5)
    one_bad[3]["price"] = "12 EUR"
    response = client.post(url, json=one_bad, headers=tenant.headers)
    assert response.status_code == 400
    assert response.json()["error"]["details"] == [{"path": "[3].price", "message": "expected a number"}]
    malformed = client.post(url, content=b"[{", headers={**tenant.headers, "content-type": "application/json"})
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "VALIDATION_ERROR"
    assert client.post(url, content=b"", headers=tenant.headers).status_code == 400
    assert _task_ids(client, tenant) == before
    assert client.get(tenant.url(index["id"], "/documents"), headers=tenant.headers).json()["items"] == []
    assert client.post(url, json=[{"id": f"d{i}"} for i in range(1000)], headers=tenant.headers).status_code == 202


def test_document_route_access(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    other = make_tenant(app)
    member = add_member(app, tenant.account, "member")
    for method, suffix, body in (
        ("post", "/documents", [{"id": "a"}]),
        ("post", "/documents/delete", ["a"]),
        ("post", "/documents/flush", None),
        ("post", "/replace-sessions", {}),
    ):
        kwargs = {"json": body} if body is not None else {}
        assert getattr(client, method)(tenant.url(index["id"], suffix), headers=tenant.read_headers, **kwargs).status_code == 403
        assert getattr(client, method)(tenant.url(index["id"], suffix), headers=member.headers, **kwargs).status_code == 403
        assert getattr(client, method)(tenant.url(index["id"], suffix), headers=other.headers, **kwargs).status_code == 404
        assert getattr(client, method)(other.url(index["id"], suffix), headers=other.headers, **kwargs).status_code == 404
    assert client.get(tenant.url(index["id"], "/documents"), headers=member.headers).status_code == 200
    assert client.get(tenant.url(index["id"], "/documents"), headers=other.headers).status_code == 404
    second = create_index(client, tenant, name="second")
    scoped = bearer(make_key(app, tenant.project_id, index_id=second["id"]))
    assert client.get(tenant.url(index["id"], "/documents"), headers=scoped).status_code == 404
    assert client.post(tenant.url(second["id"], "/documents"), json=[{"id": "x"}], headers=scoped).status_code == 202


def test_flush(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(40))
    response = client.post(tenant.url(index["id"], "/documents/flush"), headers=tenant.headers)
    assert response.status_code == 202
    assert response.json()["previousDocCount"] == 40
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded" and task["type"] == "documents.flush"
    assert task["details"]["previousDocCount"] == 40
    assert search(client, tenant, index["id"], q="")["total"] == 0
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 0
    upload(client, tenant, index["id"], products(3))
    assert search(client, tenant, index["id"], q="")["total"] == 3
    again = client.post(tenant.url(index["id"], "/documents/flush"), headers=tenant.headers).json()
    assert again["previousDocCount"] == 3


def test_idempotency_key(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    headers = {**tenant.headers, "Idempotency-Key": "batch-1"}
    first = client.post(url, json=products(3), headers=headers)
    second = client.post(url, json=products(3), headers=headers)
    assert first.status_code == second.status_code == 202
    assert first.json()["taskId"] == second.json()["taskId"]
    reused = client.post(url, json=products(4), headers=headers)
    assert reused.status_code == 409 and reused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    other = client.post(url, json=products(4), headers={**tenant.headers, "Idempotency-Key": "batch-2"})
    assert other.json()["taskId"] != first.json()["taskId"]
    delete_url = tenant.url(index["id"], "/documents/delete")
    d1 = client.post(delete_url, json=["p0"], headers=headers)
    d2 = client.post(delete_url, json=["p0"], headers=headers)
    assert d1.json()["taskId"] == d2.json()["taskId"]


def test_concurrent_uploads_all_land(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    errors = []

    def worker(n):
        try:
            upload(client, tenant, index["id"], products(50, start=n * 50), wait=False)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for task in client.get(tenant.tasks_url + "?limit=100", headers=tenant.headers).json()["items"]:
        assert wait_task(client, tenant.headers, tenant.project_id, task["taskId"])["status"] == "succeeded"
    assert search(client, tenant, index["id"], q="")["total"] == 400
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 400


def test_replace_session_commit(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(10))
    created = client.post(tenant.url(index["id"], "/replace-sessions"), headers=tenant.headers)
    assert created.status_code == 201, created.text
    session = created.json()
    assert session["status"] == "open" and session["documentCount"] == 0 and session["taskId"] is None
    surl = tenant.url(index["id"], f"/replace-sessions/{session['id']}")
    r = client.post(surl + "/documents", json=products(5, start=100), headers=tenant.headers)
    assert r.status_code == 200 and r.json() == {"received": 5, "documentCount": 5}
    r = client.post(surl + "/documents", json=products(5, start=103), headers=tenant.headers)
    assert r.json() == {"received": 5, "documentCount": 8}
    bad = client.post(surl + "/documents", json=[{"id": "x", "price": "free"}], headers=tenant.headers)
    assert bad.status_code == 400
    assert client.post(surl + "/documents", json=products(1001), headers=tenant.headers).status_code == 413
    # search still answers the old catalog
    assert search(client, tenant, index["id"], q="")["total"] == 10
    commit = client.post(surl + "/commit", headers=tenant.headers)
    assert commit.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, commit.json()["taskId"])
    assert task["status"] == "succeeded" and task["type"] == "replace.commit"
    got = client.get(surl, headers=tenant.read_headers).json()
    assert got["status"] == "committed" and got["taskId"] == task["taskId"]
    answer = search(client, tenant, index["id"], q="", perPage=100)
    assert sorted(h["id"] for h in answer["hits"]) == sorted(f"p{i}" for i in range(100, 108))
    assert client.get(tenant.url(index["id"], "/documents/p1"), headers=tenant.headers).status_code == 404
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 8
    # not open any more
    for action in ("/commit", "/abort"):
        response = client.post(surl + action, headers=tenant.headers)
        assert response.status_code == 409 and response.json()["error"]["code"] == "CONFLICT"
    assert client.post(surl + "/documents", json=products(1), headers=tenant.headers).status_code == 409
    # uploads after the swap apply on top
    upload(client, tenant, index["id"], products(2))
    assert search(client, tenant, index["id"], q="")["total"] == 10


def test_replace_session_with_mapping(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    mapping = {"idField": "sku", "fields": {"title": {"type": "text", "searchable": True}}}
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={"mapping": mapping}, headers=tenant.headers).json()
    assert session["mapping"] == mapping
    surl = tenant.url(index["id"], f"/replace-sessions/{session['id']}")
    assert client.post(surl + "/documents", json=[{"id": "x"}], headers=tenant.headers).status_code == 400
    assert client.post(surl + "/documents", json=[{"sku": "s1", "title": "blue kettle"}], headers=tenant.headers).status_code == 200
    task = wait_task(client, tenant.headers, tenant.project_id, client.post(surl + "/commit", headers=tenant.headers).json()["taskId"])
    assert task["status"] == "succeeded"
    assert search(client, tenant, index["id"], q="kettle")["hits"][0]["id"] == "s1"
    assert client.get(tenant.url(index["id"], "/mapping"), headers=tenant.headers).json() == mapping
    bad = client.post(tenant.url(index["id"], "/replace-sessions"), json={"mapping": {"fields": {"a": {"type": "?"}}}},
                      headers=tenant.headers)
    assert bad.status_code == 400


def test_replace_session_abort_and_expiry_keep_old_catalog(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(6))
    for ending in ("abort", "expire"):
        session = client.post(tenant.url(index["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
        surl = tenant.url(index["id"], f"/replace-sessions/{session['id']}")
        client.post(surl + "/documents", json=products(2, start=50), headers=tenant.headers)
        if ending == "abort":
            assert client.post(surl + "/abort", headers=tenant.headers).status_code == 204
            assert client.get(surl, headers=tenant.headers).json()["status"] == "aborted"
        else:
            with app.state.runtime.sessions.begin() as db:
                db.execute(update(ReplaceSession).where(ReplaceSession.id == session["id"])
                           .values(expires_at=utcnow() - timedelta(seconds=1)))
            assert client.get(surl, headers=tenant.headers).json()["status"] == "expired"
            assert client.post(surl + "/commit", headers=tenant.headers).status_code == 409
        answer = search(client, tenant, index["id"], q="", perPage=50)
        assert sorted(h["id"] for h in answer["hits"]) == sorted(f"p{i}" for i in range(6))
    assert client.get(tenant.url(index["id"], "/replace-sessions/rs_nope"), headers=tenant.headers).status_code == 404
    other = make_tenant(app)
    assert client.get(other.url(index["id"], f"/replace-sessions/{session['id']}"), headers=other.headers).status_code == 404


def test_upload_after_commit_request_lands_on_new_catalog(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(4))
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
    surl = tenant.url(index["id"], f"/replace-sessions/{session['id']}")
    client.post(surl + "/documents", json=products(3, start=10), headers=tenant.headers)
    with app.state.runtime.task_runner.paused():
        commit = client.post(surl + "/commit", headers=tenant.headers).json()["taskId"]
        late = upload(client, tenant, index["id"], [{"id": "late", "name": "late arrival"}], wait=False)["taskId"]
        committing = client.get(surl, headers=tenant.headers).json()
        assert committing["status"] == "committing" and committing["taskId"] == commit
    assert wait_task(client, tenant.headers, tenant.project_id, commit)["status"] == "succeeded"
    assert wait_task(client, tenant.headers, tenant.project_id, late)["status"] == "succeeded"
    answer = search(client, tenant, index["id"], q="", perPage=50)
    assert sorted(h["id"] for h in answer["hits"]) == sorted(["late", "p10", "p11", "p12"])


def test_delete_after_commit_request_stays_deleted_in_new_catalog(app, client):
    """A delete accepted after a replace commit (its swap still to come) applies on top of the new
    catalog, also to ids only that catalog holds: the swap must not bring them back."""
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(4))  # p0..p3
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={}, headers=tenant.headers).json()
    surl = tenant.url(index["id"], f"/replace-sessions/{session['id']}")
    client.post(surl + "/documents", json=products(4, start=2), headers=tenant.headers)  # p2..p5
    with app.state.runtime.task_runner.paused():
        commit = client.post(surl + "/commit", headers=tenant.headers).json()["taskId"]
        # p5 only in the new catalog, p3 in both, p0 only in the old one, nope in neither
        gone = client.post(tenant.url(index["id"], "/documents/delete"), json=["p5", "p3", "p0", "nope"],
                           headers=tenant.headers)
        assert gone.status_code == 202, gone.text
    assert wait_task(client, tenant.headers, tenant.project_id, commit)["status"] == "succeeded"
    deleted = wait_task(client, tenant.headers, tenant.project_id, gone.json()["taskId"])
    assert deleted["status"] == "succeeded" and deleted["details"]["deleted"] == 3, deleted
    answer = search(client, tenant, index["id"], q="", perPage=50)
    assert sorted(h["id"] for h in answer["hits"]) == ["p2", "p4"]
    for doc_id in ("p5", "p3", "p0"):
        assert client.get(tenant.url(index["id"], f"/documents/{doc_id}"), headers=tenant.headers).status_code == 404
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 2
    listed = client.get(tenant.url(index["id"], "/documents"), headers=tenant.headers).json()["items"]
    assert sorted(d["id"] for d in listed) == ["p2", "p4"]


def test_document_quota_counts_only_when_the_sequences_come_near_it(app, client, monkeypatch):
    """Uploads far below the quota skip the count; near it the count decides: new documents past
    the quota are refused, replacements of held ones still pass."""
    import dataclasses
    import sys

    from control_plane.document import repository, service
    from shared.plans import PLANS

    limits = dataclasses.replace(PLANS["free"], max_documents_per_index=6)
    monkeypatch.setattr(service, "plan_limits_for_project", lambda db, project_id: limits)
    counts = []
    real_count = repository.live_count

    def live_count(db, index_id):
        if sys._getframe(1).f_code.co_name == "_check_document_quota":  # the upload's, not the task's
            counts.append(index_id)
        return real_count(db, index_id)

    monkeypatch.setattr(repository, "live_count", live_count)
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/documents")
    upload(client, tenant, index["id"], products(4))
    assert counts == []  # 4 sequences handed out, quota 6: no count
    upload(client, tenant, index["id"], [{"id": f"p{i}", "name": "again"} for i in range(3)])
    assert counts  # 4 + 3 sequences > 6: counted (4 held, 0 new)
    over = client.post(url, json=[{"id": "n1"}, {"id": "n2"}, {"id": "n3"}], headers=tenant.headers)
    assert over.status_code == 403 and over.json()["error"]["code"] == "QUOTA_EXCEEDED"
    upload(client, tenant, index["id"], [{"id": "n1"}, {"id": "n2"}])  # exactly 6
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["documentCount"] == 6
