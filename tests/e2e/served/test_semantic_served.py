"""Semantic search over real HTTP against a served process (both backends): an index with a built-in
vector, embedded when its documents are applied (the upload's task succeeds with the vectors
searchable), a hybrid profile through the storefront route with the public key, similar products,
and the next write found by meaning as soon as its task succeeded."""

from __future__ import annotations

from typing import Any

from tests.e2e.served.conftest import SHOP_ORIGIN, Served

MAPPING = {"fields": {"name": {"type": "text", "searchable": True},
                      "kind": {"type": "keyword", "filterable": True, "facetable": True},
                      "meaning": {"type": "vector", "embed": {"from": ["name"]}}}}
PRODUCTS = [
    {"id": "mount", "name": "Dashboard vent mount holder", "kind": "car"},
    {"id": "fm", "name": "Bluetooth FM transmitter", "kind": "car"},
    {"id": "glass", "name": "Tempered glass screen protector", "kind": "protection"},
    {"id": "case", "name": "Rugged armor case", "kind": "protection"},
    {"id": "cable", "name": "USB-C charging cable", "kind": "power"},
    {"id": "battery", "name": "Portable power bank battery", "kind": "power"},
]


def test_hybrid_and_similar_products_over_http(served: Served) -> None:
    index_id = served.new_index("meaning", MAPPING)
    base = f"/v1/projects/{served.tenant.project_id}/indices/{index_id}"
    refused = served.http.post(base + "/documents", json=[{"id": "x", "name": "x", "meaning": [0.1, 0.2]}])
    assert refused.status_code == 400 and [d["path"] for d in refused.json()["error"]["details"]] == ["[0].meaning"]
    served.wait(served.http.post(base + "/documents", json=PRODUCTS))
    profile = served.http.post(base + "/profiles", json={
        "name": "hybrid", "queryFields": {"name": {"weight": 1}}, "facets": ["kind"],
        "semantic": {"field": "meaning", "ratio": 0.6}})
    assert profile.status_code == 201, profile.text
    key = served.tenant.public_key
    assert key is not None

    def storefront(body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        response = served.http.post(f"/v1/search/{profile.json()['profileKey']}", json=body,
                                    headers={"Authorization": f"Bearer {key}", "Origin": SHOP_ORIGIN})
        assert response.status_code == status, response.text
        return response.json()  # type: ignore[no-any-return]

    # no word of "keep my phone charged" is in "Portable power bank battery", nor in the cable's name
    found = storefront({"q": "keep my phone juiced up away from home"})
    assert {h["id"] for h in found["hits"][:3]} & {"battery", "cable"}, found["hits"]
    assert "meaning" not in found["hits"][0]["document"]
    similar = storefront({"similarTo": "mount", "filters": {"kind": "car"}})
    assert [h["id"] for h in similar["hits"]] == ["fm"]
    assert storefront({"similarTo": "nothing"}, status=404)["error"]["code"] == "NOT_FOUND"
    # a product added: found by meaning once its task succeeded
    served.wait(served.http.post(base + "/documents", json=[{"id": "holder", "name": "Windshield suction phone cradle",
                                                            "kind": "car"}]))
    near = storefront({"similarTo": "mount", "filters": {"kind": "car"}})
    assert {h["id"] for h in near["hits"]} == {"fm", "holder"}
    assert served.http.delete(base).status_code in (202, 204)
