"""Members of an organization: list, add, change role, remove; the last-owner rule."""

from __future__ import annotations

import pytest

from tests.factories import add_member, make_account
from tests.org.helpers import assert_error, impersonated


def members_url(org_id: str, user_id: str | None = None) -> str:
    return f"/v1/orgs/{org_id}/members" + (f"/{user_id}" if user_id else "")


def test_list_members(app, client):
    owner = make_account(app)
    admin = add_member(app, owner, "admin")
    member = add_member(app, owner, "member")
    response = client.get(members_url(owner.org_id), headers=member.headers)
    assert response.status_code == 200
    body = response.json()
    assert body["nextCursor"] is None
    by_id = {m["userId"]: m for m in body["items"]}
    assert set(by_id) == {owner.user_id, admin.user_id, member.user_id}
    assert by_id[owner.user_id]["role"] == "owner"
    assert by_id[admin.user_id]["email"] == admin.email
    assert set(by_id[member.user_id]) == {"userId", "email", "name", "role", "createdAt"}


def test_list_members_paginates(app, client):
    owner = make_account(app)
    for _ in range(4):
        add_member(app, owner, "member")
    first = client.get(members_url(owner.org_id), headers=owner.headers, params={"limit": 3}).json()
    assert len(first["items"]) == 3 and first["nextCursor"]
    second = client.get(members_url(owner.org_id), headers=owner.headers,
                        params={"limit": 3, "cursor": first["nextCursor"]}).json()
    assert len(second["items"]) == 2 and second["nextCursor"] is None
    ids = [m["userId"] for m in first["items"] + second["items"]]
    assert len(set(ids)) == 5


def test_list_members_other_tenant_404(app, client):
    owner = make_account(app)
    stranger = make_account(app)
    assert_error(client.get(members_url(owner.org_id), headers=stranger.headers), 404, "NOT_FOUND")


