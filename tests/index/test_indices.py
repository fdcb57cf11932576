from tests.factories import add_member, bearer, make_account, make_key, make_project
from tests.index.helpers import (
    PRODUCT_MAPPING,
    create_index,
    make_tenant,
    products,
    search,
    upload,
    wait_task,
)


def test_create_list_get_delete(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2, replicas=1, language="de")
    assert index["id"].startswith("idx_")
    assert index["shards"] == 2 and index["language"] == "de" and index["status"] == "ready"
    assert index["documentCount"] == 0 and index["integration"] is None
    assert index["createdAt"].endswith("Z")
    listed = client.get(tenant.url(), headers=tenant.read_headers).json()
    assert [i["id"] for i in listed["items"]] == [index["id"]] and listed["nextCursor"] is None
    got = client.get(tenant.url(index["id"]), headers=tenant.read_headers)
    assert got.status_code == 200 and got.json()["name"] == "products"
    assert client.delete(tenant.url(index["id"]), headers=tenant.headers).status_code == 204
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).status_code == 404
    assert client.delete(tenant.url(index["id"]), headers=tenant.headers).status_code == 404


def test_list_pages(app, client):
    tenant = make_tenant(app)
    ids = {create_index(client, tenant, name=f"i{n}")["id"] for n in range(3)}
    first = client.get(tenant.url() + "?limit=2", headers=tenant.headers).json()
    assert len(first["items"]) == 2 and first["nextCursor"]
    second = client.get(tenant.url() + f"?limit=2&cursor={first['nextCursor']}", headers=tenant.headers).json()
    assert second["nextCursor"] is None
    assert {i["id"] for i in first["items"] + second["items"]} == ids


