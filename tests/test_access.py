"""The authorization layer (control_plane.access): credentials, key rules, origins."""

from __future__ import annotations

from datetime import timedelta

import pytest

from control_plane.origins import origin_allowed
from tests.factories import add_member, bearer, make_account, make_key, make_project
from tests.org.helpers import (
    assert_error,
    expired_token,
    revoke_key_directly,
    revoked_family_token,
    unauthenticated_headers,
)


def test_factories_make_a_working_account(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = make_key(app, project_id)
    assert key.startswith("ss_sk_")
    assert account.token


@pytest.mark.parametrize(
    "case",
    ["missing", "basic", "bearer-empty", "bearer-two-parts", "garbage", "forged", "expired",
     "revoked-family", "unknown-key", "revoked-key", "expired-key"],
)
def test_bad_credentials_are_401(app, client, case):
    account = make_account(app)
    project_id = make_project(app, account)
    headers = unauthenticated_headers(app, account, project_id)[case]
    for url in ("/v1/orgs", f"/v1/projects/{project_id}"):
        assert_error(client.get(url, headers=headers), 401, "UNAUTHENTICATED")


def test_session_token_works_until_its_family_is_revoked(app, client):
    account = make_account(app)
    assert client.get("/v1/orgs", headers=account.headers).status_code == 200
    token = revoked_family_token(app, account)
    assert_error(client.get("/v1/orgs", headers=bearer(token)), 401, "UNAUTHENTICATED")
    # the account's other session is untouched
    assert client.get("/v1/orgs", headers=account.headers).status_code == 200


def test_expired_session_token(app, client):
    account = make_account(app)
    assert_error(client.get("/v1/orgs", headers=bearer(expired_token(app, account))), 401, "UNAUTHENTICATED")


def test_key_stops_working_at_once_when_revoked(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = make_key(app, project_id, access="read")
    assert client.get(f"/v1/projects/{project_id}", headers=bearer(key)).status_code == 200  # cached now
    revoke_key_directly(app, key)
    assert_error(client.get(f"/v1/projects/{project_id}", headers=bearer(key)), 401, "UNAUTHENTICATED")


def test_key_with_future_expiry_works(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = make_key(app, project_id, expires_in=timedelta(hours=1))
    assert client.get(f"/v1/projects/{project_id}", headers=bearer(key)).status_code == 200


def test_read_and_full_secret_keys_on_project_read_route(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    for access in ("read", "full"):
        key = make_key(app, project_id, access=access)
        response = client.get(f"/v1/projects/{project_id}", headers=bearer(key))
        assert response.status_code == 200
        assert response.json()["id"] == project_id


def test_secret_key_of_another_project_is_404(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    other_project = make_project(app, account)
    key = make_key(app, other_project)
    assert_error(client.get(f"/v1/projects/{project_id}", headers=bearer(key)), 404, "NOT_FOUND")


def test_public_key_is_403_off_the_storefront(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = make_key(app, project_id, key_type="public", access=None, allowed_origins=["https://shop.example.com"])
    headers = {**bearer(key), "Origin": "https://shop.example.com"}
    assert_error(client.get(f"/v1/projects/{project_id}", headers=headers), 403, "FORBIDDEN")
    assert_error(client.get("/v1/orgs", headers=headers), 403, "FORBIDDEN")
    assert_error(client.get(f"/v1/projects/{project_id}/api-keys", headers=headers), 403, "FORBIDDEN")


def test_keys_cannot_call_signed_in_routes(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = bearer(make_key(app, project_id))
    assert_error(client.get("/v1/orgs", headers=key), 403, "FORBIDDEN")
    assert_error(client.get(f"/v1/orgs/{account.org_id}", headers=key), 403, "FORBIDDEN")
    assert_error(client.get(f"/v1/projects/{project_id}/api-keys", headers=key), 403, "FORBIDDEN")
    assert_error(
        client.post(f"/v1/projects/{project_id}/api-keys", headers=key, json={"type": "secret", "name": "x",
                                                                              "access": "full"}),
        403, "FORBIDDEN",
    )


def test_member_of_other_org_gets_404_not_403(app, client):
    owner = make_account(app)
    project_id = make_project(app, owner)
    stranger = make_account(app)
    assert_error(client.get(f"/v1/orgs/{owner.org_id}", headers=stranger.headers), 404, "NOT_FOUND")
    assert_error(client.get(f"/v1/projects/{project_id}", headers=stranger.headers), 404, "NOT_FOUND")


def test_role_ranks(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    admin = add_member(app, owner, "admin")
    assert client.get(f"/v1/orgs/{owner.org_id}/projects", headers=member.headers).status_code == 200
    assert_error(client.post(f"/v1/orgs/{owner.org_id}/projects", headers=member.headers, json={"name": "a"}),
                 403, "FORBIDDEN")
    assert client.post(f"/v1/orgs/{owner.org_id}/projects", headers=admin.headers, json={"name": "a"}).status_code == 201
    assert_error(client.put(f"/v1/orgs/{owner.org_id}/plan", headers=admin.headers, json={"plan": "pro"}),
                 403, "FORBIDDEN")


# --------------------------------------------------------------------------- origins
@pytest.mark.parametrize(
    ("origin", "allowed", "expected"),
    [
        ("https://shop.example.com", ("https://shop.example.com",), True),
        ("https://SHOP.example.com", ("https://shop.example.com/",), True),
        ("http://shop.example.com", ("https://shop.example.com",), False),
        ("https://shop.example.com:8443", ("https://shop.example.com",), False),
        ("https://shop.example.com:8443", ("https://shop.example.com:8443",), True),
        ("https://a.example.com", ("https://*.example.com",), True),
        ("https://a.b.example.com", ("https://*.example.com",), True),
        ("https://example.com", ("https://*.example.com",), False),  # the apex is not a subdomain
        ("http://a.example.com", ("https://*.example.com",), False),
        ("https://evilexample.com", ("https://*.example.com",), False),
        ("https://example.com.evil.io", ("https://*.example.com",), False),
        ("https://other.io", ("https://a.io", "https://other.io"), True),
        ("https://other.io", (), False),
        ("null", ("https://a.io",), False),
    ],
)
def test_origin_allowed(origin, allowed, expected):
    assert origin_allowed(origin, allowed) is expected
