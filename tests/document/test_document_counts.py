"""The live document count kept by the writes (control_plane.document.models.DocumentCount): exact
through uploads that replace held documents, deletes, re-uploads of deleted ids, flushes and replace
commits, and read by the document tasks instead of counting the rows."""

from sqlalchemy import delete, select

from control_plane.document import repository
from control_plane.document.models import DocumentCount
from tests.index.helpers import create_index, make_tenant, products, upload, wait_task


def _counts(app, client, tenant, index_id):
    """(documentCount answered, kept count, rows counted)."""
    with app.state.runtime.sessions() as db:
        kept = db.scalar(select(DocumentCount.live).where(DocumentCount.index_id == index_id))
        rows = repository.count_live_rows(db, index_id)
    return client.get(tenant.url(index_id), headers=tenant.headers).json()["documentCount"], kept, rows


def _delete(client, tenant, index_id, ids):
    response = client.post(tenant.url(index_id, "/documents/delete"), json=ids, headers=tenant.headers)
    assert response.status_code == 202, response.text
    return wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])


def test_kept_count_follows_every_write(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    iid = index["id"]
    upload(client, tenant, iid, products(10))
    assert _counts(app, client, tenant, iid) == (10, 10, 10)
    # 5 held ids replaced, 3 new (one twice in the batch: last wins)
    upload(client, tenant, iid, products(8, start=5) + [{"id": "p12", "name": "again"}])
    assert _counts(app, client, tenant, iid) == (13, 13, 13)
    assert _delete(client, tenant, iid, ["p0", "p1", "missing", "p1"])["details"]["deleted"] == 2
    assert _counts(app, client, tenant, iid) == (11, 11, 11)
    assert _delete(client, tenant, iid, ["p0"])["details"]["deleted"] == 0  # already a tombstone
    assert _counts(app, client, tenant, iid) == (11, 11, 11)
    upload(client, tenant, iid, products(2))  # p0, p1 come back from their tombstones
    assert _counts(app, client, tenant, iid) == (13, 13, 13)
    flushed = client.post(tenant.url(iid, "/documents/flush"), headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, flushed.json()["taskId"])["status"] == "succeeded"
    assert _counts(app, client, tenant, iid) == (0, 0, 0)
    upload(client, tenant, iid, products(4))
    assert _counts(app, client, tenant, iid) == (4, 4, 4)
    session = client.post(tenant.url(iid, "/replace-sessions"), headers=tenant.headers).json()
    surl = tenant.url(iid, f"/replace-sessions/{session['id']}")
    assert client.post(surl + "/documents", json=products(7, start=2), headers=tenant.headers).status_code == 200
    commit = client.post(surl + "/commit", headers=tenant.headers)
    assert wait_task(client, tenant.headers, tenant.project_id, commit.json()["taskId"])["status"] == "succeeded"
    assert _counts(app, client, tenant, iid) == (7, 7, 7)
    upload(client, tenant, iid, products(3, start=8))  # p8 held, p9 and p10 new
    assert _counts(app, client, tenant, iid) == (9, 9, 9)
    assert _delete(client, tenant, iid, ["p2", "p10"])["details"]["deleted"] == 2
    assert _counts(app, client, tenant, iid) == (7, 7, 7)


def test_document_tasks_read_the_kept_count(app, client, monkeypatch):
    """Once an index has a kept count, neither its uploads and deletes nor their tasks count rows."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    iid = index["id"]
    upload(client, tenant, iid, products(5))  # the index's first write starts its kept count
    counted = []
    real = repository.count_live_rows

    def count_live_rows(db, index_id):
        counted.append(index_id)
        return real(db, index_id)

    monkeypatch.setattr(repository, "count_live_rows", count_live_rows)
    upload(client, tenant, iid, products(5, start=3))
    _delete(client, tenant, iid, ["p0", "p6"])
    assert counted == []
    monkeypatch.setattr(repository, "count_live_rows", real)
    assert _counts(app, client, tenant, iid) == (6, 6, 6)


def test_an_index_without_a_kept_count_is_counted(app, client):
    """Rows written before the kept count existed: read and the next write count them."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    iid = index["id"]
    upload(client, tenant, iid, products(6))
    with app.state.runtime.sessions.begin() as db:
        db.execute(delete(DocumentCount).where(DocumentCount.index_id == iid))
    with app.state.runtime.sessions() as db:
        assert repository.live_count(db, iid) == 6
    upload(client, tenant, iid, products(3, start=4))  # p4, p5 held, p6 new
    assert _counts(app, client, tenant, iid) == (7, 7, 7)
