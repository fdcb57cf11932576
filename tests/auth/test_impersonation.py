"""Impersonation: the operator CLI's one-time code, the session it opens, and what it may not do."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from cli.main import app as cli_app
from control_plane.auth import repository
from control_plane.auth.models import ImpersonationCode
from control_plane.org.models import Membership
from shared.settings import get_settings
from tests.auth.helpers import PASSWORD, bearer, code_of, new_client, runtime_of
from tests.factories import make_account, make_project, sign_in
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant


@pytest.fixture
def issue_code(app) -> Iterator:  # type: ignore[no-untyped-def]
    """Runs ``shopsearch support impersonation-code ORG_ID`` against this backend's database."""
    url = runtime_of(app).settings.resolved_database_url

    def run(org_id: str, *extra: str):  # type: ignore[no-untyped-def]
        get_settings.cache_clear()
        try:
            return CliRunner().invoke(
                cli_app, ["support", "impersonation-code", org_id, *extra], env={"SHOPSEARCH_DATABASE_URL": url}
            )
        finally:
            get_settings.cache_clear()

    yield run


def _code(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 0, result.output
    return str(result.stdout.strip().splitlines()[0])


def test_impersonation_end_to_end(app, issue_code):
    owner = make_account(app)
    code = _code(issue_code(owner.org_id, "--by", "alice"))
    client = new_client(app)

    response = client.post("/v1/auth/impersonate", json={"code": code})
    assert response.status_code == 200
    body = response.json()
    assert body["tokenType"] == "Bearer"
    assert body["expiresIn"] == runtime_of(app).settings.impersonation_ttl_seconds
    assert body["user"]["id"] == owner.user_id
    assert "set-cookie" not in response.headers
    token = body["accessToken"]

    me = client.get("/v1/auth/me", headers=bearer(token)).json()
    assert me["id"] == owner.user_id
    assert me["impersonation"]["by"] == "support:alice"
    assert me["impersonation"]["expiresAt"].endswith("Z")

    change = client.post(
        "/v1/auth/change-password", json={"currentPassword": PASSWORD, "newPassword": "a brand new password"},
        headers=bearer(token),
    )
    assert change.status_code == 403
    assert code_of(change) == "IMPERSONATION_FORBIDDEN"
    end = client.delete(f"/v1/auth/sessions/{owner.family_id}", headers=bearer(token))
    assert end.status_code == 403
    assert code_of(end) == "IMPERSONATION_FORBIDDEN"
    # The owner's own session is untouched and shows the support session.
    assert client.get("/v1/auth/me", headers=owner.headers).json()["impersonation"] is None
    assert len(client.get("/v1/auth/sessions", headers=owner.headers).json()["items"]) == 2

    assert client.post("/v1/auth/impersonation/exit", headers=bearer(token)).status_code == 204
    dead = client.get("/v1/auth/me", headers=bearer(token))
    assert dead.status_code == 401
    assert code_of(dead) == "UNAUTHENTICATED"
    assert client.get("/v1/auth/me", headers=owner.headers).status_code == 200

    reused = client.post("/v1/auth/impersonate", json={"code": code})
    assert reused.status_code == 401
    assert code_of(reused) == "UNAUTHENTICATED"


def test_cli_refuses_an_unknown_organization(issue_code):
    result = issue_code("org_does_not_exist")
    assert result.exit_code == 1
    assert result.stdout == "" and result.stderr.startswith("error:")


def test_cli_prints_the_code_as_json(app, issue_code):
    owner = make_account(app)
    result = issue_code(owner.org_id, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["expiresInSeconds"] == 600
    assert new_client(app).post("/v1/auth/impersonate", json={"code": answer["code"]}).status_code == 200


def test_only_the_codes_hash_is_stored(app, issue_code):
    owner = make_account(app)
    code = _code(issue_code(owner.org_id))
    with runtime_of(app).sessions() as db:
        assert repository.consume_impersonation_code(db, code + "x") is None
        hashes = db.scalars(select(ImpersonationCode.code_hash).where(ImpersonationCode.org_id == owner.org_id)).all()
    assert len(hashes) == 1
    assert code not in hashes[0]


def test_unknown_and_expired_codes(app):
    owner = make_account(app)
    with runtime_of(app).sessions.begin() as db:
        expired = repository.add_impersonation_code(db, owner.org_id, "support:bob", -1)
    client = new_client(app)
    for code in ("nope", expired):
        response = client.post("/v1/auth/impersonate", json={"code": code})
        assert response.status_code == 401
        assert code_of(response) == "UNAUTHENTICATED"
    assert code_of(client.post("/v1/auth/impersonate", json={})) == "VALIDATION_ERROR"


def test_exit_outside_an_impersonation_is_forbidden(app):
    owner = make_account(app)
    response = new_client(app).post("/v1/auth/impersonation/exit", headers=owner.headers)
    assert response.status_code == 403
    assert code_of(response) == "FORBIDDEN"
    assert new_client(app).get("/v1/auth/me", headers=owner.headers).status_code == 200


def test_impersonation_reaches_only_the_organization_of_its_code(app, issue_code):
    """The owner of A is an admin of B: an impersonation of A must not list, read or write B (404)."""
    owner_a = make_account(app, org_name="A")
    shop_b = make_tenant(app)
    client = new_client(app)
    index_b = create_index(client, shop_b)["id"]
    profile_b = client.post(shop_b.url(index_b, "/profiles"), headers=shop_b.headers,
                            json={"name": "web", "queryFields": {"name": {"weight": 1}}}).json()
    key_b = client.get(f"/v1/projects/{shop_b.project_id}/api-keys", headers=shop_b.account.headers).json()["items"][0]
    org_b, project_b = shop_b.account.org_id, shop_b.project_id
    with runtime_of(app).sessions.begin() as db:
        db.add(Membership(org_id=org_b, user_id=owner_a.user_id, role="admin"))
    project_a = make_project(app, owner_a)

    token = client.post("/v1/auth/impersonate", json={"code": _code(issue_code(owner_a.org_id))}).json()["accessToken"]
    support = bearer(token)

    assert [o["id"] for o in client.get("/v1/orgs", headers=support).json()["items"]] == [owner_a.org_id]
    assert {o["id"] for o in client.get("/v1/orgs", headers=owner_a.headers).json()["items"]} == {owner_a.org_id, org_b}
    index_url = f"/v1/projects/{project_b}/indices/{index_b}"
    routes_of_b = [
        ("GET", f"/v1/orgs/{org_b}", None),
        ("GET", f"/v1/orgs/{org_b}/members", None),
        ("GET", f"/v1/orgs/{org_b}/projects", None),
        ("POST", f"/v1/orgs/{org_b}/projects", {"name": "sneaky"}),
        ("GET", f"/v1/projects/{project_b}", None),
        ("GET", f"/v1/projects/{project_b}/indices", None),
        ("POST", f"/v1/projects/{project_b}/indices", {"name": "sneaky", "mapping": PRODUCT_MAPPING}),
        ("GET", index_url, None),
        ("PUT", index_url + "/facets", {"facets": []}),
        ("POST", index_url + "/documents", {"documents": [{"id": "x", "name": "sneaky"}]}),
        ("POST", index_url + "/search", {"q": ""}),
        ("GET", f"{index_url}/profiles/{profile_b['id']}", None),
        ("GET", f"/v1/projects/{project_b}/tasks", None),
        ("GET", f"/v1/projects/{project_b}/api-keys", None),
        ("DELETE", f"/v1/projects/{project_b}/api-keys/{key_b['id']}", None),
    ]
    for method, url, body in routes_of_b:
        response = client.request(method, url, headers=support, json=body)
        assert response.status_code == 404, (method, url, response.text)
        assert code_of(response) == "NOT_FOUND", (method, url)
    # the owner's own session, an admin of B, reaches every one of those routes
    for method, url, _body in routes_of_b:
        if method == "GET":
            assert client.get(url, headers=owner_a.headers).status_code == 200, url
    assert client.get(f"/v1/projects/{project_b}/indices", headers=owner_a.headers).json()["items"][0]["id"] == index_b
    # the storefront refuses a session with 404 for a handle outside the impersonated organization
    storefront = client.post(f"/v1/search/{profile_b['profileKey']}", headers=support, json={"q": ""})
    assert storefront.status_code == 404 and code_of(storefront) == "NOT_FOUND"

    # organization A still works, reads and writes
    assert client.get(f"/v1/orgs/{owner_a.org_id}", headers=support).status_code == 200
    assert client.get(f"/v1/projects/{project_a}", headers=support).status_code == 200
    created = client.post(f"/v1/orgs/{owner_a.org_id}/projects", headers=support, json={"name": "by support"})
    assert created.status_code == 201, created.text
    assert client.post(f"/v1/projects/{project_a}/indices", headers=support,
                       json={"name": "p", "mapping": PRODUCT_MAPPING}).status_code == 201


def test_an_impersonation_without_an_organization_is_refused(app):
    """Sessions opened before scopes were recorded carry none: they reach nothing (401)."""
    owner = make_account(app)
    token, _ = sign_in(app, owner.user_id, impersonated_by="support:alice")
    response = new_client(app).get("/v1/orgs", headers=bearer(token))
    assert response.status_code == 401
    assert code_of(response) == "UNAUTHENTICATED"
