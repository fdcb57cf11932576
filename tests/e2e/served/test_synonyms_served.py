"""Synonyms over real HTTP against a served catalog (both backends): a synonym created through the
API changes what a search finds, disabling and deleting it undo that, and another tenant's key
cannot see it."""

from __future__ import annotations

import time

import httpx

from tests.e2e.served.conftest import Served
from tests.fixtures.tenants import make_tenant


def _until(check, timeout: float = 20) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the change did not reach search"
        time.sleep(0.1)


def test_a_synonym_changes_what_search_finds(served: Served) -> None:
    assert served.search_ids("settee") == []
    created = served.http.post(served.url("/synonyms"), json={"type": "multiway", "terms": ["settee", "couch", "sofa"]})
    assert created.status_code == 201, created.text
    synonym = served.url(f"/synonyms/{created.json()['id']}")
    _until(lambda: set(served.search_ids("settee")) == {"p1", "p4"})

    disabled = served.http.put(synonym, json={"type": "multiway", "terms": ["settee", "couch", "sofa"], "enabled": False})
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False, disabled.text
    _until(lambda: served.search_ids("settee") == [])

    assert served.http.delete(synonym).status_code == 204
    gone = served.http.get(synonym)
    assert (gone.status_code, gone.json()["error"]["code"]) == (404, "NOT_FOUND")


def test_another_tenants_key_does_not_find_the_synonyms(served: Served) -> None:
    created = served.http.post(served.url("/synonyms"), json={"type": "oneway", "input": "lamp", "synonyms": ["light"]})
    assert created.status_code == 201, created.text
    other = make_tenant(served.server.database_url)
    with httpx.Client(base_url=served.server.base, headers=other.headers, timeout=30) as theirs:
        for response in (theirs.get(served.url("/synonyms")), theirs.get(served.url(f"/synonyms/{created.json()['id']}"))):
            assert (response.status_code, response.json()["error"]["code"]) == (404, "NOT_FOUND"), response.text