def test_create_validation(app, client):
    tenant = make_tenant(app)
    for body in (
        {"name": ""},
        {"name": "x", "shards": 65},
        {"name": "x", "shards": 0},
        {"name": "x", "replicas": 9},
        {"name": "x", "language": "xx"},
        {"name": "x", "extra": 1},
        {},
    ):
        response = client.post(tenant.url(), json=body, headers=tenant.headers)
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    bad = client.post(tenant.url(), json={"name": "x", "mapping": {"fields": {"price": {"type": "money"}}}}, headers=tenant.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["details"][0]["path"] == "mapping.fields.price.type"
    malformed = client.post(tenant.url(), content=b"{not json", headers={**tenant.headers, "content-type": "application/json"})
    assert malformed.status_code == 400


def test_duplicate_name_and_quota(app, client):
    tenant = make_tenant(app)
    create_index(client, tenant, name="a")
    dup = client.post(tenant.url(), json={"name": "a"}, headers=tenant.headers)
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "CONFLICT"
    create_index(client, tenant, name="b")
    create_index(client, tenant, name="c")
    over = client.post(tenant.url(), json={"name": "d"}, headers=tenant.headers)  # free plan: 3 per project
    assert over.status_code == 403 and over.json()["error"]["code"] == "QUOTA_EXCEEDED"


def test_access_rules(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    # read key on write routes
    assert client.post(tenant.url(), json={"name": "z"}, headers=tenant.read_headers).status_code == 403
    assert client.delete(tenant.url(index["id"]), headers=tenant.read_headers).status_code == 403
    assert client.put(tenant.url(index["id"], "/mapping"), json=PRODUCT_MAPPING, headers=tenant.read_headers).status_code == 403
    assert client.post(tenant.url(index["id"], "/reindex"), headers=tenant.read_headers).status_code == 403
    # signed-in member: reads yes, admin routes no
    member = add_member(app, tenant.account, "member")
    assert client.get(tenant.url(index["id"]), headers=member.headers).status_code == 200
    forbidden = client.post(tenant.url(), json={"name": "z"}, headers=member.headers)
    assert forbidden.status_code == 403 and forbidden.json()["error"]["code"] == "FORBIDDEN"
    assert client.put(tenant.url(index["id"], "/facets"), json={"facets": []}, headers=member.headers).status_code == 403
    admin = add_member(app, tenant.account, "admin")
    assert client.put(tenant.url(index["id"], "/facets"), json={"facets": []}, headers=admin.headers).status_code == 200
    # other tenants: 404
    other = make_tenant(app)
    assert client.get(tenant.url(index["id"]), headers=other.headers).status_code == 404
    assert client.get(other.url(index["id"]), headers=other.headers).status_code == 404
    assert client.get(tenant.url(), headers=other.headers).status_code == 404
    assert client.delete(other.url(index["id"]), headers=other.headers).status_code == 404
    assert client.get(tenant.url("idx_unknown"), headers=tenant.headers).status_code == 404
    # index-scoped key: 404 on other indices, sees only its own in lists
    second = create_index(client, tenant, name="second")
    scoped = bearer(make_key(app, tenant.project_id, access="full", index_id=index["id"]))
    assert client.get(tenant.url(index["id"]), headers=scoped).status_code == 200
    assert client.get(tenant.url(second["id"]), headers=scoped).status_code == 404
    assert client.post(tenant.url(second["id"], "/documents"), json=[], headers=scoped).status_code == 404
    assert [i["id"] for i in client.get(tenant.url(), headers=scoped).json()["items"]] == [index["id"]]


def test_mapping_change_rebuilds(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(20))
    assert client.get(tenant.url(index["id"], "/mapping"), headers=tenant.read_headers).json() == PRODUCT_MAPPING
    mapping = {"idField": "id", "fields": {**PRODUCT_MAPPING["fields"], "color": {"type": "keyword", "filterable": True}}}
    mapping["fields"]["name"] = {"type": "text", "searchable": False}
    response = client.put(tenant.url(index["id"], "/mapping"), json=mapping, headers=tenant.headers)
    assert response.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded" and task["type"] == "mapping.update"
    assert client.get(tenant.url(index["id"], "/mapping"), headers=tenant.headers).json() == mapping
    assert search(client, tenant, index["id"], q="Acme")["total"] == 5  # brand still searchable
    bad = client.put(tenant.url(index["id"], "/mapping"), json={"fields": {"x": {"type": "nope"}}}, headers=tenant.headers)
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["path"] == "fields.x.type"
    assert client.put(tenant.url(index["id"], "/mapping"), json=[1], headers=tenant.headers).status_code == 400


def test_facets_and_usage(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/facets")
    body = {"facets": [{"field": "brand", "label": "Brand"},
                       {"field": "price", "type": "range", "ranges": [{"to": 20, "label": "cheap"}, {"from": 20, "label": "dear"}]}]}
    response = client.put(url, json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    facets = client.get(url, headers=tenant.read_headers).json()["facets"]
    assert facets[0] == {"field": "brand", "type": "terms", "label": "Brand", "size": 10, "sort": "count"}
    not_facetable = client.put(url, json={"facets": [{"field": "name"}]}, headers=tenant.headers)
    assert not_facetable.status_code == 400
    assert not_facetable.json()["error"]["details"][0]["path"] == "facets.0.field"
    assert client.put(url, json={"facets": [{"field": "unknown"}]}, headers=tenant.headers).status_code == 400
    assert client.put(url, json=[{"field": "brand"}], headers=tenant.headers).status_code == 400
    usage = client.get(tenant.url(index["id"], "/mapping/usage"), headers=tenant.read_headers).json()
    assert usage["fields"]["brand"] == [{"kind": "facet", "id": "0", "name": "Brand", "path": "field"}]
    # a mapping that drops a facet's capability breaks the configuration
    mapping = {"idField": "id", "fields": {**PRODUCT_MAPPING["fields"], "brand": {"type": "keyword"}}}
    broken = client.put(tenant.url(index["id"], "/mapping"), json=mapping, headers=tenant.headers)
    assert broken.status_code == 409
    error = broken.json()["error"]
    assert error["code"] == "MAPPING_BREAKS_CONFIG"
    assert error["details"][0]["path"] == "facets.0.field" and error["details"][0]["kind"] == "facet"
    removed = {"idField": "id", "fields": {k: v for k, v in PRODUCT_MAPPING["fields"].items() if k != "price"}}
    assert client.put(tenant.url(index["id"], "/mapping"), json=removed, headers=tenant.headers).status_code == 409
    session = client.post(tenant.url(index["id"], "/replace-sessions"), json={"mapping": removed}, headers=tenant.headers)
    assert session.status_code == 409 and session.json()["error"]["code"] == "MAPPING_BREAKS_CONFIG"


def test_integration_rules(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/integration")
    body = {"platform": "shopware", "name": "Shopware plugin", "version": "1.2", "settings": {"manageMapping": True}}
    # a signed-in user (even the owner) may not connect it
    user = client.put(url, json=body, headers=tenant.account.headers)
    assert user.status_code == 403 and user.json()["error"]["code"] == "INTEGRATION_KEY_ONLY"
    assert client.put(url, json=body, headers=tenant.read_headers).status_code == 403
    assert client.put(url, json={"platform": "x"}, headers=tenant.headers).status_code == 400
    response = client.put(url, json=body, headers=tenant.headers)
    assert response.status_code == 200, response.text
    got = client.get(tenant.url(index["id"]), headers=tenant.headers).json()["integration"]
    assert got["platform"] == "shopware" and got["settings"] == {"manageMapping": True}
    # manageMapping: only the plugin's own key changes the mapping
    other_key = bearer(make_key(app, tenant.project_id, access="full"))
    managed = client.put(tenant.url(index["id"], "/mapping"), json=PRODUCT_MAPPING, headers=other_key)
    assert managed.status_code == 409 and managed.json()["error"]["code"] == "MAPPING_MANAGED_BY_INTEGRATION"
    by_user = client.put(tenant.url(index["id"], "/mapping"), json=PRODUCT_MAPPING, headers=tenant.account.headers)
    assert by_user.status_code == 409
    assert client.put(tenant.url(index["id"], "/mapping"), json=PRODUCT_MAPPING, headers=tenant.headers).status_code == 202
    # feed is refused while connected
    feed = client.put(tenant.url(index["id"], "/feed"), json={"url": "https://example.com/f.json", "format": "json"},
                      headers=tenant.headers)
    assert feed.status_code == 409 and feed.json()["error"]["code"] == "INDEX_HAS_INTEGRATION"
    sync = client.post(tenant.url(index["id"], "/feed/sync"), headers=tenant.headers)
    assert sync.status_code == 409 and sync.json()["error"]["code"] == "INDEX_HAS_INTEGRATION"
    # disconnect: by an admin user too, idempotent
    assert client.delete(url, headers=tenant.account.headers).status_code == 204
    assert client.delete(url, headers=tenant.account.headers).status_code == 204
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["integration"] is None
    assert client.put(tenant.url(index["id"], "/mapping"), json=PRODUCT_MAPPING, headers=other_key).status_code == 202


def test_reindex_and_cancel(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=2)
    upload(client, tenant, index["id"], products(30))
    response = client.post(tenant.url(index["id"], "/reindex"), headers=tenant.headers)
    assert response.status_code == 202
    task = wait_task(client, tenant.headers, tenant.project_id, response.json()["taskId"])
    assert task["status"] == "succeeded" and task["type"] == "index.reindex"
    assert search(client, tenant, index["id"], q="phone")["total"] == 15
    nothing = client.post(tenant.url(index["id"], "/reindex/cancel"), headers=tenant.headers)
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "CONFLICT"
    runner = app.state.runtime.task_runner
    with runner.paused():
        first = client.post(tenant.url(index["id"], "/reindex"), headers=tenant.headers)
        again = client.post(tenant.url(index["id"], "/reindex"), headers=tenant.headers)
        assert again.status_code == 409
        canceled = client.post(tenant.url(index["id"], "/reindex/cancel"), headers=tenant.headers)
        assert canceled.status_code == 200
        assert canceled.json() == {"taskId": first.json()["taskId"], "status": "canceled"}
    assert search(client, tenant, index["id"], q="phone")["total"] == 15
    assert client.get(tenant.url(index["id"]), headers=tenant.headers).json()["status"] == "ready"


def test_delete_index_other_project_same_org(app, client):
    account = make_account(app)
    p1, p2 = make_project(app, account), make_project(app, account)
    key1 = bearer(make_key(app, p1))
    response = client.post(f"/v1/projects/{p1}/indices", json={"name": "x"}, headers=key1)
    index_id = response.json()["id"]
    assert client.get(f"/v1/projects/{p2}/indices/{index_id}", headers=account.headers).status_code == 404
