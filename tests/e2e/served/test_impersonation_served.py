"""Impersonation over real HTTP against a served process (both backends): the operator CLI, run as
a separate process on the server's database, issues a one-time code for the served tenant's
organization; ``POST /v1/auth/impersonate`` turns it into a session as the owner, marked in
``me``, that reaches the organization's index but answers 403 ``IMPERSONATION_FORBIDDEN`` for the
forbidden operations, cannot reach another organization (404), and ends with
``impersonation/exit``; the code works once."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.served.conftest import Served
from tests.fixtures.tenants import make_tenant


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _code_of(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


def _issue_code(served: Served, org_id: str) -> str:
    return served.server.cli("support", "impersonation-code", org_id, "--by", "alice").strip().splitlines()[0]


def test_impersonation_end_to_end(served: Served) -> None:
    base = served.server.base
    project = served.http.get(f"/v1/projects/{served.tenant.project_id}")
    assert project.status_code == 200, project.text
    org_id = project.json()["orgId"]
    code = _issue_code(served, org_id)
    with httpx.Client(base_url=base, timeout=60) as http:  # no credentials: the code is the proof
        opened = http.post("/v1/auth/impersonate", json={"code": code})
        assert opened.status_code == 200, opened.text
        body = opened.json()
        assert body["tokenType"] == "Bearer" and body["expiresIn"] > 0 and "set-cookie" not in opened.headers
        support = _bearer(body["accessToken"])

        me = http.get("/v1/auth/me", headers=support)
        assert me.status_code == 200, me.text
        assert me.json()["email"] == served.tenant.email and me.json()["id"] == body["user"]["id"]
        assert me.json()["impersonation"]["by"] == "support:alice"
        assert me.json()["impersonation"]["expiresAt"].endswith("Z")

        # the owner's organization and its index are reachable, reads and searches alike
        assert [o["id"] for o in http.get("/v1/orgs", headers=support).json()["items"]] == [org_id]
        index = http.get(served.url(), headers=support)
        assert index.status_code == 200 and index.json()["id"] == served.index_id, index.text
        found = http.post(served.url("/search"), json={"q": "lamp"}, headers=support)
        assert found.status_code == 200 and [h["id"] for h in found.json()["hits"]] == ["p3"], found.text

        # the owner signs in too: their own session is not marked
        owner = http.post("/v1/auth/login", json={"email": served.tenant.email, "password": served.tenant.password})
        assert owner.status_code == 200, owner.text
        own = _bearer(owner.json()["accessToken"])
        assert http.get("/v1/auth/me", headers=own).json()["impersonation"] is None
        families = http.get("/v1/auth/sessions", headers=own).json()["items"]
        own_family = next(s["familyId"] for s in families if s["current"])

        forbidden: list[tuple[str, str, dict[str, Any] | None]] = [
            ("POST", "/v1/auth/change-password", {"currentPassword": served.tenant.password,
                                                  "newPassword": "a brand new password"}),
            ("DELETE", f"/v1/auth/sessions/{own_family}", None),
            ("POST", f"/v1/projects/{served.tenant.project_id}/api-keys", {"type": "secret", "name": "sneaky",
                                                                          "access": "full"}),
            ("PUT", f"/v1/orgs/{org_id}/plan", {"plan": "free"}),
            ("POST", f"/v1/orgs/{org_id}/members", {"email": "someone@example.com", "role": "admin"}),
        ]
        for method, url, payload in forbidden:
            refused = http.request(method, url, json=payload, headers=support)
            assert refused.status_code == 403, (method, url, refused.text)
            assert _code_of(refused) == "IMPERSONATION_FORBIDDEN", (method, url)
        assert http.get("/v1/auth/me", headers=own).status_code == 200  # the owner's session still works
        assert http.get(f"/v1/orgs/{org_id}", headers=support).json()["plan"] == "enterprise"

        # another organization's project is 404 to the support session
        other = make_tenant(served.server.database_url, name="other")
        elsewhere = http.get(f"/v1/projects/{other.project_id}/indices", headers=support)
        assert elsewhere.status_code == 404 and _code_of(elsewhere) == "NOT_FOUND", elsewhere.text

        ended = http.post("/v1/auth/impersonation/exit", headers=support)
        assert ended.status_code == 204, ended.text
        dead = http.get("/v1/auth/me", headers=support)
        assert dead.status_code == 401 and _code_of(dead) == "UNAUTHENTICATED"
        assert http.get("/v1/auth/me", headers=own).status_code == 200

        reused = http.post("/v1/auth/impersonate", json={"code": code})
        assert reused.status_code == 401 and _code_of(reused) == "UNAUTHENTICATED"
        # exit outside an impersonation is refused, and leaves the owner's session alone
        outside = http.post("/v1/auth/impersonation/exit", headers=own)
        assert outside.status_code == 403 and _code_of(outside) == "FORBIDDEN", outside.text
        assert http.get("/v1/auth/me", headers=own).status_code == 200


def test_unknown_codes_are_refused(served: Served) -> None:
    with httpx.Client(base_url=served.server.base, timeout=60) as http:
        for code in ("nope", "x" * 40):
            unknown = http.post("/v1/auth/impersonate", json={"code": code})
            assert unknown.status_code == 401 and _code_of(unknown) == "UNAUTHENTICATED", unknown.text
        missing = http.post("/v1/auth/impersonate", json={})
        assert missing.status_code == 400 and _code_of(missing) == "VALIDATION_ERROR", missing.text
