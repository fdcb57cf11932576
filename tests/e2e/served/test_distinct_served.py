"""Distinct over real HTTP against a served catalog (both backends): a saved profile with
``distinct`` on the ``model`` keyword keeps one hit per model with its ``groupSize``, ``total``
counts groups while facets still count documents, and a distinct field that is not a keyword is
refused with its path."""

from __future__ import annotations

from typing import Any

from tests.e2e.served.conftest import Served


def _search(served: Served, body: dict[str, Any]) -> dict[str, Any]:
    response = served.http.post(served.url("/search"), json=body, headers={"Cache-Control": "no-cache"})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_distinct_profile_keeps_one_hit_per_model(served: Served) -> None:
    created = served.http.post(served.url("/profiles"), json={
        "name": "one per model", "queryFields": {"name": {"weight": 1}}, "distinct": "model",
        "facets": ["brand"], "sortOptions": [{"key": "cheap", "label": "Cheapest", "sort": ["price:asc"]}]})
    assert created.status_code == 201, created.text
    profile = created.json()
    assert profile["distinct"] == "model"
    try:
        answer = _search(served, {"q": "", "profileKey": profile["profileKey"], "sort": "cheap"})
        by_id = {hit["id"]: hit for hit in answer["hits"]}
        # p1 and p4 share the model "lounge": only the better ranked (cheaper, p1) stays, standing for two
        assert [hit["id"] for hit in answer["hits"]] == ["p3", "p2", "p1"]
        assert by_id["p1"]["groupSize"] == 2 and by_id["p2"]["groupSize"] == 1 and by_id["p3"]["groupSize"] == 1
        assert answer["total"] == 3
        brands = {f["value"]: f["count"] for f in answer["facets"]["brand"]}
        assert brands == {"acme": 2, "zed": 1, "orbit": 1}  # documents, not groups

        # a query matching one member of a group: that member stands for it alone
        sofa = _search(served, {"q": "sofa", "profileKey": profile["profileKey"]})
        assert [(hit["id"], hit["groupSize"]) for hit in sofa["hits"]] == [("p4", 1)]

        # the same profile without distinct returns every document
        plain = _search(served, {"q": "", "profile": {"queryFields": {"name": {"weight": 1}}}})
        assert plain["total"] == 4 and all("groupSize" not in hit for hit in plain["hits"])
    finally:
        assert served.http.delete(served.url(f"/profiles/{profile['id']}")).status_code == 204


def test_distinct_on_a_field_that_is_not_a_keyword_is_refused(served: Served) -> None:
    for field in ("price", "name", "nothing"):
        response = served.http.post(served.url("/search"), json={
            "q": "", "profile": {"queryFields": {"name": {"weight": 1}}, "distinct": field}})
        assert response.status_code == 400, (field, response.text)
        error = response.json()["error"]
        assert error["code"] == "PROFILE_INVALID" and {d["path"] for d in error["details"]} == {"distinct"}, error
    saved = served.http.post(served.url("/profiles"), json={
        "name": "bad distinct", "queryFields": {"name": {"weight": 1}}, "distinct": "price"})
    assert saved.status_code == 400 and saved.json()["error"]["code"] == "PROFILE_INVALID", saved.text