def test_add_member(app, client):
    owner = make_account(app)
    newcomer = make_account(app)  # a registered user with their own organization
    response = client.post(members_url(owner.org_id), headers=owner.headers,
                           json={"email": newcomer.email.upper(), "role": "admin"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["userId"] == newcomer.user_id and body["role"] == "admin" and body["email"] == newcomer.email
    # the newcomer now sees the organization, as admin
    orgs = client.get("/v1/orgs", headers=newcomer.headers).json()["items"]
    assert {o["id"]: o["role"] for o in orgs}[owner.org_id] == "admin"


def test_add_member_unknown_email_404(app, client):
    owner = make_account(app)
    response = client.post(members_url(owner.org_id), headers=owner.headers,
                           json={"email": "nobody-here@example.com", "role": "member"})
    assert_error(response, 404, "NOT_FOUND")


def test_add_member_twice_409(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    response = client.post(members_url(owner.org_id), headers=owner.headers,
                           json={"email": member.email, "role": "admin"})
    assert_error(response, 409, "CONFLICT")


@pytest.mark.parametrize(
    "body",
    [{}, {"email": "a@b.co"}, {"role": "member"}, {"email": "not-an-email", "role": "member"},
     {"email": "a@b.co", "role": "king"}, {"email": 5, "role": "member"}, ["a@b.co"]],
)
def test_add_member_bad_input(app, client, body):
    owner = make_account(app)
    assert_error(client.post(members_url(owner.org_id), headers=owner.headers, json=body), 400, "VALIDATION_ERROR")


def test_add_member_malformed_json(app, client):
    owner = make_account(app)
    response = client.post(members_url(owner.org_id), content=b"{nope",
                           headers={**owner.headers, "Content-Type": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("role", ["member", "admin"])
def test_member_management_needs_owner(app, client, role):
    owner = make_account(app)
    caller = add_member(app, owner, role)
    target = add_member(app, owner, "member")
    newcomer = make_account(app)
    assert_error(client.post(members_url(owner.org_id), headers=caller.headers,
                             json={"email": newcomer.email, "role": "member"}), 403, "FORBIDDEN")
    assert_error(client.put(members_url(owner.org_id, target.user_id), headers=caller.headers,
                            json={"role": "admin"}), 403, "FORBIDDEN")
    assert_error(client.put(members_url(owner.org_id, caller.user_id), headers=caller.headers,
                            json={"role": "owner"}), 403, "FORBIDDEN")
    assert_error(client.delete(members_url(owner.org_id, target.user_id), headers=caller.headers),
                 403, "FORBIDDEN")


def test_member_management_other_tenant_404(app, client):
    owner = make_account(app)
    stranger = make_account(app)
    stranger_member = add_member(app, stranger, "member")
    # the caller is not in the other organization
    assert_error(client.post(members_url(stranger.org_id), headers=owner.headers,
                             json={"email": owner.email, "role": "member"}), 404, "NOT_FOUND")
    assert_error(client.put(members_url(stranger.org_id, stranger_member.user_id), headers=owner.headers,
                            json={"role": "admin"}), 404, "NOT_FOUND")
    assert_error(client.delete(members_url(stranger.org_id, stranger_member.user_id), headers=owner.headers),
                 404, "NOT_FOUND")
    # a member of another organization is not a member here
    assert_error(client.put(members_url(owner.org_id, stranger_member.user_id), headers=owner.headers,
                            json={"role": "admin"}), 404, "NOT_FOUND")
    assert_error(client.delete(members_url(owner.org_id, stranger_member.user_id), headers=owner.headers),
                 404, "NOT_FOUND")
    assert_error(client.delete(members_url(owner.org_id, "usr_unknown"), headers=owner.headers), 404, "NOT_FOUND")


def test_change_member_role(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    response = client.put(members_url(owner.org_id, member.user_id), headers=owner.headers, json={"role": "admin"})
    assert response.status_code == 200, response.text
    assert response.json()["role"] == "admin" and response.json()["userId"] == member.user_id
    # admins may create projects now
    assert client.post(f"/v1/orgs/{owner.org_id}/projects", headers=member.headers,
                       json={"name": "by-admin"}).status_code == 201
    response = client.put(members_url(owner.org_id, member.user_id), headers=owner.headers, json={"role": "owner"})
    assert response.json()["role"] == "owner"


@pytest.mark.parametrize("body", [{}, {"role": "root"}, {"role": None}, {"role": 1}])
def test_change_member_role_bad_input(app, client, body):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    assert_error(client.put(members_url(owner.org_id, member.user_id), headers=owner.headers, json=body),
                 400, "VALIDATION_ERROR")


def test_remove_member(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    assert client.get(f"/v1/orgs/{owner.org_id}", headers=member.headers).status_code == 200
    response = client.delete(members_url(owner.org_id, member.user_id), headers=owner.headers)
    assert response.status_code == 204 and response.content == b""
    # access ends at once
    assert_error(client.get(f"/v1/orgs/{owner.org_id}", headers=member.headers), 404, "NOT_FOUND")
    assert_error(client.delete(members_url(owner.org_id, member.user_id), headers=owner.headers), 404, "NOT_FOUND")


def test_last_owner_cannot_be_demoted_or_removed(app, client):
    owner = make_account(app)
    assert_error(client.put(members_url(owner.org_id, owner.user_id), headers=owner.headers,
                            json={"role": "admin"}), 409, "CONFLICT")
    assert_error(client.delete(members_url(owner.org_id, owner.user_id), headers=owner.headers), 409, "CONFLICT")
    # re-granting owner to the last owner is a no-op, not a conflict
    assert client.put(members_url(owner.org_id, owner.user_id), headers=owner.headers,
                      json={"role": "owner"}).status_code == 200
    # with a second owner, the first can step down, and then the second is the last
    second = add_member(app, owner, "owner")
    response = client.put(members_url(owner.org_id, owner.user_id), headers=owner.headers, json={"role": "admin"})
    assert response.status_code == 200 and response.json()["role"] == "admin"
    assert_error(client.delete(members_url(owner.org_id, second.user_id), headers=second.headers), 409, "CONFLICT")
    assert client.delete(members_url(owner.org_id, owner.user_id), headers=second.headers).status_code == 204
    members = client.get(members_url(owner.org_id), headers=second.headers).json()["items"]
    assert [(m["userId"], m["role"]) for m in members] == [(second.user_id, "owner")]


def test_owner_can_leave_when_another_owner_remains(app, client):
    owner = make_account(app)
    second = add_member(app, owner, "owner")
    assert client.delete(members_url(owner.org_id, owner.user_id), headers=owner.headers).status_code == 204
    assert_error(client.get(f"/v1/orgs/{owner.org_id}", headers=owner.headers), 404, "NOT_FOUND")
    assert client.get(f"/v1/orgs/{owner.org_id}", headers=second.headers).json()["role"] == "owner"


def test_member_changes_forbidden_while_impersonating(app, client):
    owner = make_account(app)
    member = add_member(app, owner, "member")
    newcomer = make_account(app)
    headers = impersonated(app, owner)
    assert_error(client.post(members_url(owner.org_id), headers=headers,
                             json={"email": newcomer.email, "role": "member"}), 403, "IMPERSONATION_FORBIDDEN")
    assert_error(client.put(members_url(owner.org_id, member.user_id), headers=headers, json={"role": "admin"}),
                 403, "IMPERSONATION_FORBIDDEN")
    assert_error(client.delete(members_url(owner.org_id, member.user_id), headers=headers),
                 403, "IMPERSONATION_FORBIDDEN")
    assert client.get(members_url(owner.org_id), headers=headers).status_code == 200
    roles = {m["userId"]: m["role"] for m in client.get(members_url(owner.org_id), headers=owner.headers).json()["items"]}
    assert roles == {owner.user_id: "owner", member.user_id: "member"}
