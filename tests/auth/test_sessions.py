"""refresh rotation, theft detection, logout, session list and ending sessions."""

from __future__ import annotations

from tests.auth.helpers import (
    bearer,
    code_of,
    login,
    new_client,
    runtime_of,
    signed_up,
    with_cookie,
)
from tests.factories import make_account


def _refresh_cookie(client) -> str:  # type: ignore[no-untyped-def]
    value = client.cookies.get("shopsearch_refresh")
    assert value
    return str(value)


def _refresh_with(app, cookie: str):  # type: ignore[no-untyped-def]
    """A refresh presenting exactly ``cookie``, from a client with an empty jar."""
    return new_client(app).post("/v1/auth/refresh", headers=with_cookie(cookie))


def test_refresh_rotates_the_cookie(app):
    client, _, token = signed_up(app)
    first = _refresh_cookie(client)
    response = client.post("/v1/auth/refresh")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"accessToken", "tokenType", "expiresIn"}
    assert body["tokenType"] == "Bearer"
    assert body["expiresIn"] == runtime_of(app).settings.access_token_ttl_seconds
    assert "path=/v1/auth" in response.headers["set-cookie"].lower()
    second = _refresh_cookie(client)
    assert second != first
    assert client.get("/v1/auth/me", headers=bearer(body["accessToken"])).status_code == 200
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 200
    # The rotated chain keeps going.
    assert client.post("/v1/auth/refresh").status_code == 200


def test_refresh_updates_last_used(app):
    client, _, token = signed_up(app)
    before = client.get("/v1/auth/sessions", headers=bearer(token)).json()["items"][0]
    assert client.post("/v1/auth/refresh").status_code == 200
    after = client.get("/v1/auth/sessions", headers=bearer(token)).json()["items"][0]
    assert after["familyId"] == before["familyId"]
    assert after["lastUsedAt"] >= before["lastUsedAt"]


def test_refresh_needs_a_valid_cookie(app):
    response = new_client(app).post("/v1/auth/refresh")
    assert response.status_code == 401
    assert code_of(response) == "UNAUTHENTICATED"
    assert _refresh_with(app, "not-a-token").status_code == 401


def test_reused_refresh_token_revokes_the_whole_family(app):
    """Session theft: a rotated token presented again kills every token of the family at once."""
    client, _, login_token = signed_up(app)
    stolen = _refresh_cookie(client)
    refreshed = client.post("/v1/auth/refresh")
    assert refreshed.status_code == 200
    refreshed_token = refreshed.json()["accessToken"]
    current = _refresh_cookie(client)

    reuse = _refresh_with(app, stolen)
    assert reuse.status_code == 401
    assert code_of(reuse) == "UNAUTHENTICATED"

    for token in (login_token, refreshed_token):
        me = client.get("/v1/auth/me", headers=bearer(token))
        assert me.status_code == 401
        assert code_of(me) == "UNAUTHENTICATED"
    assert _refresh_with(app, current).status_code == 401
    assert _refresh_with(app, stolen).status_code == 401


def test_theft_in_one_family_leaves_other_sessions_alone(app):
    client, email, _ = signed_up(app)
    other_client = new_client(app)
    other_token = login(other_client, email).json()["accessToken"]
    stolen = _refresh_cookie(client)
    assert client.post("/v1/auth/refresh").status_code == 200
    assert _refresh_with(app, stolen).status_code == 401
    assert other_client.get("/v1/auth/me", headers=bearer(other_token)).status_code == 200
    assert other_client.post("/v1/auth/refresh").status_code == 200


def test_logout_revokes_the_family_and_clears_the_cookie(app):
    client, _, token = signed_up(app)
    cookie = _refresh_cookie(client)
    response = client.post("/v1/auth/logout")
    assert response.status_code == 204
    set_cookie = response.headers["set-cookie"].lower()
    assert set_cookie.startswith("shopsearch_refresh=")
    assert "max-age=0" in set_cookie
    assert "path=/v1/auth" in set_cookie
    assert client.cookies.get("shopsearch_refresh") is None
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 401
    assert _refresh_with(app, cookie).status_code == 401
    # Idempotent, and fine without any cookie.
    assert new_client(app).post("/v1/auth/logout", headers=with_cookie(cookie)).status_code == 204
    assert new_client(app).post("/v1/auth/logout").status_code == 204


