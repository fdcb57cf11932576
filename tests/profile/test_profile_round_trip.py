"""A profile as GET answers it can be sent back (CONTRACT §5): to PUT, to POST and inline in a
secret search; ``name``, ``profileKey`` and the read-only fields are accepted and ignored."""

from __future__ import annotations

from tests.index.helpers import create_index, make_tenant, products, upload

PROFILE = {
    "name": "storefront",
    "queryFields": {"name": {"weight": 10}, "brand": {"weight": 5}},
    "sortOptions": [{"key": "cheap", "label": "Price ascending", "sort": ["price:asc"]},
                    {"key": "dear", "label": "Price descending", "sort": ["price:desc"]}],
    "defaultSort": "cheap",
    "perPage": 3,
}
IDENTITY = ("id", "profileKey", "indexId", "createdAt", "updatedAt")


def _setup(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(12))
    created = client.post(tenant.url(index["id"], "/profiles"), json=PROFILE, headers=tenant.headers)
    assert created.status_code == 201, created.text
    url = tenant.url(index["id"], f"/profiles/{created.json()['id']}")
    got = client.get(url, headers=tenant.headers)
    assert got.status_code == 200
    return tenant, index, url, got.json()


def test_inline_profile_takes_what_get_answered_with_one_setting_changed(app, client):
    tenant, index, _url, profile = _setup(app, client)
    search_url = tenant.url(index["id"], "/search")
    saved = client.post(search_url, json={"q": "", "profileKey": profile["profileKey"]}, headers=tenant.headers)
    assert saved.status_code == 200
    assert saved.json()["perPage"] == 3 and saved.json()["sort"] == "cheap"
    assert [h["document"]["price"] for h in saved.json()["hits"]] == [10.0, 11.0, 12.0]

    inline = {**profile, "defaultSort": "dear", "name": "ignored", "profileKey": "pk_not_a_real_key"}
    response = client.post(search_url, json={"q": "", "profile": inline}, headers=tenant.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["sort"] == "dear" and body["perPage"] == 3
    assert [h["document"]["price"] for h in body["hits"]] == [21.0, 20.0, 19.0]
    assert body["total"] == 12


def test_inline_profile_is_still_checked_when_it_carries_read_only_fields(app, client):
    tenant, index, _url, profile = _setup(app, client)
    search_url = tenant.url(index["id"], "/search")
    for changed, path in (({"perPage": 0}, "perPage"), ({"queryFields": {"nope": {"weight": 1}}}, "queryFields.nope"),
                          ({"unknown": 1}, "unknown")):
        response = client.post(search_url, json={"q": "", "profile": {**profile, **changed}}, headers=tenant.headers)
        assert response.status_code == 400, changed
        error = response.json()["error"]
        assert error["code"] == "PROFILE_INVALID"
        assert path in [d["path"] for d in error["details"]]


def test_put_takes_what_get_answered_and_keeps_the_identity(app, client):
    tenant, index, url, profile = _setup(app, client)
    sent = {**profile, "perPage": 7, "id": "prf_other", "profileKey": "pk_other", "indexId": "idx_other",
            "createdAt": "2000-01-01T00:00:00Z"}
    response = client.put(url, json=sent, headers=tenant.headers)
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["perPage"] == 7
    assert {k: updated[k] for k in IDENTITY if k != "updatedAt"} == {
        k: profile[k] for k in IDENTITY if k != "updatedAt"
    }
    again = client.get(url, headers=tenant.headers).json()
    assert again["perPage"] == 7 and again["profileKey"] == profile["profileKey"]
    search = client.post(tenant.url(index["id"], "/search"), json={"q": "", "profileKey": profile["profileKey"]},
                         headers=tenant.headers)
    assert search.status_code == 200 and search.json()["perPage"] == 7


def test_post_of_what_get_answered_makes_a_new_profile(app, client):
    tenant, index, _url, profile = _setup(app, client)
    response = client.post(tenant.url(index["id"], "/profiles"), json={**profile, "name": "copy"},
                           headers=tenant.headers)
    assert response.status_code == 201, response.text
    copy = response.json()
    assert copy["id"] != profile["id"] and copy["profileKey"] != profile["profileKey"]
    assert copy["name"] == "copy" and copy["sortOptions"] == profile["sortOptions"]
