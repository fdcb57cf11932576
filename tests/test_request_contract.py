"""Requests are taken exactly as the OpenAPI document describes them (issue 29): a value of another
JSON type is refused (no 0 for false, no "5" for 5), an integer is what JSON Schema calls one (5.0
too), dates are strings, and each route's body is its own (the storefront takes no profile)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm.exc import StaleDataError

from tests.factories import bearer, make_key
from tests.index.helpers import create_index, make_tenant, products, upload, wait_task


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    return tenant, index["id"]


def _refused(response, path: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR" and path in [d["path"] for d in error["details"]], error


@pytest.mark.parametrize(("body", "path"), [
    ({"text": "phones", "weight": False}, "weight"),
    ({"text": "phones", "weight": "5"}, "weight"),
    ({"text": "phones", "weight": 5.5}, "weight"),
    ({"text": 5}, "text"),
])
def test_a_value_of_another_json_type_is_refused(client, shop, body, path):
    tenant, index_id = shop
    _refused(client.post(tenant.url(index_id, "/suggestions/custom"), json=body, headers=tenant.headers), path)


def test_an_integer_may_be_written_with_a_zero_fraction(client, shop):
    tenant, index_id = shop
    response = client.post(tenant.url(index_id, "/suggestions/custom"), json={"text": "phones", "weight": 5.0},
                           headers=tenant.headers)
    assert response.status_code == 201, response.text
    assert response.json()["weight"] == 5
    response = client.post(tenant.url(index_id, "/search"), json={"q": "", "page": 2.0, "perPage": 3.0},
                           headers=tenant.headers)
    assert response.status_code == 200, response.text
    assert (response.json()["page"], response.json()["perPage"]) == (2, 3)


def test_a_boolean_is_true_or_false(client, shop):
    """The integration's ``settings.manageMapping: 0`` was taken for false."""
    tenant, index_id = shop
    body = {"platform": "shopify", "name": "shop", "settings": {"manageMapping": 0}}
    _refused(client.put(tenant.url(index_id, "/integration"), json=body, headers=tenant.headers),
             "settings.manageMapping")


def test_a_date_time_is_a_string(app, client, shop):
    tenant, index_id = shop
    rule = {"name": "r", "conditions": [{"pattern": "tv", "anchoring": "is"}], "consequence": {"hide": ["1"]},
            "validity": [{"from": 1700000000}]}
    _refused(client.post(tenant.url(index_id, "/rules"), json=rule, headers=tenant.headers), "validity[0].from")
    rule["validity"] = [{"from": "2024-01-01T00:00:00Z"}]
    assert client.post(tenant.url(index_id, "/rules"), json=rule, headers=tenant.headers).status_code == 201
    keys = f"/v1/projects/{tenant.project_id}/api-keys"
    body = {"type": "secret", "name": "k", "access": "read", "expiresAt": 4102444800}
    _refused(client.post(keys, json=body, headers=bearer(tenant.account.token)), "expiresAt")


def test_a_document_id_written_as_a_whole_number_is_that_integer(client, shop):
    tenant, index_id = shop
    upload(client, tenant, index_id, products(3))  # ids p0..p2
    response = client.post(tenant.url(index_id, "/documents"), json=[{"id": 7.0, "name": "seven"}],
                           headers=tenant.headers)
    assert response.status_code == 202, response.text
    wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert client.get(tenant.url(index_id, "/documents/7"), headers=tenant.headers).json()["name"] == "seven"
    response = client.post(tenant.url(index_id, "/documents/delete"), json=[7.0, "p1"], headers=tenant.headers)
    assert response.status_code == 202, response.text
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded"
    assert client.get(tenant.url(index_id, "/documents/7"), headers=tenant.headers).status_code == 404


def test_the_storefront_body_takes_no_profile(app, client, shop):
    tenant, index_id = shop
    profile = client.post(tenant.url(index_id, "/profiles"), json={"name": "web", "queryFields": {"name": {}}},
                          headers=tenant.headers).json()
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=["https://s.example"])
    headers = {**bearer(public), "Origin": "https://s.example"}
    url = f"/v1/search/{profile['profileKey']}"
    for extra in ({"profileKey": profile["profileKey"]}, {"profile": {"queryFields": {}}}):
        _refused(client.post(url, json={"q": "", **extra}, headers=headers), next(iter(extra)))
    assert client.post(url, json={"q": ""}, headers=headers).status_code == 200


@pytest.mark.parametrize("query", ["status=", "status=succeeded,", "type=documents.upsert,,index.reindex"])
def test_a_task_filter_holds_no_empty_value(client, shop, query):
    tenant, _ = shop
    response = client.get(f"{tenant.tasks_url}?{query}", headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    ok = client.get(f"{tenant.tasks_url}?status=succeeded,failed&type=documents.upsert", headers=tenant.headers)
    assert ok.status_code == 200


def test_a_row_deleted_between_its_read_and_its_update_is_a_conflict(client, shop, monkeypatch):
    """A concurrent delete (a rule removed while a PUT of it was under way) answered 500."""
    from control_plane.rule import service

    tenant, index_id = shop
    rule = {"name": "r", "conditions": [{"pattern": "tv", "anchoring": "is"}], "consequence": {"hide": ["1"]}}
    created = client.post(tenant.url(index_id, "/rules"), json=rule, headers=tenant.headers).json()

    def lost_race(*_args, **_kwargs):
        raise StaleDataError("UPDATE statement on table 'rules' expected to update 1 row(s); 0 were matched.")

    monkeypatch.setattr(service, "update", lost_race)
    response = client.put(tenant.url(index_id, f"/rules/{created['id']}"), json=rule, headers=tenant.headers)
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "CONFLICT"
