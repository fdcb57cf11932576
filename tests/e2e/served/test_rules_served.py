"""Rules over real HTTP against a served catalog (both backends): a pin puts a product first for a
matching query and names the rule in the answer, a hide removes one, and deleting the rule undoes
both."""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.served.conftest import Served


def _answer(served: Served, q: str) -> dict[str, Any]:
    response = served.http.post(served.url("/search"), json={"q": q}, headers={"Cache-Control": "no-cache"})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _until(served: Served, q: str, check, timeout: float = 20) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check(answer := _answer(served, q)):
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    return answer


def test_a_pin_and_a_hide_apply_to_matching_queries_until_deleted(served: Served) -> None:
    plain = [h["id"] for h in _answer(served, "acme")["hits"]]
    assert set(plain) == {"p1", "p3"}
    created = served.http.post(served.url("/rules"), json={
        "name": "lamps first", "conditions": [{"pattern": "acme", "anchoring": "is"}],
        "consequence": {"pin": [{"id": "p3", "position": 1}], "hide": ["p1"]}})
    assert created.status_code == 201, created.text
    rule_id = created.json()["id"]
    answer = _until(served, "acme", lambda a: a["appliedRules"] == [rule_id])
    assert [h["id"] for h in answer["hits"]] == ["p3"]  # pinned first, p1 hidden
    assert _answer(served, "acme lamp")["appliedRules"] == []  # "is": the whole query only

    assert served.http.delete(served.url(f"/rules/{rule_id}")).status_code == 204
    back = _until(served, "acme", lambda a: a["appliedRules"] == [])
    assert {h["id"] for h in back["hits"]} == {"p1", "p3"}
