"""Organizations: list, get, plan."""

from __future__ import annotations

import pytest

from control_plane.org.models import Membership
from shared.plans import PLAN_NAMES, plan_limits
from tests.factories import add_member, bearer, make_account, make_key, make_project, runtime_of
from tests.org.helpers import assert_error, impersonated, unauthenticated_headers

AUTH_CASES = ["missing", "basic", "bearer-empty", "expired", "revoked-family", "revoked-key", "expired-key"]


def test_list_orgs(app, client):
    account = make_account(app, org_name="Mine")
    other = make_account(app, org_name="Theirs")
    response = client.get("/v1/orgs", headers=account.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["nextCursor"] is None
    assert [o["id"] for o in body["items"]] == [account.org_id]
    item = body["items"][0]
    assert set(item) == {"id", "name", "plan", "role", "createdAt"}
    assert item["name"] == "Mine" and item["plan"] == "free" and item["role"] == "owner"
    assert item["createdAt"].endswith("Z")
    assert other.org_id not in [o["id"] for o in body["items"]]


def test_list_orgs_paginates(app, client):
    account = make_account(app)
    for role in ("member", "admin", "owner", "member"):
        owner = make_account(app)
        with runtime_of(app).sessions.begin() as db:
            db.add(Membership(org_id=owner.org_id, user_id=account.user_id, role=role))
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        body = client.get("/v1/orgs", headers=account.headers, params=params).json()
        assert len(body["items"]) <= 2
        seen += [o["id"] for o in body["items"]]
        pages += 1
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert len(seen) == len(set(seen)) == 5
    roles = sorted(o["role"] for o in client.get("/v1/orgs", headers=account.headers).json()["items"])
    assert roles == ["admin", "member", "member", "owner", "owner"]


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"cursor": "%%%"},
                                    {"cursor": "bm9wZQ"}])
def test_list_orgs_bad_params(app, client, params):
    account = make_account(app)
    assert_error(client.get("/v1/orgs", headers=account.headers, params=params), 400, "VALIDATION_ERROR")


def test_list_orgs_limit_bounds(app, client):
    account = make_account(app)
    for limit in (1, 1000):
        assert client.get("/v1/orgs", headers=account.headers, params={"limit": limit}).status_code == 200


def test_get_org(app, client):
    owner = make_account(app, org_name="Acme")
    member = add_member(app, owner, "member")
    body = client.get(f"/v1/orgs/{owner.org_id}", headers=owner.headers).json()
    assert body["id"] == owner.org_id and body["name"] == "Acme" and body["role"] == "owner"
    body = client.get(f"/v1/orgs/{owner.org_id}", headers=member.headers).json()
    assert body["role"] == "member"


def test_get_org_other_tenant_and_unknown_404(app, client):
    owner = make_account(app)
    stranger = make_account(app)
    assert_error(client.get(f"/v1/orgs/{stranger.org_id}", headers=owner.headers), 404, "NOT_FOUND")
    assert_error(client.get("/v1/orgs/org_doesnotexist", headers=owner.headers), 404, "NOT_FOUND")


@pytest.mark.parametrize("case", AUTH_CASES)
def test_org_routes_refuse_bad_credentials(app, client, case):
    account = make_account(app)
    project_id = make_project(app, account)
    headers = unauthenticated_headers(app, account, project_id)[case]
    org = account.org_id
    for method, url, body in [
        ("GET", "/v1/orgs", None),
        ("GET", f"/v1/orgs/{org}", None),
        ("PUT", f"/v1/orgs/{org}/plan", {"plan": "pro"}),
        ("GET", f"/v1/orgs/{org}/members", None),
        ("POST", f"/v1/orgs/{org}/members", {"email": "a@b.co", "role": "member"}),
        ("PUT", f"/v1/orgs/{org}/members/{account.user_id}", {"role": "owner"}),
        ("DELETE", f"/v1/orgs/{org}/members/{account.user_id}", None),
    ]:
        response = client.request(method, url, headers=headers, json=body)
        assert_error(response, 401, "UNAUTHENTICATED")


