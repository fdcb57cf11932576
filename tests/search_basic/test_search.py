import threading

from tests.factories import add_member, bearer, make_key
from tests.index.helpers import create_index, make_tenant, products, search, upload, wait_task


def _setup(app, client, n=40, shards=2):
    tenant = make_tenant(app)
    index = create_index(client, tenant, shards=shards)
    upload(client, tenant, index["id"], products(n))
    return tenant, index


def test_search_answer_shape_filters_sort_paging(app, client):
    tenant, index = _setup(app, client)
    answer = search(client, tenant, index["id"], q="phone")
    assert set(answer) == {"hits", "total", "page", "perPage", "facets", "sort", "appliedRules", "queryId", "tookMs"}
    assert answer["total"] == 20 and answer["page"] == 1 and answer["perPage"] == 20
    assert set(answer["hits"][0]) == {"id", "score", "document", "highlights"}
    filtered = search(client, tenant, index["id"], q="", filters={"brand": ["Acme", "Zed"], "price": {"gte": 20, "lt": 30}})
    assert filtered["total"] == 4
    assert all(h["document"]["brand"] in ("Acme", "Zed") and 20 <= h["document"]["price"] < 30 for h in filtered["hits"])
    assert search(client, tenant, index["id"], q="", filters={"inStock": True, "not": {"brand": ["Acme"]}})["total"] > 0
    ordered = search(client, tenant, index["id"], q="", sort="price:desc", perPage=5)
    assert [h["document"]["price"] for h in ordered["hits"]] == [49.0, 48.0, 47.0, 46.0, 45.0]
    page2 = search(client, tenant, index["id"], q="", sort="price:desc", perPage=5, page=2)
    assert page2["hits"][0]["document"]["price"] == 44.0
    facets = search(client, tenant, index["id"], q="", facets=["brand", "tags"])["facets"]
    assert {f["value"]: f["count"] for f in facets["brand"]} == {"Acme": 10, "Zed": 10, "Nova": 10, "Orbit": 10}
    assert facets["tags"][0] == {"value": "sale", "count": 32}


def test_configured_facets_and_ranges(app, client):
    tenant, index = _setup(app, client)
    body = {"facets": [{"field": "brand", "size": 2},
                       {"field": "price", "type": "range", "ranges": [{"to": 20, "label": "cheap"}, {"from": 20, "label": "dear"}]}]}
    assert client.put(tenant.url(index["id"], "/facets"), json=body, headers=tenant.headers).status_code == 200
    facets = search(client, tenant, index["id"], q="")["facets"]
    assert len(facets["brand"]) == 2
    assert facets["price"] == [{"from": None, "to": 20, "label": "cheap", "count": 10},
                               {"from": 20, "to": None, "label": "dear", "count": 30}]


def test_search_bad_input_and_access(app, client):
    tenant, index = _setup(app, client, n=5)
    url = tenant.url(index["id"], "/search")
    for body in ({"q": 5}, {"perPage": -1}, {"perPage": 101}, {"page": 0}, {"unknown": 1}, [1]):
        response = client.post(url, json=body, headers=tenant.headers)
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    not_filterable = client.post(url, json={"q": "", "filters": {"name": "x"}}, headers=tenant.headers)
    assert not_filterable.status_code == 400
    assert client.post(url, json={"q": "x"}, headers=tenant.read_headers).status_code == 200
    member = add_member(app, tenant.account, "member")
    assert client.post(url, json={"q": "x"}, headers=member.headers).status_code == 200
    other = make_tenant(app)
    assert client.post(url, json={"q": "x"}, headers=other.headers).status_code == 404
    assert client.post(other.url(index["id"], "/search"), json={"q": "x"}, headers=other.headers).status_code == 404
    second = create_index(client, tenant, name="second")
    scoped = bearer(make_key(app, tenant.project_id, access="read", index_id=second["id"]))
    assert client.post(url, json={"q": "x"}, headers=scoped).status_code == 404
    assert client.post(url, json={"q": "x"}).status_code == 401


def test_reindex_while_searching_never_fails(app, client):
    tenant, index = _setup(app, client, n=300, shards=2)
    # three searchers in a loop outrun the free plan's searches per second: this is about reindexing
    plan = client.put(f"/v1/orgs/{tenant.account.org_id}/plan", json={"plan": "enterprise"},
                      headers={"Authorization": f"Bearer {tenant.account.token}"})
    assert plan.status_code == 200, plan.text
    failures, answers = [], []
    stop = threading.Event()

    def searcher():
        while not stop.is_set():
            response = client.post(tenant.url(index["id"], "/search"), json={"q": "phone"}, headers=tenant.headers)
            if response.status_code != 200 or response.json()["total"] != 150:
                failures.append((response.status_code, response.text[:200]))
            answers.append(1)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(3):
            task_id = client.post(tenant.url(index["id"], "/reindex"), headers=tenant.headers).json()["taskId"]
            assert wait_task(client, tenant.headers, tenant.project_id, task_id)["status"] == "succeeded"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert answers and not failures


