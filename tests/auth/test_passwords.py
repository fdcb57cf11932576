"""forgot-password / reset-password through the real email, and change-password."""

from __future__ import annotations

from tests.auth.helpers import (
    PASSWORD,
    bearer,
    code_of,
    login,
    new_client,
    signed_up,
    unique_email,
)

NEW_PASSWORD = "a brand new password"


def test_forgot_and_reset_password_through_the_email(app, mailbox):
    client, email, token = signed_up(app)
    phone = new_client(app)
    phone_token = login(phone, email).json()["accessToken"]

    anonymous = new_client(app)
    assert anonymous.post("/v1/auth/forgot-password", json={"email": email}).status_code == 202
    reset_token = mailbox.token_from_last(email, "reset")

    response = anonymous.post("/v1/auth/reset-password", json={"token": reset_token, "password": NEW_PASSWORD})
    assert response.status_code == 204

    for c, t in ((client, token), (phone, phone_token)):
        assert c.get("/v1/auth/me", headers=bearer(t)).status_code == 401
        assert c.post("/v1/auth/refresh").status_code == 401
    assert login(new_client(app), email, PASSWORD).status_code == 401
    fresh = login(new_client(app), email, NEW_PASSWORD)
    assert fresh.status_code == 200
    # Resetting through the mailbox also proves the address.
    assert fresh.json()["user"]["emailVerified"] is True

    reused = anonymous.post("/v1/auth/reset-password", json={"token": reset_token, "password": "yet another one!"})
    assert reused.status_code == 400
    assert code_of(reused) == "VALIDATION_ERROR"


def test_forgot_password_for_an_unknown_email_is_accepted_silently(app, mailbox):
    email = unique_email()
    response = new_client(app).post("/v1/auth/forgot-password", json={"email": email})
    assert response.status_code == 202
    assert mailbox.for_recipient(email) == []


def test_reset_password_validation(app, mailbox):
    client = new_client(app)
    bad = client.post("/v1/auth/reset-password", json={"token": "nope", "password": NEW_PASSWORD})
    assert bad.status_code == 400
    assert code_of(bad) == "VALIDATION_ERROR"
    _, email, _ = signed_up(app)
    client.post("/v1/auth/forgot-password", json={"email": email})
    token = mailbox.token_from_last(email, "reset")
    short = client.post("/v1/auth/reset-password", json={"token": token, "password": "short"})
    assert short.status_code == 400
    assert [d["path"] for d in short.json()["error"]["details"]] == ["password"]
    # The token was not spent by the refused attempt, and the verify purpose can't reset.
    assert client.post("/v1/auth/reset-password", json={"token": token, "password": NEW_PASSWORD}).status_code == 204
    verify = mailbox.token_from_last(email, "verify")
    assert client.post("/v1/auth/reset-password", json={"token": verify, "password": NEW_PASSWORD}).status_code == 400


def test_change_password_keeps_this_session_and_ends_the_others(app):
    client, email, token = signed_up(app)
    other = new_client(app)
    other_token = login(other, email).json()["accessToken"]

    response = client.post(
        "/v1/auth/change-password",
        json={"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD},
        headers=bearer(token),
    )
    assert response.status_code == 204
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 200
    assert client.post("/v1/auth/refresh").status_code == 200
    assert other.get("/v1/auth/me", headers=bearer(other_token)).status_code == 401
    assert other.post("/v1/auth/refresh").status_code == 401
    assert login(new_client(app), email, PASSWORD).status_code == 401
    assert login(new_client(app), email, NEW_PASSWORD).status_code == 200


def test_change_password_with_a_wrong_current_password(app):
    client, email, token = signed_up(app)
    response = client.post(
        "/v1/auth/change-password",
        json={"currentPassword": "this is not it", "newPassword": NEW_PASSWORD},
        headers=bearer(token),
    )
    assert response.status_code == 400
    assert code_of(response) == "VALIDATION_ERROR"
    assert [d["path"] for d in response.json()["error"]["details"]] == ["currentPassword"]
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 200
    assert login(new_client(app), email, PASSWORD).status_code == 200


def test_change_password_validation_and_access(app):
    client, _, token = signed_up(app)
    short = client.post(
        "/v1/auth/change-password", json={"currentPassword": PASSWORD, "newPassword": "short"},
        headers=bearer(token),
    )
    assert short.status_code == 400
    assert [d["path"] for d in short.json()["error"]["details"]] == ["newPassword"]
    anonymous = new_client(app).post(
        "/v1/auth/change-password", json={"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD}
    )
    assert anonymous.status_code == 401