def test_keys_and_public_keys_on_org_routes_are_403(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    org = account.org_id
    for key in (
        make_key(app, project_id, access="full"),
        make_key(app, project_id, key_type="public", access=None, allowed_origins=["https://a.io"]),
    ):
        headers = {**bearer(key), "Origin": "https://a.io"}
        assert_error(client.get(f"/v1/orgs/{org}", headers=headers), 403, "FORBIDDEN")
        assert_error(client.put(f"/v1/orgs/{org}/plan", headers=headers, json={"plan": "pro"}), 403, "FORBIDDEN")
        assert_error(client.get(f"/v1/orgs/{org}/members", headers=headers), 403, "FORBIDDEN")


# --------------------------------------------------------------------------- plan
def test_change_plan(app, client):
    owner = make_account(app)
    for plan in PLAN_NAMES:
        response = client.put(f"/v1/orgs/{owner.org_id}/plan", headers=owner.headers, json={"plan": plan})
        assert response.status_code == 200, response.text
        assert response.json()["plan"] == plan
        assert response.json()["role"] == "owner"
    assert client.get(f"/v1/orgs/{owner.org_id}", headers=owner.headers).json()["plan"] == PLAN_NAMES[-1]


@pytest.mark.parametrize(
    ("body", "path"),
    [({"plan": "platinum"}, "plan"), ({}, "plan"), ({"plan": 3}, "plan"), ([], ""), ({"plan": "pro", "x": 1}, "x")],
)
def test_change_plan_bad_input(app, client, body, path):
    owner = make_account(app)
    error = assert_error(client.put(f"/v1/orgs/{owner.org_id}/plan", headers=owner.headers, json=body),
                         400, "VALIDATION_ERROR")
    assert path in [d["path"] for d in error["error"]["details"]]


def test_change_plan_malformed_json(app, client):
    owner = make_account(app)
    response = client.put(f"/v1/orgs/{owner.org_id}/plan", content=b'{"plan": ',
                          headers={**owner.headers, "Content-Type": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR")


def test_change_plan_needs_owner(app, client):
    owner = make_account(app)
    for role in ("member", "admin"):
        other = add_member(app, owner, role)
        response = client.put(f"/v1/orgs/{owner.org_id}/plan", headers=other.headers, json={"plan": "pro"})
        assert_error(response, 403, "FORBIDDEN")


def test_change_plan_other_tenant_404(app, client):
    owner = make_account(app)
    stranger = make_account(app)
    response = client.put(f"/v1/orgs/{owner.org_id}/plan", headers=stranger.headers, json={"plan": "pro"})
    assert_error(response, 404, "NOT_FOUND")


def test_change_plan_forbidden_while_impersonating(app, client):
    owner = make_account(app)
    response = client.put(f"/v1/orgs/{owner.org_id}/plan", headers=impersonated(app, owner), json={"plan": "pro"})
    assert_error(response, 403, "IMPERSONATION_FORBIDDEN")
    assert client.get(f"/v1/orgs/{owner.org_id}", headers=owner.headers).json()["plan"] == "free"
    # reading is fine while impersonating
    assert client.get(f"/v1/orgs/{owner.org_id}", headers=impersonated(app, owner)).status_code == 200


def test_plan_limits():
    free, enterprise = plan_limits("free"), plan_limits("enterprise")
    assert free.max_indices_per_project < enterprise.max_indices_per_project
    assert free.max_documents_per_index < enterprise.max_documents_per_index
    assert free.max_searches_per_second < enterprise.max_searches_per_second
    assert plan_limits("no-such-plan") == free
    assert plan_limits(None) == free
    assert set(free.as_dict()) == {"plan", "maxIndicesPerProject", "maxDocumentsPerIndex", "maxSearchesPerSecond",
                                   "maxSynonymsPerIndex", "maxRulesPerIndex"}