def test_sessions_list_and_end_another_session(app):
    client, email, token = signed_up(app)
    laptop = new_client(app)
    laptop_login = laptop.post(
        "/v1/auth/login", json={"email": email, "password": "a long enough password"},
        headers={"User-Agent": "laptop-browser"},
    )
    laptop_token = laptop_login.json()["accessToken"]

    listing = client.get("/v1/auth/sessions", headers=bearer(token))
    assert listing.status_code == 200
    body = listing.json()
    assert body["nextCursor"] is None
    items = body["items"]
    assert len(items) == 2
    assert {tuple(sorted(i)) for i in items} == {
        ("createdAt", "current", "familyId", "ip", "lastUsedAt", "userAgent")
    }
    assert sorted(i["current"] for i in items) == [False, True]
    laptop_item = next(i for i in items if not i["current"])
    assert laptop_item["userAgent"] == "laptop-browser"
    assert laptop_item["ip"]

    assert client.delete(f"/v1/auth/sessions/{laptop_item['familyId']}", headers=bearer(token)).status_code == 204
    assert laptop.get("/v1/auth/me", headers=bearer(laptop_token)).status_code == 401
    assert laptop.post("/v1/auth/refresh").status_code == 401
    remaining = client.get("/v1/auth/sessions", headers=bearer(token)).json()["items"]
    assert [i["current"] for i in remaining] == [True]
    # Ending it again is a no-op.
    assert client.delete(f"/v1/auth/sessions/{laptop_item['familyId']}", headers=bearer(token)).status_code == 204


def test_sessions_are_paged(app):
    client, email, token = signed_up(app)
    for _ in range(2):
        assert login(new_client(app), email).status_code == 200
    first = client.get("/v1/auth/sessions", params={"limit": 2}, headers=bearer(token)).json()
    assert len(first["items"]) == 2
    assert first["nextCursor"]
    second = client.get(
        "/v1/auth/sessions", params={"limit": 2, "cursor": first["nextCursor"]}, headers=bearer(token)
    ).json()
    assert len(second["items"]) == 1
    assert second["nextCursor"] is None
    ids = {i["familyId"] for i in first["items"] + second["items"]}
    assert len(ids) == 3
    bad = client.get("/v1/auth/sessions", params={"cursor": "%%%"}, headers=bearer(token))
    assert code_of(bad) == "VALIDATION_ERROR"
    assert client.get("/v1/auth/sessions", params={"limit": 0}, headers=bearer(token)).status_code == 400


def test_another_users_session_is_not_found(app):
    client, _, token = signed_up(app)
    stranger = make_account(app)
    response = client.delete(f"/v1/auth/sessions/{stranger.family_id}", headers=bearer(token))
    assert response.status_code == 404
    assert code_of(response) == "NOT_FOUND"
    assert client.get("/v1/auth/me", headers=stranger.headers).status_code == 200
    assert client.delete("/v1/auth/sessions/fam_unknown", headers=bearer(token)).status_code == 404


def test_sessions_need_a_signed_in_user(app):
    assert new_client(app).get("/v1/auth/sessions").status_code == 401


def test_cookie_routes_answer_only_the_services_own_pages(app):
    """``SameSite=Strict`` alone let a same-site page (another port, a sibling subdomain) log a user
    out, or race two refreshes to revoke the family: the cookie routes check Origin."""
    client, email, token = signed_up(app)
    own = "http://testserver"  # the test client's base: the service's own pages
    for origin in ("http://testserver:8081", "https://testserver", "http://shop.testserver", "null"):
        for route in ("/v1/auth/refresh", "/v1/auth/logout"):
            refused = client.post(route, headers={"Origin": origin})
            assert refused.status_code == 403 and code_of(refused) == "FORBIDDEN", (route, origin)
        refused = client.post("/v1/auth/login", json={"email": email, "password": "x" * 12}, headers={"Origin": origin})
        assert refused.status_code == 403 and code_of(refused) == "FORBIDDEN"
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 200  # nothing was revoked
    assert client.post("/v1/auth/refresh", headers={"Origin": own}).status_code == 200
    assert client.post("/v1/auth/refresh").status_code == 200  # no Origin: not a browser's page
    assert client.post("/v1/auth/logout", headers={"Origin": own}).status_code == 204
    assert client.get("/v1/auth/me", headers=bearer(token)).status_code == 401


def test_docs_do_not_keep_pasted_credentials(client):
    page = client.get("/docs")
    assert page.status_code == 200 and '"persistAuthorization": false' in page.text
