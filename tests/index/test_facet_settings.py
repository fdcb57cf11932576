"""Facet settings a facet's type would ignore are refused with their path, never stored."""

from __future__ import annotations

from tests.index.helpers import create_index, make_tenant, products, search, upload

RANGES = [{"to": 15, "label": "cheap"}, {"from": 15, "label": "dear"}]


def test_facet_settings_the_type_would_ignore_are_refused(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    url = tenant.url(index["id"], "/facets")
    for facet, path in (
        ({"field": "brand", "ranges": RANGES}, "facets.0.ranges"),
        ({"field": "price", "type": "range", "ranges": RANGES, "size": 5}, "facets.0.size"),
        ({"field": "price", "type": "range", "ranges": RANGES, "sort": "alpha"}, "facets.0.sort"),
        ({"field": "brand", "bogus": 1}, "facets[0].bogus"),  # schema errors index lists with [i]
    ):
        response = client.put(url, json={"facets": [facet]}, headers=tenant.headers)
        assert response.status_code == 400, facet
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert path in [d["path"] for d in error["details"]], error
    assert client.get(url, headers=tenant.headers).json() == {"facets": []}


def test_what_get_answers_can_be_sent_back_and_is_applied(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload(client, tenant, index["id"], products(8))
    url = tenant.url(index["id"], "/facets")
    body = {"facets": [{"field": "brand", "size": 2, "sort": "alpha"},
                       {"field": "price", "type": "range", "label": "Price", "ranges": RANGES}]}
    assert client.put(url, json=body, headers=tenant.headers).status_code == 200
    got = client.get(url, headers=tenant.headers).json()
    assert got["facets"] == [
        {"field": "brand", "type": "terms", "label": "brand", "size": 2, "sort": "alpha"},
        {"field": "price", "type": "range", "label": "Price",
         "ranges": [{"to": 15.0, "label": "cheap"}, {"from": 15.0, "label": "dear"}]},
    ]
    again = client.put(url, json=got, headers=tenant.headers)
    assert again.status_code == 200 and again.json() == got
    answer = search(client, tenant, index["id"], q="", facets=["brand", "price"])
    assert [f["value"] for f in answer["facets"]["brand"]] == ["Acme", "Nova"]
    assert [(f["label"], f["count"]) for f in answer["facets"]["price"]] == [("cheap", 5), ("dear", 3)]
