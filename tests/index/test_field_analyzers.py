"""A mapping field's ``analyzer`` over the API: applied when indexing and searching, changed by a
mapping update (a rebuild), refused with its path where it would do nothing."""

from __future__ import annotations

from typing import Any

from tests.index.helpers import make_tenant, upload, wait_task

EXACT = {"weight": 1, "typo": False, "prefix": False}


def mapping(name_analyzer: str | None) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "text", "searchable": True}
    if name_analyzer is not None:
        name["analyzer"] = name_analyzer
    return {"idField": "id", "fields": {"name": name, "description": {"type": "text", "searchable": True}}}


def hits(client, tenant, index_id: str, q: str, field: str) -> list[str]:
    body = {"q": q, "profile": {"queryFields": {field: EXACT}, "typoTolerance": {"enabled": False}}}
    response = client.post(tenant.url(index_id, "/search"), json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    return sorted(h["id"] for h in response.json()["hits"])


def test_plain_field_is_not_stemmed_until_the_mapping_changes(app, client):
    tenant = make_tenant(app)
    created = client.post(tenant.url(), json={"name": "shoes", "mapping": mapping("plain")}, headers=tenant.headers)
    assert created.status_code == 201, created.text
    index_id = created.json()["id"]
    upload(client, tenant, index_id, [
        {"id": "a", "name": "Running shoes", "description": "Running shoes"},
        {"id": "b", "name": "Häuser", "description": "Häuser"},
    ])
    assert client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers).json() == mapping("plain")
    assert hits(client, tenant, index_id, "runs", "name") == []
    assert hits(client, tenant, index_id, "running", "name") == ["a"]
    assert hits(client, tenant, index_id, "runs", "description") == ["a"]

    # another analyzer is a mapping change: a rebuild, after which the field stems (German here)
    response = client.put(tenant.url(index_id, "/mapping"), json=mapping("de"), headers=tenant.headers)
    assert response.status_code == 202, response.text
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded" and task["type"] == "mapping.update"
    assert hits(client, tenant, index_id, "Haus", "name") == ["b"]
    assert hits(client, tenant, index_id, "Haus", "description") == []  # still English

    response = client.put(tenant.url(index_id, "/mapping"), json=mapping(None), headers=tenant.headers)
    assert response.status_code == 202
    assert wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])["status"] == "succeeded"
    assert hits(client, tenant, index_id, "runs", "name") == ["a"]


def test_analyzers_that_would_do_nothing_are_refused_with_their_path(app, client):
    tenant = make_tenant(app)
    cases = [
        ({"type": "text", "searchable": True, "analyzer": "standard"}, "fields.f.analyzer"),
        ({"type": "text", "searchable": True, "analyzer": "english"}, "fields.f.analyzer"),
        ({"type": "float", "sortable": True, "analyzer": "en"}, "fields.f.analyzer"),
        ({"type": "keyword", "filterable": True, "analyzer": "plain"}, "fields.f.analyzer"),
    ]
    ok = client.post(tenant.url(), json={"name": "ok", "mapping": mapping(None)}, headers=tenant.headers)
    assert ok.status_code == 201
    for spec, path in cases:
        body = {"idField": "id", "fields": {"f": spec}}
        created = client.post(tenant.url(), json={"name": "x", "mapping": body}, headers=tenant.headers)
        assert created.status_code == 400, spec
        error = created.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert [d["path"] for d in error["details"]] == ["mapping." + path]
        put = client.put(tenant.url(ok.json()["id"], "/mapping"), json=body, headers=tenant.headers)
        assert put.status_code == 400, spec
        assert put.json()["error"]["code"] == "VALIDATION_ERROR"
        assert [d["path"] for d in put.json()["error"]["details"]] == [path]
    assert client.get(tenant.url(ok.json()["id"], "/mapping"), headers=tenant.headers).json() == mapping(None)
