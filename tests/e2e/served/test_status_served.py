"""``GET /v1/status`` and the ``/status`` page of a served process (both backends): the same
answer, every service named, plain HTML without script."""

from __future__ import annotations

import httpx

from tests.e2e.served.conftest import Served


def test_the_status_page_of_a_served_process(served: Served) -> None:
    answer = httpx.get(served.server.base + "/v1/status", timeout=30)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert {s["name"] for s in body["services"]} == {"search", "indexing", "dashboard", "mcp"}
    assert body["status"] in ("operational", "degraded", "down")
    page = httpx.get(served.server.base + "/status", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script" not in page.text.lower()
    assert f'Overall: <span class="{body["status"]}">' in page.text and body["checkedAt"] in page.text
