"""One rule for email addresses (register, sign-in, forgot-password, members) and the links in emails."""

from __future__ import annotations

import secrets

import pytest
from fastapi.testclient import TestClient

from tests.auth.helpers import PASSWORD, bearer, login, new_client, register, runtime_of, signed_up, unique_ip
from tests.factories import make_account


def _local() -> str:
    return f"Shopper-{secrets.token_hex(5)}"


def _code(response) -> str:  # type: ignore[no-untyped-def]
    return str(response.json()["error"]["code"])


@pytest.mark.parametrize("domain", ["shop.test", "example.com", "store.example"])
def test_register_then_sign_in_with_a_reserved_or_plain_domain(app, domain):
    email = f"{_local()}@{domain}"
    client = new_client(app)
    created = client.post("/v1/auth/register", json={"email": email, "password": PASSWORD})
    assert created.status_code == 201, created.text
    assert created.json()["user"]["email"] == email.lower()
    response = login(new_client(app), email)
    assert response.status_code == 200, response.text
    assert response.json()["user"]["id"] == created.json()["user"]["id"]


def test_mixed_case_registered_then_used_lower_case_and_the_reverse(app):
    mixed = f"{_local()}@Shop.TEST"
    register(new_client(app), f"  {mixed} ")
    assert login(new_client(app), mixed.lower()).status_code == 200
    assert login(new_client(app), mixed.upper()).status_code == 200

    lower = f"{_local()}@shop.test".lower()
    register(new_client(app), lower)
    assert login(new_client(app), lower.upper()).status_code == 200
    again = new_client(app).post("/v1/auth/register", json={"email": lower.swapcase(), "password": PASSWORD})
    assert again.status_code == 409
    assert _code(again) == "CONFLICT"


@pytest.mark.parametrize("email", ["not-an-email", "two@@shop.test", "me@localhost", "me@printer.local", "me@shop"])
def test_register_refuses_what_is_not_an_address(client, email):
    response = client.post("/v1/auth/register", json={"email": email, "password": PASSWORD})
    assert response.status_code == 400
    assert _code(response) == "VALIDATION_ERROR"
    assert [d["path"] for d in response.json()["error"]["details"]] == ["email"]


def test_sign_in_answers_a_malformed_address_like_a_wrong_password(app):
    email = register(new_client(app))
    wrong = login(new_client(app), email, "not the password at all")
    malformed = login(new_client(app), "not an address at all")
    assert wrong.status_code == malformed.status_code == 401
    assert _code(wrong) == _code(malformed) == "UNAUTHENTICATED"
    assert wrong.json()["error"]["message"] == malformed.json()["error"]["message"]


def test_forgot_password_answers_json_whatever_the_address(app, mailbox):
    email = f"{_local()}@shop.test"
    register(new_client(app), email)
    for candidate in (email.upper(), "nobody-here@shop.test", "not an address"):
        response = new_client(app).post("/v1/auth/forgot-password", json={"email": candidate})
        assert response.status_code == 202
        assert response.headers["content-type"].startswith("application/json")
        assert response.json() == {"status": "accepted"}
    assert mailbox.wait_for(email, "reset")


def test_resend_verification_answers_json(app):
    client, _, token = signed_up(app)
    response = client.post("/v1/auth/resend-verification", headers=bearer(token))
    assert response.status_code == 202
    assert response.json() == {"status": "accepted"}


def test_add_member_by_a_test_domain_address_in_another_case(app, client):
    owner = make_account(app)
    email = f"{_local()}@Shop.Test"
    register(new_client(app), email)
    response = client.post(f"/v1/orgs/{owner.org_id}/members", headers=owner.headers,
                           json={"email": email.swapcase(), "role": "member"})
    assert response.status_code == 201, response.text
    assert response.json()["email"] == email.lower()
    refused = client.post(f"/v1/orgs/{owner.org_id}/members", headers=owner.headers,
                          json={"email": "me@localhost", "role": "member"})
    assert refused.status_code == 400
    assert _code(refused) == "VALIDATION_ERROR"


# --------------------------------------------------------------------------- links in emails
def _verify_link(app, mailbox, client: TestClient, **headers: str) -> str:  # type: ignore[no-untyped-def]
    email = f"{_local()}@shop.test".lower()
    response = client.post("/v1/auth/register", json={"email": email, "password": PASSWORD}, headers=headers)
    assert response.status_code == 201, response.text
    body = mailbox.body(mailbox.wait_for(email, "verify"))
    return next(line for line in body.splitlines() if "/verify-email?token=" in line).strip()


def test_links_follow_the_address_the_service_is_reached_at(app, mailbox):
    assert runtime_of(app).settings.public_url is None
    client = TestClient(app, base_url="http://shop.localhost:18444", client=(unique_ip(), 50000))
    link = _verify_link(app, mailbox, client)
    assert link.startswith("http://shop.localhost:18444/verify-email?token=")
    token = link.split("token=", 1)[1]
    assert client.get("/v1/auth/verify-email", params={"token": token}).json() == {"emailVerified": True}


def test_a_foreign_host_header_gives_way_to_the_servers_own_address(app, mailbox):
    client = TestClient(app, base_url="http://127.0.0.1:18445", client=(unique_ip(), 50000))
    link = _verify_link(app, mailbox, client, host="attacker.example")
    assert link.startswith("http://127.0.0.1:18445/verify-email?token=")
    loopback = _verify_link(app, mailbox, client, host="localhost:9999")
    assert loopback.startswith("http://localhost:9999/verify-email?token=")


def test_public_url_when_set_wins(app, mailbox, monkeypatch):
    monkeypatch.setattr(runtime_of(app).settings, "public_url", "https://search.example.com/")
    link = _verify_link(app, mailbox, new_client(app), host="attacker.example")
    assert link.startswith("https://search.example.com/verify-email?token=")
