"""POST /v1/events: clicks and conversions tied to their search by queryId, CTR and conversion
rate in analytics, unknown queryIds, origins and preflights, tenancy, batch limits."""

from __future__ import annotations

from typing import Any

from tests.analytics.helpers import ORIGIN, Shop
from tests.factories import bearer, make_key
from tests.index.helpers import make_tenant


def _post(shop: Shop, events: list[dict[str, Any]], headers: dict[str, str] | None = None) -> Any:
    return shop.client.post("/v1/events", json={"events": events}, headers=shop.tenant.headers if headers is None else headers)


def test_clicks_and_conversions_give_rates_positions_and_top_clicked(shop: Shop):
    index_id = shop.new_index("clicked")
    phone = [shop.search("phone", index_id) for _ in range(4)]
    laptop = shop.search("Laptop", index_id)
    events = [
        {"type": "click", "queryId": phone[0]["queryId"], "documentId": phone[0]["hits"][0]["id"], "position": 1},
        {"type": "click", "queryId": phone[1]["queryId"], "documentId": phone[1]["hits"][2]["id"], "position": 3},
        {"type": "conversion", "queryId": phone[1]["queryId"], "documentId": phone[1]["hits"][2]["id"]},
        {"type": "click", "queryId": laptop["queryId"], "documentId": "p2", "userToken": "shopper-1"},
    ]
    response = _post(shop, events)
    assert response.status_code == 200, response.text
    assert response.json() == {"accepted": 4}

    report = shop.analytics(index_id)
    totals = report["totals"]
    assert totals["searches"] == 5 and totals["clicks"] == 3 and totals["conversions"] == 1
    assert totals["clickThroughRate"] == 0.6 and totals["conversionRate"] == 0.2
    assert totals["averageClickPosition"] == 2.0  # (1 + 3) / 2; the click without a position is not averaged
    top = {q["query"]: q for q in report["topQueries"]}
    assert top["phone"]["clickThroughRate"] == 0.5 and top["laptop"]["clickThroughRate"] == 1.0
    clicked = {d["documentId"]: d for d in report["topClicked"]}
    assert clicked[phone[1]["hits"][2]["id"]] == {"documentId": phone[1]["hits"][2]["id"], "clicks": 1, "conversions": 1}
    assert report["topClicked"][0]["conversions"] == 1  # ties on clicks: conversions first
    assert clicked["p2"]["clicks"] == 1


def test_unknown_query_id_refuses_the_whole_batch(shop: Shop):
    index_id = shop.new_index("forged")
    good = shop.search("phone", index_id)["queryId"]
    payload, _, idx = good.partition(".")
    tampered = payload[:-2] + ("AA" if not payload.endswith("AA") else "BB") + "." + idx
    other_index = payload + "." + shop.index_id  # a genuine signature moved to another index
    for bad in ("q_nothing", tampered, other_index, "", "x" * 150):
        events = [{"type": "click", "queryId": good, "documentId": "p1"},
                  {"type": "click", "queryId": bad, "documentId": "p1"}]
        response = _post(shop, events)
        if bad == "":
            assert response.status_code == 400, response.text
            continue
        assert response.status_code == 404, (bad, response.text)
        error = response.json()["error"]
        assert error["code"] == "NOT_FOUND" and [d["path"] for d in error["details"]] == ["events[1].queryId"]
    assert shop.analytics(index_id)["totals"]["clicks"] == 0  # nothing of the refused batches was kept


def test_other_tenants_query_ids_and_scoped_keys_answer_404(shop: Shop):
    query_id = shop.search("phone")["queryId"]
    event = [{"type": "click", "queryId": query_id, "documentId": "p1"}]
    response = _post(shop, event, headers=shop.other.headers)
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
    their_public = make_key(shop.app, shop.other.project_id, key_type="public", access=None, allowed_origins=[ORIGIN])
    assert _post(shop, event, headers={**bearer(their_public), "Origin": ORIGIN}).status_code == 404
    scoped = make_key(shop.app, shop.tenant.project_id, access="read", index_id="idx_elsewhere")
    assert _post(shop, event, headers=bearer(scoped)).status_code == 404
    mine = make_key(shop.app, shop.tenant.project_id, access="read", index_id=shop.index_id)
    assert _post(shop, event, headers=bearer(mine)).status_code == 200


def test_public_key_origins_and_preflight(shop: Shop):
    query_id = shop.search("laptop")["queryId"]
    event = [{"type": "click", "queryId": query_id, "documentId": "p2", "position": 1}]
    allowed = _post(shop, event, headers={**bearer(shop.public), "Origin": ORIGIN})
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    for origin in ("https://evil.example", None):
        headers = bearer(shop.public) | ({"Origin": origin} if origin else {})
        refused = _post(shop, event, headers=headers)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED", origin
    preflight = shop.client.options("/v1/events", headers={
        "Origin": "https://anything.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://anything.example"
    assert "access-control-allow-credentials" not in preflight.headers
    user = _post(shop, event, headers={"Authorization": f"Bearer {shop.tenant.account.token}"})
    assert user.status_code == 403 and user.json()["error"]["code"] == "FORBIDDEN"
    assert _post(shop, event, headers={}).status_code == 401


def test_batch_limits_and_validation(shop: Shop):
    query_id = shop.search("phone")["queryId"]
    event = {"type": "click", "queryId": query_id, "documentId": "p1"}
    too_many = _post(shop, [event] * 1001)
    assert too_many.status_code == 413 and too_many.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert _post(shop, [event] * 1000).json() == {"accepted": 1}  # one (queryId, document, type): counted once
    for bad, path in (({**event, "type": "view"}, "events[0].type"), ({**event, "position": 0}, "events[0].position"),
                      ({"type": "click", "queryId": query_id}, "events[0].documentId")):
        response = _post(shop, [bad])
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["details"][0]["path"] == path, error
    assert _post(shop, []).status_code == 400


def test_events_are_rate_limited_like_searches(shop: Shop):
    """The free plan's 10 searches/s are 100 requests per 10-second window: the 101st batch is 429
    (counted before the queryIds are looked at, so even refused batches count)."""
    tenant = make_tenant(shop.app)
    event = [{"type": "click", "queryId": "q_unknown.idx_unknown", "documentId": "p1"}]
    statuses = [_post(shop, event, headers=tenant.headers).status_code for _ in range(101)]
    assert statuses[:100].count(404) >= 90 and statuses[-1] == 429
    refused = _post(shop, event, headers=tenant.headers)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
