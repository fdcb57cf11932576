"""Issue 30, finding 2: events could forge analytics. ``POST /v1/events`` took any document id for
a genuine ``queryId``, counted the same event as often as it was sent, and had no daily bound:
click-through went to 1.0, junk ids (markup included) topped ``topClicked`` and 10 requests added
10,000 rows. Now a click or conversion counts only for a hit its search returned, once per
(queryId, document, type), and at most ``analytics_events_per_day`` per index and day."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from control_plane.analytics.models import DocumentDay, EventKey
from tests.analytics.helpers import ORIGIN, Shop
from tests.factories import bearer


def _post(shop: Shop, events: list[dict[str, Any]], headers: dict[str, str] | None = None) -> Any:
    return shop.client.post("/v1/events", json={"events": events}, headers=shop.tenant.headers if headers is None else headers)


def _rows(shop: Shop, model: Any, index_id: str) -> int:
    with shop.app.state.runtime.sessions() as db:
        return int(db.scalar(select(func.count()).select_from(model).where(model.index_id == index_id)) or 0)


def test_a_document_the_search_did_not_return_is_refused(shop: Shop):
    index_id = shop.new_index("unreturned")
    answer = shop.search("phone", index_id, perPage=3)
    returned = [hit["id"] for hit in answer["hits"]]
    other = next(hit["id"] for hit in shop.search("laptop", index_id)["hits"] if hit["id"] not in returned)
    junk = ["<img src=x onerror=alert(1)>", "p999", other, returned[0] + " ", returned[0].upper() + "x"]
    for i, document_id in enumerate(junk):
        events = [{"type": "click", "queryId": answer["queryId"], "documentId": returned[0], "position": 1},
                  {"type": "conversion", "queryId": answer["queryId"], "documentId": document_id}]
        response = _post(shop, events)
        assert response.status_code == 404, (document_id, response.text)
        error = response.json()["error"]
        assert error["code"] == "NOT_FOUND" and [d["path"] for d in error["details"]] == ["events[1].documentId"], i
    report = shop.analytics(index_id)
    assert report["totals"]["clicks"] == 0 and report["totals"]["conversions"] == 0 and report["topClicked"] == []
    assert _rows(shop, DocumentDay, index_id) == 0  # nothing of the refused batches was kept
    # every hit returned is accepted, from a cached answer too (its own queryId names the same hits)
    cached = shop.search("phone", index_id, perPage=3)
    assert [hit["id"] for hit in cached["hits"]] == returned and cached["queryId"] != answer["queryId"]
    for query_id in (answer["queryId"], cached["queryId"]):
        events = [{"type": "click", "queryId": query_id, "documentId": d, "position": p}
                  for p, d in enumerate(returned, 1)]
        assert _post(shop, events).json() == {"accepted": 3}
    assert {d["documentId"] for d in shop.analytics(index_id)["topClicked"]} == set(returned)


def test_each_query_document_and_type_counts_once(shop: Shop):
    index_id = shop.new_index("once")
    answer = shop.search("phone", index_id, perPage=5)
    query_id, first, second = answer["queryId"], answer["hits"][0]["id"], answer["hits"][1]["id"]
    click = {"type": "click", "queryId": query_id, "documentId": first, "position": 1}
    assert _post(shop, [click] * 1000).json() == {"accepted": 1}
    # other spellings of the same bytes (base64 skips what is not of its alphabet, and the unused
    # bits of the last character) are not ids the service made
    payload, _, index_part = query_id.partition(".")
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for respelled in (payload[:6] + "!" + payload[6:], payload[:-1] + last[last.index(payload[-1]) ^ 1]):
        response = _post(shop, [{**click, "queryId": respelled + "." + index_part}])
        assert response.status_code == 404, respelled
    public = {**bearer(shop.public), "Origin": ORIGIN}
    for _ in range(5):
        assert _post(shop, [click], headers=public).json() == {"accepted": 0}
    both = [{"type": "conversion", "queryId": query_id, "documentId": first},
            {"type": "click", "queryId": query_id, "documentId": second, "position": 2},
            {"type": "conversion", "queryId": query_id, "documentId": first}]
    assert _post(shop, both).json() == {"accepted": 2}
    again = shop.search("phone", index_id, perPage=5)["queryId"]  # the same shopper searching again: a new search
    assert _post(shop, [{**click, "queryId": again}]).json() == {"accepted": 1}
    totals = shop.analytics(index_id)["totals"]
    assert (totals["searches"], totals["clicks"], totals["conversions"]) == (2, 3, 1)
    assert totals["clickThroughRate"] == 1.0 and totals["conversionRate"] == 0.5
    assert _rows(shop, EventKey, index_id) == 4


def test_new_events_are_capped_per_index_and_day(shop: Shop, monkeypatch: pytest.MonkeyPatch):
    """Past the cap a batch is still 200 (the storefront's retry would not help), ``accepted`` says
    how many were counted, and no row is added."""
    index_id = shop.new_index("capped")
    settings = shop.app.state.runtime.settings
    monkeypatch.setattr(settings, "analytics_events_per_day", 5)
    answers = [shop.search(q, index_id, perPage=3) for q in ("phone", "laptop")]
    events = [{"type": kind, "queryId": a["queryId"], "documentId": hit["id"]}
              for a in answers for hit in a["hits"] for kind in ("click", "conversion")]
    assert len(events) == 12
    assert _post(shop, events[:3]).json() == {"accepted": 3}
    assert _post(shop, events[3:]).json() == {"accepted": 2}  # room for 2 more today
    assert _post(shop, events[8:]).json() == {"accepted": 0}
    assert _post(shop, events[:3]).json() == {"accepted": 0}  # counted already: not again, and no room used
    totals = shop.analytics(index_id)["totals"]
    assert totals["clicks"] + totals["conversions"] == 5
    assert _rows(shop, EventKey, index_id) == 5
    other = shop.new_index("uncapped")  # the cap is per index
    answer = shop.search("phone", other, perPage=2)
    assert _post(shop, [{"type": "click", "queryId": answer["queryId"], "documentId": answer["hits"][0]["id"]}]
                 ).json() == {"accepted": 1}
