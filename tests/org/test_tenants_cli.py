"""``shopsearch tenants`` (operator CLI, direct database access)."""

from __future__ import annotations

import json
import secrets

import pytest
from typer.testing import CliRunner

from cli.main import app as cli_app
from shared.settings import get_settings
from tests.factories import bearer, make_account


@pytest.fixture
def run(settings):  # type: ignore[no-untyped-def]
    runner = CliRunner()
    env = {"SHOPSEARCH_DATABASE_URL": settings.resolved_database_url}

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        get_settings.cache_clear()
        try:
            return runner.invoke(cli_app, ["tenants", *args], env=env)
        finally:
            get_settings.cache_clear()

    return invoke


def _email() -> str:
    return f"op-{secrets.token_hex(5)}@example.com"


def test_create_with_key_then_the_key_works(app, client, run):
    email = _email()
    result = run("create", "--email", email, "--password", "a-long-password", "--org", "Operator Org",
                 "--project", "Main", "--verified", "--with-key", "full", "--json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert created["email"] == email
    assert created["userId"].startswith("usr_") and created["orgId"].startswith("org_")
    assert created["projectId"].startswith("prj_") and created["keyId"].startswith("key_")
    key = created["key"]
    assert key.startswith("ss_sk_")
    response = client.get(f"/v1/projects/{created['projectId']}", headers=bearer(key))
    assert response.status_code == 200, response.text
    assert response.json()["name"] == "Main" and response.json()["orgId"] == created["orgId"]
    # the user can sign in with the given password (login is another domain; check the stored hash)
    from control_plane.security import verify_password
    from control_plane.user.models import User
    from tests.factories import runtime_of

    with runtime_of(app).sessions() as db:
        user = db.get(User, created["userId"])
        assert user is not None and user.email_verified_at is not None
        assert verify_password(user.password_hash, "a-long-password")


def test_create_read_key_and_unverified(app, client, run):
    result = run("create", "--email", _email(), "--password", "a-long-password", "--org", "O", "--project", "P",
                 "--with-key", "read", "--json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    response = client.get(f"/v1/projects/{created['projectId']}/api-keys", headers=bearer(created["key"]))
    assert response.status_code == 403  # keys never manage keys
    assert client.get(f"/v1/projects/{created['projectId']}", headers=bearer(created["key"])).status_code == 200


def test_create_without_key(run):
    result = run("create", "--email", _email(), "--password", "a-long-password", "--org", "O", "--project", "P",
                 "--json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert "key" not in created and "keyId" not in created


def test_create_table_output(run):
    result = run("create", "--email", _email(), "--password", "a-long-password", "--org", "O", "--project", "P")
    assert result.exit_code == 0, result.output
    assert "org_" in result.stdout and "prj_" in result.stdout


def test_create_duplicate_email_fails(run):
    email = _email()
    args = ["create", "--email", email, "--password", "a-long-password", "--org", "O", "--project", "P"]
    assert run(*args).exit_code == 0
    result = run(*[a if a != email else email.upper() for a in args])
    assert result.exit_code == 1
    assert "error" in result.stderr.lower()


@pytest.mark.parametrize(
    "args",
    [
        ["--password", "short", "--org", "O", "--project", "P"],
        ["--password", "a-long-password", "--org", "O", "--project", "   "],
        ["--password", "a-long-password", "--org", "O", "--project", "P", "--with-key", "admin"],
    ],
)
def test_create_bad_input_fails(run, args):
    result = run("create", "--email", _email(), *args)
    assert result.exit_code != 0


def test_list_and_show(app, client, run):
    created = json.loads(run("create", "--email", _email(), "--password", "a-long-password", "--org", "Listed",
                             "--project", "P1", "--verified", "--with-key", "full", "--json").stdout)
    result = run("list", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.stdout)["items"]}
    row = rows[created["orgId"]]
    assert row["name"] == "Listed" and row["plan"] == "free" and row["memberCount"] == 1 and row["projectCount"] == 1
    assert row["owners"] == [created["email"]]

    result = run("show", created["orgId"], "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["id"] == created["orgId"]
    assert [(m["userId"], m["role"]) for m in shown["members"]] == [(created["userId"], "owner")]
    assert [(p["id"], p["name"], p["keyCount"]) for p in shown["projects"]] == [(created["projectId"], "P1", 1)]

    assert run("list").exit_code == 0
    table = run("show", created["orgId"])
    assert table.exit_code == 0 and created["projectId"] in table.stdout


def test_show_unknown_org_fails(run):
    result = run("show", "org_does_not_exist", "--json")
    assert result.exit_code == 1
    assert result.stderr.startswith("error:")


def test_a_test_domain_tenant_signs_in_and_can_be_added_as_a_member(app, client, run):
    """The README's ``--email me@shop.test``: what the CLI accepts, sign-in and members accept too."""
    email = f"Me-{secrets.token_hex(5)}@Shop.Test"
    result = run("create", "--email", f" {email} ", "--password", "a-long-password", "--org", "My shop",
                 "--project", "web", "--verified", "--json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert created["email"] == email.lower()
    login = client.post("/v1/auth/login", json={"email": email.lower(), "password": "a-long-password"})
    assert login.status_code == 200, login.text
    assert login.json()["user"]["id"] == created["userId"]

    owner = make_account(app)
    added = client.post(f"/v1/orgs/{owner.org_id}/members", headers=owner.headers,
                        json={"email": email.upper(), "role": "member"})
    assert added.status_code == 201, added.text
    assert added.json()["userId"] == created["userId"]


@pytest.mark.parametrize("email", ["not-an-email", "me@localhost", "me@@shop.test"])
def test_create_refuses_what_register_refuses(run, email):
    result = run("create", "--email", email, "--password", "a-long-password", "--org", "O", "--project", "P")
    assert result.exit_code == 1
    assert "email" in result.stderr.lower()


def test_operator_commands_work_on_a_fresh_data_directory(tmp_path):
    """A real process on an empty data directory: the CLI migrates first, as ``serve`` does."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env["SHOPSEARCH_DATA_DIR"] = str(tmp_path / "fresh")
    created = subprocess.run(
        [sys.executable, "-m", "cli.main", "tenants", "create", "--email", "me@shop.test", "--password",
         "a long password", "--org", "My shop", "--project", "web", "--with-key", "read", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert created.returncode == 0, created.stderr
    org_id = json.loads(created.stdout)["orgId"]
    shown = subprocess.run([sys.executable, "-m", "cli.main", "tenants", "show", org_id, "--json"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == org_id
