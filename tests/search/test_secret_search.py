"""The secret search route: saved profiles by key, inline profiles, defaults."""

from __future__ import annotations

from tests.index.helpers import create_index, make_tenant, products, upload


def _setup(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(20))
    return tenant, index


def test_saved_profile_by_key_and_inline_profile(app, client):
    tenant, index = _setup(app, client)
    url = tenant.url(index["id"], "/search")
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers, json={
        "name": "cheap first", "queryFields": {"name": {"weight": 3}}, "perPage": 3,
        "sortOptions": [{"key": "cheap", "label": "Cheap", "sort": ["price:asc"]}], "defaultSort": "cheap",
    }).json()
    saved = client.post(url, json={"q": "phone", "profileKey": profile["profileKey"]}, headers=tenant.read_headers)
    assert saved.status_code == 200, saved.text
    body = saved.json()
    assert body["perPage"] == 3 and body["sort"] == "cheap"
    assert [h["document"]["price"] for h in body["hits"]] == sorted(h["document"]["price"] for h in body["hits"])

    inline = client.post(url, headers=tenant.headers, json={
        "q": "phone", "profile": {"queryFields": {"name": {"weight": 1}}, "perPage": 2, "operator": "or"}})
    assert inline.status_code == 200 and inline.json()["perPage"] == 2

    # another index's profile key is not found here
    other = create_index(client, tenant, name="other")
    response = client.post(tenant.url(other["id"], "/search"), json={"q": "x", "profileKey": profile["profileKey"]},
                           headers=tenant.headers)
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"


def test_inline_profile_invalid(app, client):
    tenant, index = _setup(app, client)
    url = tenant.url(index["id"], "/search")
    for profile, path in (({"queryFields": {"title": {"weight": 1}}}, "queryFields.title"),
                          ({"queryFields": {"name": {"weight": 0}}}, "queryFields.name.weight"),
                          ({"facets": ["name"]}, "facets.0"),
                          ({"sortOptions": [{"key": "b", "label": "b", "sort": ["brand:asc"]}]}, "sortOptions.0.sort.0")):
        response = client.post(url, json={"q": "x", "profile": profile}, headers=tenant.headers)
        assert response.status_code == 400, profile
        error = response.json()["error"]
        assert error["code"] == "PROFILE_INVALID"
        assert path in {d["path"] for d in error["details"]}


def test_query_text_is_plain_text(app, client):
    tenant, index = _setup(app, client)
    url = tenant.url(index["id"], "/search")
    for q in ("name:phone", "phone*", "phone AND laptop", "(phone", '"phone', "phone^5", "phone~2", "-phone"):
        response = client.post(url, json={"q": q}, headers=tenant.headers)
        assert response.status_code == 200, (q, response.text)
    # a field prefix is not field syntax: "name:phone" finds what "name phone" finds
    assert client.post(url, json={"q": "name:phone"}, headers=tenant.headers).json()["total"] == \
        client.post(url, json={"q": "name phone"}, headers=tenant.headers).json()["total"]
