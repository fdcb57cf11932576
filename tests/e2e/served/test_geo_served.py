"""Geo search over real HTTP against a served process (both backends): an index of stores with a
``geopoint``, its upload acknowledged only once every point was checked (a bad one refuses the whole
upload with its path), then an area filter and a sort by distance through the storefront route with
the public key, the next write visible as soon as its task succeeded."""

from __future__ import annotations

from typing import Any

from tests.e2e.served.conftest import SHOP_ORIGIN, Served

MAPPING = {"fields": {"name": {"type": "text", "searchable": True},
                      "loc": {"type": "geopoint", "filterable": True, "sortable": True}}}
STORES = [
    {"id": "louvre", "name": "lamp shop", "loc": {"lat": 48.8606, "lng": 2.3376}},
    {"id": "bastille", "name": "lamp shop", "loc": {"lat": 48.8532, "lng": 2.3692}},
    {"id": "versailles", "name": "lamp shop", "loc": {"lat": 48.8049, "lng": 2.1204}},
    {"id": "online", "name": "lamp shop"},
]
NOTRE_DAME = {"lat": 48.8530, "lng": 2.3499}


def test_stores_near_a_shopper_over_http(served: Served) -> None:
    index_id = served.new_index("stores", MAPPING)
    base = f"/v1/projects/{served.tenant.project_id}/indices/{index_id}"
    bad = served.http.post(base + "/documents", json=STORES + [{"id": "moon", "loc": {"lat": 91, "lng": 0}}])
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "VALIDATION_ERROR", bad.text
    assert [d["path"] for d in bad.json()["error"]["details"]] == ["[4].loc"]
    served.wait(served.http.post(base + "/documents", json=STORES))
    profile = served.http.post(base + "/profiles", json={
        "name": "stores", "queryFields": {"name": {"weight": 1}}, "filterFields": ["loc"],
        "sortOptions": [{"key": "nearest", "label": "Nearest", "sort": ["loc:near"]}]})
    assert profile.status_code == 201, profile.text
    key = served.tenant.public_key
    assert key is not None

    def storefront(body: dict[str, Any]) -> dict[str, Any]:
        response = served.http.post(f"/v1/search/{profile.json()['profileKey']}", json=body,
                                    headers={"Authorization": f"Bearer {key}", "Origin": SHOP_ORIGIN})
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    nearest = storefront({"q": "lamp", "sort": "nearest", "near": NOTRE_DAME})
    assert [(h["id"], h["distanceM"] is None) for h in nearest["hits"]] == [
        ("louvre", False), ("bastille", False), ("versailles", False), ("online", True)]
    assert 1_150 < nearest["hits"][0]["distanceM"] < 1_350  # Notre-Dame to the Louvre: about 1.25 km
    assert 1_300 < nearest["hits"][1]["distanceM"] < 1_500  # to Bastille: about 1.4 km
    walk = {"loc": {"around": {**NOTRE_DAME, "radiusM": 2_000}}}
    assert [h["id"] for h in storefront({"q": "lamp", "filters": walk, "sort": "nearest", "near": NOTRE_DAME})["hits"]] \
        == ["louvre", "bastille"]
    # a store that opens next door: found first once its task succeeded
    served.wait(served.http.post(base + "/documents", json=[{"id": "cite", "name": "lamp shop",
                                                            "loc": {"lat": 48.8550, "lng": 2.3480}}]))
    assert storefront({"q": "lamp", "filters": walk, "sort": "nearest", "near": NOTRE_DAME})["hits"][0]["id"] == "cite"
    missing = served.http.post(f"/v1/search/{profile.json()['profileKey']}", json={"q": "lamp", "sort": "nearest"},
                               headers={"Authorization": f"Bearer {key}", "Origin": SHOP_ORIGIN})
    assert missing.status_code == 400 and [d["path"] for d in missing.json()["error"]["details"]] == ["near"]
    assert served.http.delete(base).status_code in (202, 204)
