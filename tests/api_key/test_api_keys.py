"""API keys (spec 4.10): managed only from a signed-in session; shown once; revoked at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from control_plane.api_key.models import ApiKey
from control_plane.security import hash_token
from tests.factories import add_member, bearer, make_account, make_key, make_project, runtime_of
from tests.org.helpers import assert_error, impersonated, unauthenticated_headers

AUTH_CASES = ["missing", "basic", "bearer-empty", "bearer-two-parts", "forged", "expired", "revoked-family",
              "unknown-key", "revoked-key", "expired-key"]
RECORD_FIELDS = {"id", "type", "name", "access", "indexId", "allowedOrigins", "prefix", "createdAt", "lastUsedAt",
                 "expiresAt"}
SECRET = {"type": "secret", "name": "backend", "access": "full"}
PUBLIC = {"type": "public", "name": "storefront", "allowedOrigins": ["https://shop.example.com"]}


def keys_url(project_id: str, key_id: str | None = None) -> str:
    return f"/v1/projects/{project_id}/api-keys" + (f"/{key_id}" if key_id else "")


def setup(app):  # type: ignore[no-untyped-def]
    owner = make_account(app)
    return owner, make_project(app, owner)


def test_create_secret_key_works_at_once_and_stops_at_once(app, client):
    owner, project_id = setup(app)
    response = client.post(keys_url(project_id), headers=owner.headers, json=SECRET)
    assert response.status_code == 201, response.text
    created = response.json()
    assert set(created) == RECORD_FIELDS | {"key"}
    assert created["type"] == "secret" and created["access"] == "full" and created["indexId"] is None
    assert created["allowedOrigins"] == [] and created["expiresAt"] is None and created["lastUsedAt"] is None
    raw = created["key"]
    assert raw.startswith("ss_sk_") and raw.startswith(created["prefix"]) and len(created["prefix"]) < len(raw)
    # stored only as a hash
    with runtime_of(app).sessions() as db:
        row = db.scalar(select(ApiKey).where(ApiKey.id == created["id"]))
        assert row is not None and row.key_hash == hash_token(raw) and raw not in (row.prefix, row.key_hash)
    # works right away
    assert client.get(f"/v1/projects/{project_id}", headers=bearer(raw)).status_code == 200
    # listed without the key
    listed = client.get(keys_url(project_id), headers=owner.headers).json()
    assert listed["nextCursor"] is None
    assert [k["id"] for k in listed["items"]] == [created["id"]]
    assert set(listed["items"][0]) == RECORD_FIELDS
    # revoked: stops at once (through Redis on the postgres backend) and leaves the list
    response = client.delete(keys_url(project_id, created["id"]), headers=owner.headers)
    assert response.status_code == 204 and response.content == b""
    assert_error(client.get(f"/v1/projects/{project_id}", headers=bearer(raw)), 401, "UNAUTHENTICATED")
    assert client.get(keys_url(project_id), headers=owner.headers).json()["items"] == []
    assert_error(client.delete(keys_url(project_id, created["id"]), headers=owner.headers), 404, "NOT_FOUND")
    with runtime_of(app).sessions() as db:
        assert db.get(ApiKey, created["id"]).revoked_at is not None


def test_revocation_reaches_other_instances(pg_database, mailbox, tmp_path):
    """Two API instances on PostgreSQL + Redis (each its own key cache): a key revoked through one
    stops working on the other at once. (The embedded default is a single process.)"""
    from fastapi.testclient import TestClient

    from control_plane.app import create_app
    from control_plane.migrate import upgrade
    from tests.conftest import make_settings

    settings = make_settings("postgres", tmp_path, mailbox, pg_database, run_task_runner=False)
    upgrade(settings)
    app = create_app(settings)
    other = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client, \
            TestClient(other, raise_server_exceptions=False) as other_client:
        owner, project_id = setup(app)
        created = client.post(keys_url(project_id), headers=owner.headers, json=SECRET).json()
        assert other_client.get(f"/v1/projects/{project_id}", headers=bearer(created["key"])).status_code == 200
        assert client.delete(keys_url(project_id, created["id"]), headers=owner.headers).status_code == 204
        response = other_client.get(f"/v1/projects/{project_id}", headers=bearer(created["key"]))
        assert_error(response, 401, "UNAUTHENTICATED")


def test_read_key_and_expiry(app, client):
    owner, project_id = setup(app)
    expires = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    created = client.post(keys_url(project_id), headers=owner.headers,
                          json={"type": "secret", "name": "reader", "access": "read", "expiresAt": expires}).json()
    assert created["access"] == "read"
    assert created["expiresAt"].endswith("Z")
    assert abs(datetime.fromisoformat(created["expiresAt"]) - datetime.fromisoformat(expires)) < timedelta(seconds=1)
    assert client.get(f"/v1/projects/{project_id}", headers=bearer(created["key"])).status_code == 200


def test_create_public_key(app, client):
    owner, project_id = setup(app)
    body = {"type": "public", "name": "web",
            "allowedOrigins": ["https://Shop.Example.com/", "https://*.example.com", "http://localhost:3000",
                               "https://shop.example.com"]}
    response = client.post(keys_url(project_id), headers=owner.headers, json=body)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["type"] == "public" and created["access"] is None and created["indexId"] is None
    assert created["allowedOrigins"] == ["https://shop.example.com", "https://*.example.com", "http://localhost:3000"]
    assert created["key"].startswith("ss_pk_")
    # a public key can't manage anything
    headers = {**bearer(created["key"]), "Origin": "https://shop.example.com"}
    assert_error(client.get(f"/v1/projects/{project_id}", headers=headers), 403, "FORBIDDEN")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "type"),
        ({"type": "secret", "access": "full"}, "name"),
        ({"type": "secret", "name": "x"}, "access"),
        ({"type": "secret", "name": "x", "access": "admin"}, "access"),
        ({"type": "master", "name": "x"}, "type"),
        ({"type": "secret", "name": "", "access": "full"}, "name"),
        ({"type": "secret", "name": 3, "access": "full"}, "name"),
        ({"type": "secret", "name": "x", "access": "full", "allowedOrigins": ["https://a.io"]}, "allowedOrigins"),
        ({"type": "secret", "name": "x", "access": "full", "expiresAt": "tomorrow"}, "expiresAt"),
        ({"type": "secret", "name": "x", "access": "full", "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
        ({"type": "secret", "name": "x", "access": "full", "unknown": 1}, "unknown"),
        ({"type": "public", "name": "x"}, "allowedOrigins"),
        ({"type": "public", "name": "x", "allowedOrigins": []}, "allowedOrigins"),
        ({"type": "public", "name": "x", "allowedOrigins": "https://a.io"}, "allowedOrigins"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.io"], "access": "read"}, "access"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.io"], "indexId": "idx_1"}, "indexId"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.io", "a.io"]}, "allowedOrigins[1]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.io/path"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["ftp://a.io"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://*"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://*.com"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.*.com"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["https://a.io:99999"]}, "allowedOrigins[0]"),
        ({"type": "public", "name": "x", "allowedOrigins": ["*"]}, "allowedOrigins[0]"),
    ],
)
def test_create_key_bad_input(app, client, body, path):
    owner, project_id = setup(app)
    error = assert_error(client.post(keys_url(project_id), headers=owner.headers, json=body), 400, "VALIDATION_ERROR")
    assert path in [d["path"] for d in error["error"]["details"]], error


def test_create_key_malformed_json(app, client):
    owner, project_id = setup(app)
    response = client.post(keys_url(project_id), content=b'{"type": "secret",',
                           headers={**owner.headers, "Content-Type": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR")


def test_create_key_needs_verified_email(app, client):
    owner = make_account(app, verified=False)
    project_id = make_project(app, owner)
    assert_error(client.post(keys_url(project_id), headers=owner.headers, json=SECRET), 403, "EMAIL_NOT_VERIFIED")
    assert client.get(keys_url(project_id), headers=owner.headers).json()["items"] == []


def test_create_key_forbidden_while_impersonating(app, client):
    owner, project_id = setup(app)
    headers = impersonated(app, owner)
    assert_error(client.post(keys_url(project_id), headers=headers, json=SECRET), 403, "IMPERSONATION_FORBIDDEN")
    assert client.get(keys_url(project_id), headers=headers).status_code == 200


def test_roles(app, client):
    owner, project_id = setup(app)
    member = add_member(app, owner, "member")
    admin = add_member(app, owner, "admin")
    assert client.get(keys_url(project_id), headers=member.headers).status_code == 200
    assert_error(client.post(keys_url(project_id), headers=member.headers, json=SECRET), 403, "FORBIDDEN")
    created = client.post(keys_url(project_id), headers=admin.headers, json=SECRET)
    assert created.status_code == 201
    key_id = created.json()["id"]
    assert_error(client.delete(keys_url(project_id, key_id), headers=member.headers), 403, "FORBIDDEN")
    assert client.delete(keys_url(project_id, key_id), headers=admin.headers).status_code == 204


def test_keys_cannot_manage_keys(app, client):
    owner, project_id = setup(app)
    full = make_key(app, project_id, access="full")
    public = make_key(app, project_id, key_type="public", access=None, allowed_origins=["https://a.io"])
    victim = client.post(keys_url(project_id), headers=owner.headers, json=SECRET).json()
    for raw in (full, public):
        headers = {**bearer(raw), "Origin": "https://a.io"}
        assert_error(client.get(keys_url(project_id), headers=headers), 403, "FORBIDDEN")
        assert_error(client.post(keys_url(project_id), headers=headers, json=SECRET), 403, "FORBIDDEN")
        assert_error(client.delete(keys_url(project_id, victim["id"]), headers=headers), 403, "FORBIDDEN")
    assert client.get(f"/v1/projects/{project_id}", headers=bearer(victim["key"])).status_code == 200


def test_other_tenant_ids_404(app, client):
    owner, project_id = setup(app)
    other_project = make_project(app, owner)
    stranger, stranger_project = setup(app)
    foreign = client.post(keys_url(stranger_project), headers=stranger.headers, json=SECRET).json()
    sibling = client.post(keys_url(other_project), headers=owner.headers, json=SECRET).json()
    # another tenant's project
    assert_error(client.get(keys_url(stranger_project), headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.post(keys_url(stranger_project), headers=owner.headers, json=SECRET), 404, "NOT_FOUND")
    assert_error(client.delete(keys_url(stranger_project, foreign["id"]), headers=owner.headers), 404, "NOT_FOUND")
    # another project's key id through one's own project
    assert_error(client.delete(keys_url(project_id, foreign["id"]), headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.delete(keys_url(project_id, sibling["id"]), headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.delete(keys_url(project_id, "key_unknown"), headers=owner.headers), 404, "NOT_FOUND")
    # nothing was revoked
    assert client.get(f"/v1/projects/{stranger_project}", headers=bearer(foreign["key"])).status_code == 200
    assert client.get(f"/v1/projects/{other_project}", headers=bearer(sibling["key"])).status_code == 200


@pytest.mark.parametrize("case", AUTH_CASES)
def test_key_routes_refuse_bad_credentials(app, client, case):
    owner, project_id = setup(app)
    key_id = client.post(keys_url(project_id), headers=owner.headers, json=SECRET).json()["id"]
    headers = unauthenticated_headers(app, owner, project_id)[case]
    for method, url, body in [
        ("GET", keys_url(project_id), None),
        ("POST", keys_url(project_id), SECRET),
        ("DELETE", keys_url(project_id, key_id), None),
    ]:
        assert_error(client.request(method, url, headers=headers, json=body), 401, "UNAUTHENTICATED")


def test_list_keys_paginates(app, client):
    owner, project_id = setup(app)
    ids = [client.post(keys_url(project_id), headers=owner.headers, json=SECRET | {"name": f"k{i}"}).json()["id"]
           for i in range(5)]
    first = client.get(keys_url(project_id), headers=owner.headers, params={"limit": 4}).json()
    second = client.get(keys_url(project_id), headers=owner.headers,
                        params={"limit": 4, "cursor": first["nextCursor"]}).json()
    assert [k["id"] for k in first["items"] + second["items"]] == ids
    assert second["nextCursor"] is None
    assert_error(client.get(keys_url(project_id), headers=owner.headers, params={"limit": 0}), 400, "VALIDATION_ERROR")


def _make_index(app, project_id: str) -> str:  # type: ignore[no-untyped-def]
    from control_plane.index.models import Index

    index_id = f"idx_{project_id[-8:]}"
    with runtime_of(app).sessions.begin() as db:
        db.add(Index(id=index_id, project_id=project_id, name="products", mapping={}, serving_mapping={}))
    return index_id


def test_index_scoped_key(app, client):
    owner, project_id = setup(app)
    assert_error(client.post(keys_url(project_id), headers=owner.headers, json=SECRET | {"indexId": "idx_nope"}),
                 404, "NOT_FOUND")
    index_id = _make_index(app, project_id)
    created = client.post(keys_url(project_id), headers=owner.headers, json=SECRET | {"indexId": index_id})
    assert created.status_code == 201, created.text
    assert created.json()["indexId"] == index_id
    # an index of another project can't be named
    other_project = make_project(app, owner)
    assert_error(client.post(keys_url(other_project), headers=owner.headers, json=SECRET | {"indexId": index_id}),
                 404, "NOT_FOUND")
