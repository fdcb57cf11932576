"""login, me, access-token checks and the per-email / per-IP failure limits."""

from __future__ import annotations

from limits import parse

from control_plane.security import issue_access_token
from tests.auth.helpers import (
    PASSWORD,
    bearer,
    code_of,
    login,
    new_client,
    register,
    runtime_of,
    signed_up,
    unique_email,
)


def test_login_answers_tokens_and_sets_the_refresh_cookie(app):
    client = new_client(app)
    email = register(client, name="Grace")
    response = login(client, email.upper())
    assert response.status_code == 200
    body = response.json()
    assert body["tokenType"] == "Bearer"
    assert body["expiresIn"] == runtime_of(app).settings.access_token_ttl_seconds
    assert body["accessToken"]
    assert body["user"]["email"] == email
    assert body["user"]["name"] == "Grace"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("shopsearch_refresh=")
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/v1/auth"} <= attributes
    assert ("secure" in attributes) == runtime_of(app).settings.cookie_secure


def test_me(app):
    client, email, token = signed_up(app)
    response = client.get("/v1/auth/me", headers=bearer(token))
    assert response.status_code == 200
    me = response.json()
    assert set(me) == {"id", "email", "name", "emailVerified", "createdAt", "impersonation"}
    assert me["email"] == email
    assert me["impersonation"] is None
    assert me["emailVerified"] is False


def test_wrong_password_and_unknown_email_answer_the_same(app):
    client = new_client(app)
    email = register(client)
    wrong = login(client, email, "not the password at all")
    unknown = login(client, unique_email(), PASSWORD)
    assert wrong.status_code == unknown.status_code == 401
    assert code_of(wrong) == code_of(unknown) == "UNAUTHENTICATED"
    assert wrong.json() == unknown.json()
    assert "set-cookie" not in wrong.headers


def test_login_validation(app):
    response = new_client(app).post("/v1/auth/login", json={"email": "x@example.com"})
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"


def test_failures_are_limited_per_email(app):
    limit = parse(runtime_of(app).settings.login_limit_per_email).amount
    email = register(new_client(app))
    for attempt in range(limit):
        # A new IP each time: only the per-email counter can trip.
        assert login(new_client(app), email, f"wrong password {attempt}").status_code == 401
    refused = login(new_client(app), email, "wrong password again")
    assert refused.status_code == 429
    assert code_of(refused) == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    # Even the right password waits now; other emails are unaffected.
    assert login(new_client(app), email).status_code == 429
    other = register(new_client(app))
    assert login(new_client(app), other).status_code == 200


def test_failures_are_limited_per_ip(app):
    limit = parse(runtime_of(app).settings.login_limit_per_ip).amount
    client = new_client(app)
    for _ in range(limit):
        # A new email each time: only the per-IP counter can trip.
        assert login(client, unique_email()).status_code == 401
    refused = login(client, unique_email())
    assert refused.status_code == 429
    assert code_of(refused) == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    email = register(new_client(app))
    assert login(client, email).status_code == 429
    assert login(new_client(app), email).status_code == 200


def test_expired_access_token(app):
    client, _, token = signed_up(app)
    runtime = runtime_of(app)
    claims = client.get("/v1/auth/me", headers=bearer(token)).json()
    sessions = client.get("/v1/auth/sessions", headers=bearer(token)).json()["items"]
    expired, _ = issue_access_token(runtime.settings.signing_key(), claims["id"], sessions[0]["familyId"], -1)
    response = client.get("/v1/auth/me", headers=bearer(expired))
    assert response.status_code == 401
    assert code_of(response) == "UNAUTHENTICATED"


def test_missing_or_garbage_credentials(app):
    client = new_client(app)
    assert code_of(client.get("/v1/auth/me")) == "UNAUTHENTICATED"
    assert client.get("/v1/auth/me", headers=bearer("garbage")).status_code == 401
    forged, _ = issue_access_token("another signing key that is long enough to be used", "usr_x", "fam_x", 600)
    assert client.get("/v1/auth/me", headers=bearer(forged)).status_code == 401
