"""register, verify-email, resend-verification."""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import select

from control_plane.auth import repository
from control_plane.auth.models import EmailToken
from control_plane.org.models import Membership, Organization
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


def test_register_creates_user_and_owned_organization(app, client):
    email = unique_email()
    response = client.post(
        "/v1/auth/register",
        json={"email": email, "password": PASSWORD, "name": "Ada", "organizationName": "Ada's Shop"},
    )
    assert response.status_code == 201
    user = response.json()["user"]
    assert user["email"] == email
    assert user["name"] == "Ada"
    assert user["emailVerified"] is False
    assert user["id"].startswith("usr_")
    assert user["createdAt"].endswith("Z")
    assert "password" not in str(response.json()).lower()
    with runtime_of(app).sessions() as db:
        row = db.execute(
            select(Organization.name, Membership.role)
            .join(Membership, Membership.org_id == Organization.id)
            .where(Membership.user_id == user["id"])
        ).one()
    assert tuple(row) == ("Ada's Shop", "owner")


def test_register_without_organization_name_still_creates_one(app, client):
    email = register(client)
    user_id = login(client, email).json()["user"]["id"]
    with runtime_of(app).sessions() as db:
        roles = db.scalars(select(Membership.role).where(Membership.user_id == user_id)).all()
    assert roles == ["owner"]


def test_duplicate_email_conflicts_case_insensitively(client):
    email = register(client)
    for again in (email, email.upper()):
        response = client.post("/v1/auth/register", json={"email": again, "password": PASSWORD})
        assert response.status_code == 409
        assert code_of(response) == "CONFLICT"


def test_short_password_is_rejected(client):
    response = client.post("/v1/auth/register", json={"email": unique_email(), "password": "123456789"})
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"
    assert [d["path"] for d in response.json()["error"]["details"]] == ["password"]


def test_malformed_json(client):
    response = client.post(
        "/v1/auth/register", content=b'{"email": "x@example.com", "password": ',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"


def test_wrong_types(client):
    response = client.post("/v1/auth/register", json={"email": 12, "password": ["a" * 12], "name": {"x": 1}})
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"
    paths = {d["path"] for d in response.json()["error"]["details"]}
    assert {"email", "password", "name"} <= paths


def test_invalid_email(client):
    response = client.post("/v1/auth/register", json={"email": "not-an-email", "password": PASSWORD})
    assert response.status_code == 400
    assert [d["path"] for d in response.json()["error"]["details"]] == ["email"]


def test_missing_fields(client):
    response = client.post("/v1/auth/register", json={})
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"
    assert {d["path"] for d in response.json()["error"]["details"]} == {"email", "password"}


def test_body_over_the_limit_is_refused(app, client):
    limit = runtime_of(app).settings.max_body_bytes
    body = b'{"email": "big@example.com", "password": "' + b"x" * (limit + 1) + b'"}'
    response = client.post("/v1/auth/register", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert code_of(response) == "PAYLOAD_TOO_LARGE"


def test_verification_link_from_the_real_email(app, client, mailbox):
    email = register(client)
    message = mailbox.wait_for(email, "verify")
    assert "http://testserver/verify-email?token=" in mailbox.body(message)
    token = mailbox.token_from_last(email, "verify")

    response = client.get("/v1/auth/verify-email", params={"token": token})
    assert response.status_code == 200
    assert response.json() == {"emailVerified": True}

    again = client.get("/v1/auth/verify-email", params={"token": token})
    assert again.status_code == 400
    assert code_of(again) == "VALIDATION_ERROR"

    me = client.get("/v1/auth/me", headers=bearer(login(client, email).json()["accessToken"]))
    assert me.json()["emailVerified"] is True


def test_unknown_missing_and_expired_verification_tokens(app, client):
    assert code_of(client.get("/v1/auth/verify-email", params={"token": "nope"})) == "VALIDATION_ERROR"
    assert client.get("/v1/auth/verify-email").status_code == 400

    email = register(client)
    with runtime_of(app).sessions.begin() as db:
        user = repository.get_user_by_email(db, email)
        assert user is not None
        expired = repository.add_email_token(db, user.id, "verify", -1)
    response = client.get("/v1/auth/verify-email", params={"token": expired})
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"


def test_resend_verification_sends_a_new_working_link(app, mailbox):
    client, email, token = signed_up(app)
    first = mailbox.token_from_last(email, "verify")
    response = client.post("/v1/auth/resend-verification", headers=bearer(token))
    assert response.status_code == 202
    assert response.json() == {"status": "accepted"}
    second = _next_token(mailbox, email, first)
    assert client.get("/v1/auth/verify-email", params={"token": first}).status_code == 400
    assert client.get("/v1/auth/verify-email", params={"token": second}).status_code == 200

    # Already verified: accepted, nothing more is sent. Mail leaves in order (one mail thread), so
    # once a later reset email has arrived, a verification email sent before it would be there too.
    assert client.post("/v1/auth/resend-verification", headers=bearer(token)).status_code == 202
    assert client.post("/v1/auth/forgot-password", json={"email": email}).status_code == 202
    mailbox.wait_for(email, "reset")
    assert len([m for m in mailbox.for_recipient(email) if "verify" in str(m["Subject"]).lower()]) == 2


def _next_token(mailbox, email: str, previous: str, timeout: float = 5.0) -> str:  # type: ignore[no-untyped-def]
    """The token of the newest verification email once it differs from ``previous`` (mail is sent
    after the answer, off the request path)."""
    deadline = time.monotonic() + timeout
    while (token := mailbox.token_from_last(email, "verify")) == previous:
        assert time.monotonic() < deadline, "no new verification email"
        time.sleep(0.02)
    return token


def test_resend_verification_needs_a_session(app):
    response = new_client(app).post("/v1/auth/resend-verification")
    assert response.status_code == 401
    assert code_of(response) == "UNAUTHENTICATED"


def test_email_token_lifetime_follows_settings(app, client):
    email = register(client)
    with runtime_of(app).sessions() as db:
        user = repository.get_user_by_email(db, email)
        assert user is not None
        row = db.scalars(select(EmailToken).where(EmailToken.user_id == user.id)).one()
        lifetime = row.expires_at - row.created_at
    ttl = runtime_of(app).settings.email_token_ttl_seconds
    assert abs(lifetime - timedelta(seconds=ttl)) < timedelta(seconds=5)
