"""Rule routes (spec 4.7): CRUD, positions and order, bad input, quotas, the usage registry, tenancy."""

from __future__ import annotations

import pytest

from tests.fixtures.app import StartedAppClient
from tests.index.helpers import PRODUCT_MAPPING, create_index, make_tenant

HIDE = {"hide": ["p1"]}


def rule(name: str, **body):
    return {"name": name, "conditions": [{"pattern": name, "anchoring": "contains"}], "consequence": HIDE, **body}


@pytest.fixture
def shop(app):
    with StartedAppClient(app) as client:
        tenant = make_tenant(app)
        index = create_index(client, tenant)
    return tenant, index["id"]


def url(shop, suffix: str = "") -> str:
    tenant, index_id = shop
    return tenant.url(index_id, "/rules" + suffix)


def names(client, shop) -> list[str]:
    items = client.get(url(shop, "?limit=1000"), headers=shop[0].read_headers).json()["items"]
    assert [r["position"] for r in items] == list(range(1, len(items) + 1))
    return [r["name"] for r in items]


def test_create_read_update_delete_keep_positions_gap_free(client, shop):
    tenant, _ = shop
    ids = {}
    for name in ("a", "b", "c"):
        response = client.post(url(shop), json=rule(name), headers=tenant.headers)
        assert response.status_code == 201, response.text
        ids[name] = response.json()["id"]
    assert client.post(url(shop), json=rule("first", position=1), headers=tenant.headers).status_code == 201
    assert names(client, shop) == ["first", "a", "b", "c"]
    got = client.get(url(shop, f"/{ids['c']}"), headers=tenant.read_headers).json()
    assert got["position"] == 4 and got["conditions"] == [{"pattern": "c", "anchoring": "contains"}]
    moved = client.put(url(shop, f"/{ids['c']}"), json=rule("c", position=2, enabled=False), headers=tenant.headers)
    assert moved.status_code == 200 and moved.json()["enabled"] is False
    assert names(client, shop) == ["first", "c", "a", "b"]
    client.put(url(shop, f"/{ids['c']}"), json=rule("c", position=99), headers=tenant.headers)
    assert names(client, shop) == ["first", "a", "b", "c"]
    assert client.delete(url(shop, f"/{ids['a']}"), headers=tenant.headers).status_code == 204
    assert names(client, shop) == ["first", "b", "c"]
    assert client.get(url(shop, f"/{ids['a']}"), headers=tenant.headers).status_code == 404
    page = client.get(url(shop, "?limit=2"), headers=tenant.headers).json()
    rest = client.get(url(shop, f"?limit=2&cursor={page['nextCursor']}"), headers=tenant.headers).json()
    assert [r["name"] for r in page["items"] + rest["items"]] == ["first", "b", "c"] and rest["nextCursor"] is None


def test_order_must_list_every_rule_once(client, shop):
    tenant, _ = shop
    ids = [client.post(url(shop), json=rule(n), headers=tenant.headers).json()["id"] for n in ("x", "y", "z")]
    for bad in ([ids[0], ids[1]], [ids[0], ids[1], ids[2], ids[2]], [ids[0], ids[1], "rul_nope"], []):
        response = client.put(url(shop, "/order"), json={"ids": bad}, headers=tenant.headers)
        assert response.status_code == 400 and response.json()["error"]["code"] == "VALIDATION_ERROR"
        assert names(client, shop) == ["x", "y", "z"]  # nothing half applied
    response = client.put(url(shop, "/order"), json={"ids": [ids[2], ids[0], ids[1]]}, headers=tenant.headers)
    assert response.status_code == 200 and [r["name"] for r in response.json()["items"]] == ["z", "x", "y"]
    assert names(client, shop) == ["z", "x", "y"]