def test_secret_search_resolution_is_cached_but_never_stale(app, client):
    """A secret key's repeated searches skip the database, yet every access rule and every change
    (profile saved, plan changed, index deleted) applies at once."""
    tenant, index = _setup(app, client, n=40)
    url = tenant.url(index["id"], "/search")
    assert search(client, tenant, index["id"], q="phone")["total"] == 20  # resolves and caches
    # other callers never ride on that cache entry
    other = make_tenant(app)
    assert client.post(url, json={"q": "x"}, headers=other.headers).status_code == 404
    second = create_index(client, tenant, name="second")
    scoped = bearer(make_key(app, tenant.project_id, access="read", index_id=second["id"]))
    assert client.post(url, json={"q": "x"}, headers=scoped).status_code == 404
    public = bearer(make_key(app, tenant.project_id, key_type="public", allowed_origins=["https://shop.example"]))
    assert client.post(url, json={"q": "x"}, headers=public).status_code == 403
    assert client.post(tenant.url(second["id"], "/search").replace(tenant.project_id, other.project_id),
                       json={"q": "x"}, headers=tenant.headers).status_code == 404
    # a saved profile: its settings change what the cached resolution answers
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "p", "queryFields": {"name": {"weight": 1}}, "perPage": 5}).json()
    assert len(client.post(url, json={"q": "phone", "profileKey": profile["profileKey"]},
                           headers=tenant.headers).json()["hits"]) == 5
    changed = client.put(tenant.url(index["id"], f"/profiles/{profile['id']}"), headers=tenant.headers,
                         json={"name": "p", "queryFields": {"name": {"weight": 1}}, "perPage": 3})
    assert changed.status_code == 200, changed.text
    assert len(client.post(url, json={"q": "phone", "profileKey": profile["profileKey"]},
                           headers=tenant.headers).json()["hits"]) == 3
    # the plan's quota applies from the next search: the free plan allows 100 in 10 seconds
    assert search(client, tenant, index["id"], q="phone")["total"] == 20  # cached under the free plan
    owner = {"Authorization": f"Bearer {tenant.account.token}"}
    assert client.put(f"/v1/orgs/{tenant.account.org_id}/plan", json={"plan": "enterprise"}, headers=owner).status_code == 200
    statuses = [client.post(url, json={"q": "phone"}, headers=tenant.headers).status_code for _ in range(110)]
    assert statuses.count(429) == 0
    # a deleted index is gone at once
    assert client.delete(tenant.url(index["id"]), headers=tenant.headers).status_code == 204
    gone = client.post(url, json={"q": "phone"}, headers=tenant.headers)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"


def test_storefront_handles_never_reach_secret_resolutions(app, client):
    """A public key names its profile in the URL: no handle may hit what the secret route cached
    (that resolution has no profile filters)."""
    tenant, index = _setup(app, client, n=40)
    public = bearer(make_key(app, tenant.project_id, key_type="public", allowed_origins=["https://shop.example"]))
    headers = {**public, "Origin": "https://shop.example"}
    assert search(client, tenant, index["id"], q="phone")["total"] == 20  # the secret route resolves
    for handle in (index["id"], f"secret|{index['id']}|", f"secret%7C{index['id']}%7C", f"('{index['id']}', None)"):
        response = client.post(f"/v1/search/{handle}", json={"q": "phone"}, headers=headers)
        assert response.status_code == 404, handle


def test_secret_search_refuses_callers_before_reading_the_body(app, client):
    """As with every labelled route: 401 / 403 / 404 come before a bad body's 400."""
    tenant, index = _setup(app, client, n=5)
    url = tenant.url(index["id"], "/search")
    bad = {"q": 5}
    assert client.post(url, json=bad).status_code == 401
    other = make_tenant(app)
    assert client.post(url, json=bad, headers=other.headers).status_code == 404
    public = bearer(make_key(app, tenant.project_id, key_type="public", allowed_origins=["https://shop.example"]))
    assert client.post(url, json=bad, headers=public).status_code == 403
    outsider = add_member(app, other.account, "member")
    assert client.post(url, json=bad, headers=outsider.headers).status_code == 404
    assert client.post(url, json=bad, headers=tenant.headers).status_code == 400


def test_profile_changes_are_committed_before_the_epoch_moves(app, client, monkeypatch):
    """A search resolving right after the epoch moved must read the new settings, else it would
    cache the old ones under the new epoch."""
    from control_plane.profile.models import Profile
    from tests.factories import runtime_of

    tenant, index = _setup(app, client, n=5)
    profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers,
                          json={"name": "p", "queryFields": {"name": {"weight": 1}}, "perPage": 5}).json()
    seen = []
    epochs = runtime_of(app).epochs
    real_bump = epochs.bump

    def bump(index_id):
        with runtime_of(app).sessions() as db:  # another session: what a concurrent search reads
            row = db.get(Profile, profile["id"])
            seen.append(None if row is None else row.settings.get("perPage"))
        return real_bump(index_id)

    monkeypatch.setattr(epochs, "bump", bump)  # bump_after_commit calls it
    changed = client.put(tenant.url(index["id"], f"/profiles/{profile['id']}"), headers=tenant.headers,
                         json={"name": "p", "queryFields": {"name": {"weight": 1}}, "perPage": 3})
    assert changed.status_code == 200
    assert client.delete(tenant.url(index["id"], f"/profiles/{profile['id']}"), headers=tenant.headers).status_code == 204
    assert seen == [3, None]
