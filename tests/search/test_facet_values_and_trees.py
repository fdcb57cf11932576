"""Facet value search and category trees over the API (CONTRACT §9), on the Best Buy catalog, with
counts checked against a plain-Python reference."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchmarks.common import FIELDS, MAPPING, load_products
from control_plane.org.models import Organization
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.index.helpers import create_catalog_index, create_index
from tests.index.helpers import make_tenant as make_test_tenant

SEP = " > "
ORIGIN = "https://shop.example.com"
TREE_MAPPING = {**MAPPING, "fields": {**MAPPING["fields"],
                                     "paths": {"type": "keyword[]", "facetable": True, "filterable": True}}}
FACETS = [{"field": "brand", "type": "terms", "size": 20},
          {"field": "paths", "type": "hierarchy", "size": 50},
          {"field": "price", "type": "range", "ranges": [{"to": 100, "label": "cheap"}, {"from": 100, "label": "dear"}]}]


def _catalog() -> list[dict[str, Any]]:
    return [{**p, "paths": [SEP.join(p["categories"][: i + 1]) for i in range(len(p["categories"]))]}
            for p in load_products()]


@pytest.fixture(scope="module")
def shop(app):
    catalog = _catalog()
    with StartedAppClient(app) as client:
        tenant = make_test_tenant(app)
        with app.state.runtime.sessions.begin() as db:
            db.get(Organization, tenant.account.org_id).plan = "enterprise"
        index = create_catalog_index(client, tenant, catalog, TREE_MAPPING, "trees")
        facets = client.put(tenant.url(index["id"], "/facets"), json={"facets": FACETS}, headers=tenant.headers)
        assert facets.status_code == 200, facets.text
        assert facets.json()["facets"][1]["separator"] == SEP
        profile = client.post(tenant.url(index["id"], "/profiles"), headers=tenant.headers, json={
            "name": "web", "queryFields": FIELDS, "facets": ["brand", "paths", "price"]}).json()
        public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    return {"tenant": tenant, "index": index, "profile": profile["profileKey"], "catalog": catalog,
            "public": {**bearer(public), "Origin": ORIGIN}}


def _search(client, shop, body) -> dict[str, Any]:
    response = client.post(f"/v1/search/{shop['profile']}", json=body, headers=shop["public"])
    assert response.status_code == 200, response.text
    return response.json()


def _under(doc: dict[str, Any], paths: list[str]) -> bool:
    return any(p == r or p.startswith(r + SEP) for p in doc["paths"] for r in paths)


def _walk(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for node in nodes:
        out[node["path"]] = node
        out.update(_walk(node["children"]))
    return out


@pytest.mark.parametrize("refined", [[], ["Cell Phones"], ["Cell Phones > Unlocked Cell Phones"],
                                     ["Cell Phones > Prepaid Phones", "Audio"]])
def test_category_tree_levels_counts_and_path_filters(client, shop, refined):
    body: dict[str, Any] = {"q": "", "filters": {"price": {"lt": 400}}, "perPage": 0}
    if refined:
        body["filters"]["paths"] = refined
    answer = _search(client, shop, body)
    pool = [d for d in shop["catalog"] if d["price"] < 400]
    counts = Counter(p for d in pool for p in d["paths"])  # every level held: a node counts its holders
    nodes = _walk(answer["facets"]["paths"])
    level0 = [n for n in answer["facets"]["paths"]]
    assert [n["level"] for n in level0] == [0] * len(level0) and level0
    assert all(n["count"] == counts[path] and n["value"] == path.rpartition(SEP)[2] for path, n in nodes.items())
    assert [n["count"] for n in level0] == sorted((n["count"] for n in level0), reverse=True)
    opened = {SEP.join(r.split(SEP)[: i + 1]) for r in refined for i in range(r.count(SEP) + 1)}
    for path, node in nodes.items():
        children = {p for p in counts if p.rpartition(SEP)[0] == path}
        if path in opened:
            assert {c["path"] for c in node["children"]} == set(list(children)[:50]) | (children & opened)
            assert all(c["level"] == node["level"] + 1 for c in node["children"])
        else:
            assert node["children"] == []
    want = [d for d in pool if not refined or _under(d, refined)]
    assert answer["total"] == len(want)


def test_facet_value_search_storefront(client, shop):
    url = f"/v1/search/{shop['profile']}/facet-values"
    response = client.post(url, json={"field": "brand", "q": "sam", "query": "case", "filters": {
        "brand": "Apple", "price": {"lt": 50}}}, headers=shop["public"])
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ORIGIN
    values = response.json()["values"]
    search = _search(client, shop, {"q": "case", "filters": {"price": {"lt": 50}}, "facets": ["brand"], "perPage": 0})
    counts = {v["value"]: v["count"] for v in search["facets"]["brand"]}
    assert values and all(v["value"].lower().startswith("sam") or " sam" in v["value"].lower() for v in values)
    assert all(counts.get(v["value"], v["count"]) == v["count"] for v in values)
    assert [v["count"] for v in values] == sorted((v["count"] for v in values), reverse=True)
    assert values[0]["highlighted"].startswith("<em>Sam</em>")
    typo = client.post(url, json={"field": "brand", "q": "samsnug"}, headers=shop["public"]).json()["values"]
    assert "Samsung" in [v["value"] for v in typo]
    limited = client.post(url, json={"field": "brand", "q": "", "limit": 3}, headers=shop["public"]).json()["values"]
    assert len(limited) == 3


def test_facet_value_search_refusals(app, client, shop):
    url = f"/v1/search/{shop['profile']}/facet-values"
    for body, path in (({"field": "name", "q": "a"}, "field"), ({"field": "price", "q": "1"}, "field"),
                       ({"field": "brand", "limit": 101}, "limit"), ({"q": "a"}, "field"),
                       ({"field": "brand", "filters": {"cost": 1}}, "filters.cost")):
        response = client.post(url, json=body, headers=shop["public"])
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == path, error
    assert client.post("/v1/search/pk_nope/facet-values", json={"field": "brand"},
                       headers=shop["public"]).status_code == 404
    other = make_test_tenant(app)
    theirs = create_index(client, other)
    foreign = client.post(other.url(theirs["id"], "/facet-values"), json={"field": "brand"},
                          headers=shop["tenant"].headers)
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "NOT_FOUND"


def test_facet_value_search_secret_route_and_in_multi_search(client, shop):
    tenant, index = shop["tenant"], shop["index"]
    secret = client.post(tenant.url(index["id"], "/facet-values"), headers=tenant.read_headers,
                         json={"field": "brand", "q": "ott", "profileKey": shop["profile"]})
    assert secret.status_code == 200, secret.text
    assert [v["value"] for v in secret.json()["values"]][:1] == ["OtterBox"]
    inline = client.post(tenant.url(index["id"], "/facet-values"), headers=tenant.read_headers,
                         json={"field": "brand", "q": "ott", "profile": {"queryFields": {"name": {}}}})
    assert inline.status_code == 200 and inline.json()["values"] == secret.json()["values"]
    batch = client.post("/v1/multi-search", headers=shop["public"], json={"queries": [
        {"profileKey": shop["profile"], "q": "case", "facetValues": {"field": "brand", "q": "ott"}},
        {"profileKey": shop["profile"], "q": "case"}]})
    assert batch.status_code == 200, batch.text
    first, second = batch.json()["results"]
    single = client.post(f"/v1/search/{shop['profile']}/facet-values", headers=shop["public"],
                         json={"field": "brand", "q": "ott", "query": "case"}).json()
    assert first["values"] == single["values"] and "hits" in second


def test_hierarchy_facets_need_keyword_fields(client, shop):
    tenant, index = shop["tenant"], shop["index"]
    bad = client.put(tenant.url(index["id"], "/facets"), headers=tenant.headers,
                     json={"facets": [{"field": "price", "type": "hierarchy"}]})
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["path"] == "facets.0.type"
    sep = client.put(tenant.url(index["id"], "/facets"), headers=tenant.headers,
                     json={"facets": [{"field": "brand", "separator": "/"}]})
    assert sep.status_code == 400 and sep.json()["error"]["details"][0]["path"] == "facets.0.separator"