@pytest.mark.parametrize("body, path", [
    (rule("x", conditions=[{"pattern": "", "anchoring": "is"}]), "conditions[0].pattern"),
    (rule("x", conditions=[{"pattern": "?!", "anchoring": "contains"}]), "conditions[0].pattern"),
    (rule("x", conditions=[{"pattern": "tv", "anchoring": "near"}]), "conditions[0].anchoring"),
    (rule("x", consequence={}), "consequence"),
    (rule("x", consequence={"addFilters": {"nope": ["a"]}}), "consequence.addFilters.nope"),
    (rule("x", consequence={"addFilters": {"name": ["a"]}}), "consequence.addFilters.name"),
    (rule("x", consequence={"boost": [{"filters": {"brand": ["Acme"]}, "weight": 0}]}), "consequence.boost[0].weight"),
    (rule("x", consequence={"bury": [{"filters": {}, "weight": 0.5}]}), "consequence.bury[0].filters"),
    (rule("x", consequence={"pin": [{"id": "p1", "position": 0}]}), "consequence.pin[0].position"),
    (rule("x", consequence={"pin": [{"id": "p1", "position": 1}, {"id": "p2", "position": 1}]}), "consequence.pin"),
    (rule("x", consequence={"redirect": "javascript:alert(1)"}), "consequence.redirect"),
    # paths that browsers turn into another site, and URLs that hide one
    *[(rule("x", consequence={"redirect": r}), "consequence.redirect") for r in (
        "/\\evil.example/x", "/%09/evil.example", "/%5C%5Cevil.example", "/x\u0001y", "//evil.example",
        "/\t/evil.example", "/%2F/evil.example", "https://shop.example@evil.example/", "https:///x",
        "/\u202eevil")],
    (rule("x", consequence={"replaceQuery": "  "}), "consequence.replaceQuery"),
    (rule("x", filters={"not": {"brand": ["a"]}}), "filters.not"),
    (rule("x", validity=[{"from": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}]), "validity[0]"),
    (rule(""), "name"),
])
def test_invalid_rules_are_refused_with_the_path(client, shop, body, path):
    tenant, _ = shop
    response = client.post(url(shop), json=body, headers=tenant.headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert any(d["path"] == path for d in error["details"]), error["details"]
    assert names(client, shop) == []


def test_more_rules_than_the_plan_allows(client, shop):
    tenant, _ = shop
    for i in range(50):  # the free plan holds 50
        assert client.post(url(shop), json=rule(f"r{i}"), headers=tenant.headers).status_code == 201
    response = client.post(url(shop), json=rule("one-more"), headers=tenant.headers)
    assert response.status_code == 403 and response.json()["error"]["code"] == "QUOTA_EXCEEDED"


def test_a_mapping_change_that_breaks_a_rule_names_it(client, shop):
    tenant, index_id = shop
    created = client.post(url(shop), json=rule("in-stock only", consequence={"addFilters": {"inStock": True}}),
                          headers=tenant.headers).json()
    usage = client.get(tenant.url(index_id, "/mapping/usage"), headers=tenant.headers).json()
    assert any(u["kind"] == "rule" and u["id"] == created["id"] for u in usage["fields"]["inStock"])
    fields = {k: v for k, v in PRODUCT_MAPPING["fields"].items() if k != "inStock"}
    response = client.put(tenant.url(index_id, "/mapping"), json={**PRODUCT_MAPPING, "fields": fields},
                          headers=tenant.headers)
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "MAPPING_BREAKS_CONFIG"
    assert any(created["id"] in d["path"] for d in error["details"]), error["details"]


def test_read_keys_cannot_write_but_can_test(client, shop):
    tenant, _ = shop
    assert client.post(url(shop), json=rule("x"), headers=tenant.read_headers).status_code == 403
    response = client.post(url(shop, "/test"), json={"q": "x"}, headers=tenant.read_headers)
    assert response.status_code == 200, response.text
    assert response.json()["matchedRules"] == [] and response.json()["appliedRules"] == []


def test_other_tenants_rules_are_not_found(app, client, shop):
    tenant, index_id = shop
    rule_id = client.post(url(shop), json=rule("mine"), headers=tenant.headers).json()["id"]
    other = make_tenant(app)
    other_index = create_index(client, other)
    theirs = other.url(other_index["id"], f"/rules/{rule_id}")
    assert client.get(theirs, headers=other.headers).status_code == 404
    assert client.put(theirs, json=rule("x"), headers=other.headers).status_code == 404
    assert client.delete(theirs, headers=other.headers).status_code == 404
    order = client.put(other.url(other_index["id"], "/rules/order"), json={"ids": [rule_id]}, headers=other.headers)
    assert order.status_code == 400  # not one of their rules
    assert client.get(url(shop, f"/{rule_id}"), headers=tenant.headers).json()["position"] == 1
