"""Projects: list and create in an organization, get by id (member or any secret key)."""

from __future__ import annotations

import pytest

from tests.factories import add_member, bearer, make_account, make_key, make_project
from tests.org.helpers import assert_error, unauthenticated_headers

AUTH_CASES = ["missing", "basic", "bearer-empty", "expired", "revoked-family", "revoked-key", "expired-key"]


def test_create_and_list_projects(app, client):
    owner = make_account(app)
    response = client.post(f"/v1/orgs/{owner.org_id}/projects", headers=owner.headers, json={"name": "  Main shop "})
    assert response.status_code == 201, response.text
    project = response.json()
    assert set(project) == {"id", "orgId", "name", "createdAt"}
    assert project["id"].startswith("prj_") and project["orgId"] == owner.org_id and project["name"] == "Main shop"
    listed = client.get(f"/v1/orgs/{owner.org_id}/projects", headers=owner.headers).json()
    assert listed == {"items": [project], "nextCursor": None}
    assert client.get(f"/v1/projects/{project['id']}", headers=owner.headers).json() == project


def test_list_projects_paginates_and_member_can_list(app, client):
    owner = make_account(app)
    ids = [make_project(app, owner) for _ in range(5)]
    member = add_member(app, owner, "member")
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        body = client.get(f"/v1/orgs/{owner.org_id}/projects", headers=member.headers, params=params).json()
        seen += [p["id"] for p in body["items"]]
        cursor = body["nextCursor"]
        if not cursor:
            break
    assert seen == ids  # oldest first, each once


def test_duplicate_project_name_409(app, client):
    owner = make_account(app)
    url = f"/v1/orgs/{owner.org_id}/projects"
    assert client.post(url, headers=owner.headers, json={"name": "shop"}).status_code == 201
    assert_error(client.post(url, headers=owner.headers, json={"name": "shop"}), 409, "CONFLICT")
    assert_error(client.post(url, headers=owner.headers, json={"name": " shop "}), 409, "CONFLICT")
    # the same name in another organization is fine
    other = make_account(app)
    assert client.post(f"/v1/orgs/{other.org_id}/projects", headers=other.headers,
                       json={"name": "shop"}).status_code == 201


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "   "}, {"name": 5}, {"name": "x" * 201},
                                  {"name": None}, ["shop"], {"name": "a", "extra": 1}])
def test_create_project_bad_input(app, client, body):
    owner = make_account(app)
    assert_error(client.post(f"/v1/orgs/{owner.org_id}/projects", headers=owner.headers, json=body),
                 400, "VALIDATION_ERROR")


def test_create_project_malformed_json(app, client):
    owner = make_account(app)
    response = client.post(f"/v1/orgs/{owner.org_id}/projects", content=b'{"name": "x"',
                           headers={**owner.headers, "Content-Type": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR")


def test_create_project_needs_admin(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    admin = add_member(app, owner, "admin")
    url = f"/v1/orgs/{owner.org_id}/projects"
    assert_error(client.post(url, headers=member.headers, json={"name": "m"}), 403, "FORBIDDEN")
    assert client.post(url, headers=admin.headers, json={"name": "a"}).status_code == 201


def test_projects_of_other_tenant_404(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner)
    stranger = make_account(app)
    stranger_project = make_project(app, stranger)
    assert_error(client.get(f"/v1/orgs/{stranger.org_id}/projects", headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.post(f"/v1/orgs/{stranger.org_id}/projects", headers=owner.headers, json={"name": "x"}),
                 404, "NOT_FOUND")
    assert_error(client.get(f"/v1/projects/{stranger_project}", headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.get("/v1/projects/prj_unknown", headers=owner.headers), 404, "NOT_FOUND")
    # a key of one tenant can't read another tenant's project
    assert_error(client.get(f"/v1/projects/{stranger_project}", headers=bearer(make_key(app, project_id))),
                 404, "NOT_FOUND")


def test_get_project_with_secret_keys(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner, name="Keyed")
    for access in ("read", "full"):
        response = client.get(f"/v1/projects/{project_id}", headers=bearer(make_key(app, project_id, access=access)))
        assert response.status_code == 200
        assert response.json()["name"] == "Keyed"
    member = add_member(app, owner, "member")
    assert client.get(f"/v1/projects/{project_id}", headers=member.headers).status_code == 200


def test_public_key_on_project_routes_403(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner)
    key = make_key(app, project_id, key_type="public", access=None, allowed_origins=["https://a.io"])
    headers = {**bearer(key), "Origin": "https://a.io"}
    assert_error(client.get(f"/v1/projects/{project_id}", headers=headers), 403, "FORBIDDEN")
    assert_error(client.get(f"/v1/orgs/{owner.org_id}/projects", headers=headers), 403, "FORBIDDEN")
    assert_error(client.post(f"/v1/orgs/{owner.org_id}/projects", headers=headers, json={"name": "x"}),
                 403, "FORBIDDEN")


def test_secret_key_on_org_project_routes_403(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner)
    headers = bearer(make_key(app, project_id))
    assert_error(client.get(f"/v1/orgs/{owner.org_id}/projects", headers=headers), 403, "FORBIDDEN")
    assert_error(client.post(f"/v1/orgs/{owner.org_id}/projects", headers=headers, json={"name": "x"}),
                 403, "FORBIDDEN")


@pytest.mark.parametrize("case", AUTH_CASES)
def test_project_routes_refuse_bad_credentials(app, client, case):
    owner = make_account(app)
    project_id = make_project(app, owner)
    headers = unauthenticated_headers(app, owner, project_id)[case]
    for method, url, body in [
        ("GET", f"/v1/orgs/{owner.org_id}/projects", None),
        ("POST", f"/v1/orgs/{owner.org_id}/projects", {"name": "x"}),
        ("GET", f"/v1/projects/{project_id}", None),
    ]:
        assert_error(client.request(method, url, headers=headers, json=body), 401, "UNAUTHENTICATED")
