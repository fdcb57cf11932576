"""Issue 30, finding 2, on ``shopsearch serve --workers 2`` as a real process, on SQLite and on
PostgreSQL + Redis: a queryId made by either process binds its clicks to the hits it returned in
both, and one event sent many times, on fresh connections (either process) and at once, is
counted once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from benchmarks.common import FIELDS, MAPPING, load_products, make_tenant, running_server, upload_catalog

pytestmark = pytest.mark.long

ORIGIN = "https://shop.example"


def _send(base: str, headers: dict[str, str], events: list[dict[str, Any]]) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=60) as http:  # a fresh connection: either process
        return http.post("/v1/events", json={"events": events}, headers=headers)


@pytest.mark.parametrize("production", [False, True], ids=["sqlite", "postgres-redis"])
def test_clicks_are_bound_to_their_hits_and_counted_once_across_processes(production: bool) -> None:
    with running_server(postgres=production, redis=production, workers=2) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        assert tenant.public_key is not None
        shopper = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            created = http.post(f"/v1/projects/{tenant.project_id}/indices", json={"name": "p", "mapping": MAPPING})
            assert created.status_code == 201, created.text
            index_id = created.json()["id"]
            index_url = f"/v1/projects/{tenant.project_id}/indices/{index_id}"
            upload_catalog(server.base, tenant, index_id, load_products()[:400])
            profile = http.post(index_url + "/profiles", json={"name": "web", "queryFields": FIELDS, "perPage": 5})
            assert profile.status_code == 201, profile.text
        url = f"/v1/search/{profile.json()['profileKey']}"
        answers = []
        for q in ("samsung", "samsung", "iphone case", "samsung"):  # fresh connections: either process, cached or not
            with httpx.Client(base_url=server.base, timeout=60) as http:
                response = http.post(url, json={"q": q}, headers=shopper)
                assert response.status_code == 200 and response.json()["hits"], response.text
                answers.append(response.json())
        foreign = next(h["id"] for h in answers[2]["hits"] if h["id"] not in {x["id"] for x in answers[0]["hits"]})
        for answer in answers:
            for document_id in ("<b>junk</b>", "999999", foreign if answer is not answers[2] else answers[0]["hits"][0]["id"]):
                for _ in range(3):
                    event = {"type": "click", "queryId": answer["queryId"], "documentId": document_id}
                    refused = _send(server.base, shopper, [event])
                    assert refused.status_code == 404, (document_id, refused.text)
                    assert refused.json()["error"]["details"][0]["path"] == "events[0].documentId"

        click = {"type": "click", "queryId": answers[0]["queryId"], "documentId": answers[0]["hits"][1]["id"],
                 "position": 2}
        conversion = {"type": "conversion", "queryId": answers[0]["queryId"], "documentId": answers[0]["hits"][1]["id"]}
        with ThreadPoolExecutor(8) as pool:  # the same batch at once, and again, on both processes
            responses = list(pool.map(lambda _: _send(server.base, shopper, [click, conversion]), range(16)))
        assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
        assert sum(r.json()["accepted"] for r in responses) == 2
        every_hit = [{"type": "click", "queryId": a["queryId"], "documentId": h["id"]} for a in answers for h in a["hits"]]
        first = _send(server.base, shopper, every_hit)
        assert first.status_code == 200 and first.json()["accepted"] == len(every_hit) - 1  # one was counted above
        for _ in range(4):
            assert _send(server.base, shopper, every_hit).json() == {"accepted": 0}

        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            report = http.get(f"/v1/projects/{tenant.project_id}/indices/{index_id}/analytics")
        assert report.status_code == 200, report.text
        totals = report.json()["totals"]
        assert totals["clicks"] == len(every_hit) and totals["conversions"] == 1
        clicked = {d["documentId"] for d in report.json()["topClicked"]}
        assert clicked == {h["id"] for a in answers for h in a["hits"]}
