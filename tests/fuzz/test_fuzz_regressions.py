"""Regressions for the 500s the OpenAPI fuzzer found (tests/fuzz/runner.py), one test each."""

from __future__ import annotations

import pytest

from tests.index.helpers import create_index, make_tenant

HUGE = 2**64 + 5  # valid JSON, beyond what orjson, the stored form and the engine take


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
    listed = client.get(tenant.url(index["id"], "/documents"), headers=tenant.headers)
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_delete_with_an_integer_id_over_64_bits_is_refused(app, client):
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    headers = dict(tenant.headers, **{"Idempotency-Key": "k-2"})
    response = client.post(tenant.url(index["id"], "/documents/delete"), json=[HUGE], headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "[0]"
