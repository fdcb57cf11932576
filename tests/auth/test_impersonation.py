"""Impersonation: the operator CLI's one-time code, the session it opens, and what it may not do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from cli.main import app as cli_app
from control_plane.auth import repository
from control_plane.auth.models import ImpersonationCode
from shared.settings import get_settings
from tests.auth.helpers import PASSWORD, bearer, code_of, new_client, runtime_of
from tests.factories import make_account


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
    assert result.stdout == ""


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
