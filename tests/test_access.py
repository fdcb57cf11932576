"""Factories used by every domain's tests."""

from tests.factories import make_account, make_key, make_project


def test_factories_make_a_working_account(app, client):
    account = make_account(app)
    project_id = make_project(app, account)
    key = make_key(app, project_id)
    assert key.startswith("ss_sk_")
    assert account.token
