"""The end check shared by the production tests: search agrees with the database for every document id.

For every id the test ever wrote, the database's row (present or deleted) must match what the test
was told (``expected``: the body of the last write answered 202, ``None`` after a delete answered
202), and a search filtered on that id must return it once, with its stored fields, or not at all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import create_engine, text

# ``sku`` repeats the id as a filterable keyword: a search filtered on it asks for ids directly.
MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "sku": {"type": "keyword", "filterable": True},
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "price": {"type": "float", "filterable": True, "sortable": True},
        "rev": {"type": "integer", "filterable": True},
    },
}
PROFILE: dict[str, Any] = {"name": "web", "queryFields": {"name": {"weight": 4}, "brand": {"weight": 2}},
                           "facets": ["brand"], "perPage": 20}
FINISHED = ("succeeded", "failed", "canceled")


@dataclass
class ShopIndex:
    """An index of :data:`MAPPING` with a :data:`PROFILE` profile, as the production tests make it."""

    id: str
    path: str  # /v1/projects/{project}/indices/{id}
    search_url: str  # the profile's storefront route
    storefront: dict[str, str]  # the public key's headers, from ``origin``


def shop_index(http: httpx.Client, project_id: str, public_key: str, origin: str, **index: Any) -> ShopIndex:
    """Create the index (``index``: name, shards, replicas) and its profile through ``http``."""
    created = http.post(f"/v1/projects/{project_id}/indices", json={"mapping": MAPPING, **index})
    assert created.status_code == 201, created.text
    index_id = created.json()["id"]
    path = f"/v1/projects/{project_id}/indices/{index_id}"
    profile = http.post(path + "/profiles", json=PROFILE)
    assert profile.status_code == 201, profile.text
    return ShopIndex(index_id, path, f"/v1/search/{profile.json()['profileKey']}",
                     {"Authorization": f"Bearer {public_key}", "Origin": origin})


def database_rows(database_url: str, index_id: str) -> dict[str, dict[str, Any] | None]:
    """``{doc_id: body}`` with ``None`` for a deleted row."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT doc_id, body, deleted FROM documents WHERE index_id = :i"),
                              {"i": index_id}).all()
    finally:
        engine.dispose()
    return {r[0]: None if r[2] else _json(r[1]) for r in rows}


def task_statuses(database_url: str, project_id: str) -> dict[str, list[str]]:
    """``{status: [task id]}`` of every task of the project."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT id, status FROM tasks WHERE project_id = :p"), {"p": project_id}).all()
    finally:
        engine.dispose()
    out: dict[str, list[str]] = {}
    for task_id, status in rows:
        out.setdefault(status, []).append(task_id)
    return out


def wait_tasks_settled(database_url: str, project_id: str, timeout: float = 90) -> dict[str, list[str]]:
    deadline = time.monotonic() + timeout
    while True:
        statuses = task_statuses(database_url, project_id)
        if not set(statuses) - set(FINISHED):
            return statuses
        assert time.monotonic() < deadline, {k: len(v) for k, v in statuses.items()}
        time.sleep(0.2)


def assert_search_agrees(http: httpx.Client, search_url: str, database_url: str, index_id: str,
                         expected: dict[str, dict[str, Any] | None]) -> int:
    """Every id of ``expected`` as the database holds it and as search answers it; returns the live count."""
    rows = database_rows(database_url, index_id)
    lost = {i: b for i, b in expected.items() if rows.get(i, None) != b}
    assert not lost, f"{len(lost)} writes answered 202 differ in the database, e.g. {list(lost.items())[:3]}"
    live = {i: b for i, b in rows.items() if b is not None}
    ids = sorted(set(rows) | set(expected))
    for start in range(0, len(ids), 100):
        chunk = ids[start:start + 100]
        answer = _search(http, search_url, {"q": "", "filters": {"sku": chunk}, "perPage": 100})
        got = [h["id"] for h in answer["hits"]]
        want = {i for i in chunk if i in live}
        assert len(got) == len(set(got)), f"duplicated hits: {got}"
        assert set(got) == want, f"missing {sorted(want - set(got))[:10]}, deleted but found {sorted(set(got) - want)[:10]}"
        assert answer["total"] == len(want)
        for hit in answer["hits"]:
            stored = live[hit["id"]]
            shown = {k: v for k, v in hit["document"].items() if k != "id"}
            assert shown == {k: v for k, v in stored.items() if k in shown and k != "id"} and shown, (hit, stored)
            assert set(shown) >= set(stored) - {"id"}, (hit, stored)
    total = _search(http, search_url, {"q": "", "perPage": 1})["total"]
    assert total == len(live), f"search counts {total} documents, the database {len(live)}"
    return len(live)


def _search(http: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        response = http.post(url, json={**body, "profile": PROFILE})
        if response.status_code == 200:
            return response.json()  # type: ignore[no-any-return]
        assert response.status_code == 503 and time.monotonic() < deadline, (response.status_code, response.text)
        time.sleep(0.2)


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        import json

        return json.loads(value)  # type: ignore[no-any-return]
    return dict(value)
