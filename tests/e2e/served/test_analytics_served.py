"""The analytics report over real HTTP against a served catalog (both backends): searches and a
click and conversion recorded through the API appear in ``GET .../analytics``; events must name a
hit of their search (else 404 ``NOT_FOUND`` with the path), count once, and a profile with
``analytics: false`` is not recorded. The served catalog is shared, so only this module's own
queries are asserted exactly."""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.served.conftest import Served

NO_CACHE = {"Cache-Control": "no-cache"}


def _search(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    response = served.http.post(served.url("/search"), json=body, headers=NO_CACHE)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _events(served: Served, *events: dict[str, Any]) -> Any:
    return served.http.post("/v1/events", json={"events": list(events)})


def _report_until(served: Served, check, timeout: float = 30) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        response = served.http.get(served.url("/analytics"))
        assert response.status_code == 200, response.text
        if check(report := response.json()):
            return report  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, report
        time.sleep(0.2)


def _query(report: dict[str, Any], text: str) -> dict[str, Any] | None:
    return next((row for row in report["topQueries"] if row["query"] == text), None)


def test_searches_and_a_click_appear_in_the_report(served: Served) -> None:
    hidden = _search(served, {"q": "cushions", "profile": {"queryFields": {"name": {"weight": 1}}, "analytics": False}})
    assert [hit["id"] for hit in hidden["hits"]] == ["p1"]
    first = _search(served, {"q": "oak table"})
    assert [hit["id"] for hit in first["hits"]] == ["p2"]
    _search(served, {"q": "Oak Table"})
    empty = _search(served, {"q": "zzqx nothing"})
    assert empty["total"] == 0

    clicked = _events(served, {"type": "click", "queryId": first["queryId"], "documentId": "p2", "position": 1})
    assert clicked.status_code == 200 and clicked.json() == {"accepted": 1}, clicked.text
    again = _events(served, {"type": "click", "queryId": first["queryId"], "documentId": "p2", "position": 1})
    assert again.status_code == 200 and again.json() == {"accepted": 0}, again.text  # once per hit and type
    bought = _events(served, {"type": "conversion", "queryId": first["queryId"], "documentId": "p2"})
    assert bought.status_code == 200 and bought.json() == {"accepted": 1}, bought.text

    report = _report_until(served, lambda r: (_query(r, "oak table") or {}).get("count") == 2
                           and any(q["query"] == "zzqx nothing" for q in r["noResultQueries"]))
    oak = _query(report, "oak table")
    assert oak is not None and oak["avgHits"] == 1 and oak["clickThroughRate"] == 0.5
    assert {"query": "zzqx nothing", "count": 1} in report["noResultQueries"]
    assert _query(report, "cushions") is None  # the profile turned analytics off
    assert {"documentId": "p2", "clicks": 1, "conversions": 1} in report["topClicked"]
    totals = report["totals"]
    assert totals["searches"] >= 3 and totals["noResultSearches"] >= 1 and totals["clicks"] >= 1
    assert 0 < totals["noResultRate"] <= 1
    assert report["series"] and report["series"][-1]["searches"] >= 3


def test_an_event_must_name_a_hit_of_its_search(served: Served) -> None:
    answer = _search(served, {"q": "reading lamp"})
    assert [hit["id"] for hit in answer["hits"]] == ["p3"]
    other = _events(served, {"type": "click", "queryId": answer["queryId"], "documentId": "p2"})
    assert other.status_code == 404, other.text
    error = other.json()["error"]
    assert error["code"] == "NOT_FOUND" and [d["path"] for d in error["details"]] == ["events[0].documentId"]
    forged = _events(served, {"type": "click", "queryId": answer["queryId"][:-3] + "xyz", "documentId": "p3"},
                     {"type": "click", "queryId": "q_made.up", "documentId": "p3"})
    assert forged.status_code == 404, forged.text
    assert [d["path"] for d in forged.json()["error"]["details"]] == ["events[0].queryId", "events[1].queryId"]
    # the batch is all or nothing: a good event beside a bad one is not counted either
    mixed = _events(served, {"type": "click", "queryId": answer["queryId"], "documentId": "p3"},
                    {"type": "click", "queryId": answer["queryId"], "documentId": "p4"})
    assert mixed.status_code == 404, mixed.text
    good = _events(served, {"type": "click", "queryId": answer["queryId"], "documentId": "p3"})
    assert good.status_code == 200 and good.json() == {"accepted": 1}, good.text


def test_report_dates_are_checked(served: Served) -> None:
    for query in ("from=1999-12-31", "to=2100-01-01", "from=yesterday"):
        response = served.http.get(served.url(f"/analytics?{query}"))
        assert response.status_code == 400, (query, response.text)
        assert response.json()["error"]["code"] == "VALIDATION_ERROR", query
