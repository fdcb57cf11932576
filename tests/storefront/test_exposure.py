"""Storefront exposure (issue 9, item 6): a public key filters and facets only on what the profile
exposes, and answers carry no field the profile doesn't retrieve."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import bearer, make_key
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant, upload

ORIGIN = "https://shop.example.com"
MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        **PRODUCT_MAPPING["fields"],
        "cost": {"type": "float", "filterable": True, "facetable": True, "sortable": True},
        "notes": {"type": "text", "searchable": True},
        "secret": {"type": "keyword", "filterable": True, "facetable": True, "retrievable": False},
    },
}
PROFILE: dict[str, Any] = {
    "name": "web",
    "queryFields": {"name": {"weight": 5}, "notes": {"weight": 1}},
    "facets": ["brand"],
    "retrieve": ["name", "brand", "price"],
    "highlight": ["name", "notes"],
}


def _docs() -> list[dict[str, Any]]:
    return [
        {"id": f"p{i}", "name": f"phone {i}", "brand": "Acme" if i % 2 else "Zed", "price": 10.0 + i,
         "stock": i, "cost": 3.0 + i, "notes": "phone supplier margin", "secret": f"s{i % 3}"}
        for i in range(6)
    ]


@pytest.fixture
def shop(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant, mapping=MAPPING)
    upload(client, tenant, index["id"], _docs())
    public = make_key(app, tenant.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])

    def profile(**settings: Any) -> str:
        response = client.post(tenant.url(index["id"], "/profiles"), json={**PROFILE, **settings},
                               headers=tenant.headers)
        assert response.status_code == 201, response.text
        return str(response.json()["profileKey"])

    return tenant, index, {**bearer(public), "Origin": ORIGIN}, profile


def _search(client: Any, key: str, headers: dict[str, str], **body: Any) -> Any:
    return client.post(f"/v1/search/{key}", json={"q": "", **body}, headers=headers)


def test_public_key_is_refused_hidden_filters_and_facets(client, shop):
    tenant, _index, public, profile = shop
    key = profile()
    refused = [
        ({"filters": {"cost": {"lt": 5}}}, ["filters.cost"]),
        ({"filters": {"not": {"cost": {"gte": 5}}}}, ["filters.not.cost"]),
        ({"filters": {"or": [{"brand": "Acme"}, {"and": [{"stock": 2}]}]}}, ["filters.or[1].and[0].stock"]),
        ({"filters": {"secret": "s1"}}, ["filters.secret"]),
        ({"facets": ["brand", "cost"]}, ["facets.1"]),
        ({"facets": ["price"]}, ["facets.0"]),  # retrieved, but the profile names its facets
        ({"filters": {"cost": 4, "price": {"gte": 1}}, "facets": ["secret"]}, ["filters.cost", "facets.0"]),
    ]
    for body, paths in refused:
        response = _search(client, key, public, **body)
        assert response.status_code == 400, (body, response.text)
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and [d["path"] for d in error["details"]] == paths, body
    allowed = _search(client, key, public, filters={"brand": "Acme", "price": {"gte": 12}, "id": ["p1", "p3", "p5"]},
                      facets=["brand"])
    assert allowed.status_code == 200, allowed.text
    assert {h["id"] for h in allowed.json()["hits"]} == {"p3", "p5"}
    # the same requests with a secret key on the same route are not restricted
    secret = tenant.read_headers
    for body, _paths in refused:
        assert _search(client, key, secret, **body).status_code == 200, body
    counted = _search(client, key, secret, facets=["cost"]).json()["facets"]["cost"]
    assert len(counted) == 6


def test_answers_carry_only_retrieved_fields(client, shop):
    _tenant, _index, public, profile = shop
    answer = _search(client, profile(), public, q="supplier phone", facets=["brand"]).json()
    assert answer["total"] == 6 and set(answer["facets"]) == {"brand"}
    for hit in answer["hits"]:
        assert set(hit["document"]) <= {"id", "name", "brand", "price"}
        assert set(hit["highlights"]) <= {"name"}  # notes is searched, not shown


def test_filter_fields_and_defaults(client, shop):
    tenant, index, public, profile = shop
    opened = profile(name="cost", filterFields=["cost"])
    assert _search(client, opened, public, filters={"cost": {"lt": 5}}).json()["total"] == 2
    assert _search(client, opened, public, filters={"price": 10}).status_code == 400  # not listed
    assert _search(client, opened, public, filters={"brand": "Zed"}).status_code == 200  # a facet
    # no retrieve, no facets: every retrievable field may be filtered and faceted
    everything = profile(name="all", retrieve=None, facets=None, highlight=None)
    assert _search(client, everything, public, filters={"cost": {"lt": 5}}, facets=["cost"]).status_code == 200
    hidden = _search(client, everything, public, filters={"secret": "s1"}, facets=["secret"])
    assert hidden.status_code == 400
    assert [d["path"] for d in hidden.json()["error"]["details"]] == ["filters.secret", "facets.0"]
    # filterFields are checked against the mapping when saved
    for fields, path in ((["nope"], "filterFields.0"), (["price", "notes"], "filterFields.1")):
        bad = client.post(tenant.url(index["id"], "/profiles"), json={**PROFILE, "name": "bad", "filterFields": fields},
                          headers=tenant.headers)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "PROFILE_INVALID"
        assert [d["path"] for d in bad.json()["error"]["details"]] == [path]
    got = client.get(tenant.url(index["id"], "/profiles"), headers=tenant.headers).json()["items"]
    assert {p["name"]: p["filterFields"] for p in got} == {"cost": ["cost"], "all": None}
