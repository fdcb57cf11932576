"""Regressions for the 500s the OpenAPI fuzzer found (tests/fuzz/runner.py), one test each."""

from __future__ import annotations

import pytest

from tests.index.helpers import create_index, make_tenant

HUGE = 2**64 + 5  # valid JSON, beyond what orjson, the stored form and the engine take
NOT_FINITE = "not a finite number (JSON has no NaN or Infinity)"
# (body, path, message): what Python's parser reads and the service cannot store as sent
BAD_NUMBERS = [
    (b'{"n": %d}' % HUGE, "n", "integer out of range"),
    (b'[{"a": [1, -%d]}]' % HUGE, "[0].a[1]", "integer out of range"),
    (b'{"q": "NaN and Infinity in a string are fine", "w": NaN}', "w", NOT_FINITE),
    (b'{"f": {"price": {"lte": -Infinity}}}', "f.price.lte", NOT_FINITE),
    # literals that overflow to an infinity: -1e999 and 1e999 once shared a cache key (both null)
    (b'{"filters": {"price": {"lt": 1e999}}}', "filters.price.lt", NOT_FINITE),
    (b'{"filters": {"price": {"gt": -1.5E+400}}}', "filters.price.gt", NOT_FINITE),
    (b'[{"id": "x", "price": 9.9e308}]', "[0].price", NOT_FINITE),
    # JSON Schema counts 1e19 as an integer: the document's 64-bit bound holds for every number
    (b'{"n": {"x": 1e19}}', "n.x", "number out of range"),
    (b'[{"price": -9.3E+18}]', "[0].price", "number out of range"),
]


@pytest.mark.parametrize("idempotency_key", [None, "k-1"])
def test_upload_with_an_integer_over_64_bits_is_refused_with_its_path(app, client, idempotency_key):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    headers = dict(tenant.headers, **({"Idempotency-Key": idempotency_key} if idempotency_key else {}))
    docs = [{"id": "a"}, {"id": "b", "extra": {"sizes": [1, HUGE]}}]
    response = client.post(tenant.url(index["id"], "/documents"), json=docs, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"][0]["path"] == "[1].extra.sizes[1]"
    # NaN is not JSON: refused too, not stored as null
    response = client.post(tenant.url(index["id"], "/documents"), content=b'[{"id": "c", "price": NaN}]',
                           headers={**headers, "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["error"]["details"] == [
        {"path": "[0].price", "message": NOT_FINITE}]
    listed = client.get(tenant.url(index["id"], "/documents"), headers=tenant.headers)
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_delete_with_an_integer_id_over_64_bits_is_refused(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    headers = dict(tenant.headers, **{"Idempotency-Key": "k-2"})
    response = client.post(tenant.url(index["id"], "/documents/delete"), json=[HUGE], headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "[0]"


def _routes_with_a_body(routes):
    """The APIRoutes taking POST, PUT or PATCH, inside included routers too."""
    from fastapi.routing import APIRoute

    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes_with_a_body(inner.routes)
        elif isinstance(route, APIRoute) and route.methods & {"POST", "PUT", "PATCH"}:
            yield route


def test_every_route_with_a_body_checks_it(app):
    from control_plane.wire import JsonBodyRoute

    routes = list(_routes_with_a_body(app.routes))
    assert len(routes) >= 30
    assert [route.path for route in routes if not isinstance(route, JsonBodyRoute)] == []


def test_an_integer_over_64_bits_is_refused_on_every_route_with_a_body(app, client):
    """Before authentication, as malformed JSON is: no endpoint sees a number it cannot store."""
    operations = [(method.upper(), path) for path, item in app.openapi()["paths"].items()
                  for method in item if method in ("post", "put", "patch")]
    assert len(operations) >= 30
    for method, path in operations:
        url = path.replace("{", "x").replace("}", "")
        for body, where, message in BAD_NUMBERS:
            response = client.request(method, url, content=body, headers={"Content-Type": "application/json"})
            assert response.status_code == 400, (method, path, response.text)
            error = response.json()["error"]
            assert error["code"] == "VALIDATION_ERROR" and error["details"] == [
                {"path": where, "message": message}], (method, path, error)


def test_a_rule_with_user_data_orjson_cannot_encode_is_refused(app, client):
    """The fuzzer's 500: a rule's userData holding 6458382695403759433940992."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    rules = tenant.url(index["id"], "/rules")

    def rule(user_data):
        return {"name": "r", "conditions": [{"pattern": "phone", "anchoring": "is"}],
                "consequence": {"userData": user_data}}

    response = client.post(rules, json=rule({"banner": {"sizes": [1, 6458382695403759433940992]}}), headers=tenant.headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["details"] == [
        {"path": "consequence.userData.banner.sizes[1]", "message": "integer out of range"}]
    deep: dict = {}
    for _ in range(40):
        deep = {"d": deep}
    response = client.post(rules, json=rule(deep), headers=tenant.headers)
    assert response.status_code == 400, response.text
    (detail,) = response.json()["error"]["details"]
    assert detail["path"].startswith("consequence.userData.d") and "nested deeper" in detail["message"]
    assert client.get(rules, headers=tenant.headers).json()["items"] == []
    # within 64 bits, and long digit runs inside strings (barcodes), are stored as sent
    fine = {"gtin": "00123456789012345678901", "max": 2**63 - 1, "min": -(2**63)}
    response = client.post(rules, json=rule(fine), headers=tenant.headers)
    assert response.status_code == 201, response.text
    assert response.json()["consequence"]["userData"] == fine


def test_a_chunked_body_over_the_limit_is_still_413(app, client):
    from tests.factories import runtime_of

    tenant = make_tenant(app)
    index = create_index(client, tenant)
    limit = runtime_of(app).settings.max_body_bytes

    def chunks():
        yield b'[{"id": "a", "n": 12345678901234567890123, "pad": "'
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536
        yield b'"}]'

    response = client.post(tenant.url(index["id"], "/documents"), content=chunks(),
                           headers={**tenant.headers, "Content-Type": "application/json"})
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
