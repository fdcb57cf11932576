"""Search profiles: CRUD, PROFILE_INVALID paths, usage registry, access rules."""

from __future__ import annotations

from tests.factories import bearer, make_account, make_key, make_project
from tests.index.helpers import create_index, make_tenant

GOOD = {
    "name": "storefront",
    "queryFields": {"name": {"weight": 10}, "brand": {"weight": 5, "typo": False}},
    "facets": ["brand", "price"],
    "sortOptions": [{"key": "cheap", "label": "Price ascending", "sort": ["price:asc"]}],
    "defaultSort": None,
    "perPage": 12,
    "highlight": ["name"],
    "boosts": [{"field": "stock", "modifier": "log1p", "weight": 1}],
}


def profiles_url(tenant, index_id: str, suffix: str = "") -> str:
    return tenant.url(index_id, "/profiles" + suffix)


def test_profile_crud(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    created = client.post(profiles_url(tenant, index["id"]), json=GOOD, headers=tenant.headers)
    assert created.status_code == 201, created.text
    profile = created.json()
    assert profile["id"].startswith("prf_")
    assert profile["profileKey"] and profile["indexId"] == index["id"]
    assert profile["queryFields"]["name"]["weight"] == 10
    assert profile["operator"] == "and"
    assert profile["typoTolerance"] == {"enabled": True, "minWordSizeOneTypo": 4, "minWordSizeTwoTypos": 8}

    listed = client.get(profiles_url(tenant, index["id"]), headers=tenant.read_headers).json()
    assert [p["id"] for p in listed["items"]] == [profile["id"]]
    assert listed["nextCursor"] is None

    update = {**GOOD, "operator": "or", "perPage": 30}
    updated = client.put(profiles_url(tenant, index["id"], f"/{profile['id']}"), json=update, headers=tenant.headers)
    assert updated.status_code == 200, updated.text
    assert updated.json()["operator"] == "or" and updated.json()["profileKey"] == profile["profileKey"]

    got = client.get(profiles_url(tenant, index["id"], f"/{profile['id']}"), headers=tenant.headers)
    assert got.json()["perPage"] == 30

    duplicate = client.post(profiles_url(tenant, index["id"]), json=GOOD, headers=tenant.headers)
    assert duplicate.status_code == 409 and duplicate.json()["error"]["code"] == "CONFLICT"

    deleted = client.delete(profiles_url(tenant, index["id"], f"/{profile['id']}"), headers=tenant.headers)
    assert deleted.status_code == 204
    gone = client.get(profiles_url(tenant, index["id"], f"/{profile['id']}"), headers=tenant.headers)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"


def _invalid(client, tenant, index_id, body):
    response = client.post(profiles_url(tenant, index_id), json=body, headers=tenant.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "PROFILE_INVALID"
    return {d["path"] for d in error["details"]}


def test_profile_invalid_paths(app, client):
    tenant = make_tenant(app)
    index_id = create_index(client, tenant)["id"]
    assert _invalid(client, tenant, index_id, {**GOOD, "queryFields": {"title": {"weight": 1}}}) == {"queryFields.title"}
    # price is mapped but not searchable
    assert _invalid(client, tenant, index_id, {**GOOD, "queryFields": {"price": {"weight": 1}}}) == {"queryFields.price"}
    # brand is not sortable
    bad_sort = {**GOOD, "sortOptions": [{"key": "b", "label": "B", "sort": ["brand:asc"]}]}
    assert _invalid(client, tenant, index_id, bad_sort) == {"sortOptions.0.sort.0"}
    # name is not facetable
    assert _invalid(client, tenant, index_id, {**GOOD, "facets": ["brand", "name"]}) == {"facets.1"}
    # out-of-range values are PROFILE_INVALID too, with their paths
    assert _invalid(client, tenant, index_id, {**GOOD, "queryFields": {"name": {"weight": 500}}}) == {
        "queryFields.name.weight"
    }
    assert _invalid(client, tenant, index_id, {**GOOD, "perPage": 0}) == {"perPage"}
    assert _invalid(client, tenant, index_id, {**GOOD, "defaultSort": "nope"}) == {"defaultSort"}
    assert _invalid(client, tenant, index_id, {**GOOD, "boosts": [{"field": "brand", "weight": 1}]}) == {
        "boosts.0.field"
    }
    listed = client.get(profiles_url(tenant, index_id), headers=tenant.headers).json()
    assert listed["items"] == []


def test_profile_fields_in_usage_registry(app, client):
    tenant = make_tenant(app)
    index_id = create_index(client, tenant)["id"]
    profile = client.post(profiles_url(tenant, index_id), json=GOOD, headers=tenant.headers).json()
    usage = client.get(tenant.url(index_id, "/mapping/usage"), headers=tenant.headers).json()["fields"]
    assert {"kind": "profile", "id": profile["id"], "name": "storefront", "path": "queryFields.name"} in usage["name"]

    mapping = client.get(tenant.url(index_id, "/mapping"), headers=tenant.headers).json()
    fields = dict(mapping["fields"])
    fields["name"] = {**fields["name"], "searchable": False}
    response = client.put(tenant.url(index_id, "/mapping"), json={**mapping, "fields": fields}, headers=tenant.headers)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "MAPPING_BREAKS_CONFIG"
    assert f"profiles.{profile['id']}.queryFields.name" in {d["path"] for d in error["details"]}


def test_profile_access_rules(app, client):
    tenant = make_tenant(app)
    index_id = create_index(client, tenant)["id"]
    read = client.post(profiles_url(tenant, index_id), json=GOOD, headers=tenant.read_headers)
    assert read.status_code == 403 and read.json()["error"]["code"] == "FORBIDDEN"

    other = make_account(app)
    other_project = make_project(app, other)
    other_key = make_key(app, other_project)
    for url in (profiles_url(tenant, index_id), f"/v1/projects/{other_project}/indices/{index_id}/profiles"):
        response = client.get(url, headers=bearer(other_key))
        assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"

    scoped = make_key(app, tenant.project_id, access="full", index_id="idx_other")
    response = client.get(profiles_url(tenant, index_id), headers=bearer(scoped))
    assert response.status_code == 404

    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=["https://shop.example"])
    response = client.get(profiles_url(tenant, index_id), headers={**bearer(public), "Origin": "https://shop.example"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
