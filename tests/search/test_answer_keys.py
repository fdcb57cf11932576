"""A cached answer is keyed by exactly what decides it: two requests with one key get one answer.

The answer cache once keyed a query by a cleaned-up text (lower case, spaces collapsed) while the
engine searched the raw text, where a trailing space matters (``"iph "``: the last word is complete,
no prefix; ``"iph"`` finds the iPhones). One storefront search for ``"iph "`` then made every
shopper's ``"iph"`` answer nothing until the entry expired. Here request variants (spaces, case,
Unicode forms, numbers in filters) are each searched uncached, grouped by the key the service gives
them (``search.service.prepare``), and every group must hold one answer.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from typing import Any

import httpx
import pytest

from benchmarks.common import FIELDS, MAPPING, load_products, upload_catalog
from control_plane.org.models import Organization
from control_plane.search.profile_query import SearchRequest
from control_plane.search.service import prepare
from tests.factories import bearer, make_key
from tests.fixtures.app import StartedAppClient
from tests.fixtures.server import running_server
from tests.fixtures.tenants import make_tenant
from tests.index.helpers import create_catalog_index
from tests.index.helpers import make_tenant as make_test_tenant

PROFILE = {"name": "storefront", "queryFields": FIELDS, "facets": ["brand"], "perPage": 10}
WORDS = ["iph", "iphone 7", "samsung galaxy", "galaxy s8", "café", "sm-g930", "Straße", "otterbox"]


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _spellings(text: str) -> list[str]:
    return [
        text, text + " ", " " + text, "  " + text + "  ", text.upper(), text.title(), text + "\t", text + "\u00a0",
        unicodedata.normalize("NFD", text), _fullwidth(text), "  ".join(text.split()), text + "?", text[:-1],
    ]


def _bodies() -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = [{"q": q} for word in WORDS for q in _spellings(word)]
    for bound in (100, 100.0, 1e2, 99.99, 100.5):
        bodies.append({"q": "case", "filters": {"price": {"lt": bound}}})
        bodies.append({"q": "case ", "filters": {"price": {"gte": bound}}})
    bodies += [{"q": "phone", "filters": {"brand": b}} for b in ("Apple", ["Apple"], "apple", ["Apple", "Apple"])]
    return bodies


def _essence(answer: dict[str, Any]) -> Any:
    return ([(h["id"], h["score"], h.get("highlights")) for h in answer["hits"]], answer["total"], answer["facets"],
            answer["appliedRules"])


@pytest.fixture(scope="module")
def shop(app):
    with StartedAppClient(app) as client:
        tenant = make_test_tenant(app)
        with app.state.runtime.sessions.begin() as db:  # ~130 searches in a few seconds
            db.get(Organization, tenant.account.org_id).plan = "enterprise"
        index = create_catalog_index(client, tenant, load_products(), MAPPING, "keys")
        profile = client.post(tenant.url(index["id"], "/profiles"), json=PROFILE, headers=tenant.headers).json()
    return profile["profileKey"], make_key(app, tenant.project_id, access="read")


def test_requests_with_one_key_get_one_answer(app, client, shop) -> None:
    profile_key, key = shop
    url = f"/v1/search/{profile_key}"
    fresh = {**bearer(key), "Cache-Control": "no-cache"}
    assert client.post(url, json={"q": "warm"}, headers=fresh).status_code == 200
    resolved = app.state.runtime.search.storefront.get(profile_key)
    assert resolved is not None
    groups: dict[bytes, list[tuple[dict[str, Any], Any]]] = defaultdict(list)
    for body in _bodies():
        response = client.post(url, json=body, headers=fresh)
        assert response.status_code == 200, (body, response.text)
        groups[prepare(resolved, SearchRequest.model_validate(body))[2]].append((body, _essence(response.json())))
    for members in groups.values():
        first = members[0]
        for other in members[1:]:
            assert other[1] == first[1], f"{first[0]} and {other[0]} share a key but not an answer"
    # the test has teeth: spellings do share keys, and the trailing space is not one of them
    assert max(len(m) for m in groups.values()) >= 6
    keys = {body["q"]: k for k, members in groups.items() for body, _ in members if "filters" not in body}
    assert keys["iph"] == keys["IPH"] == keys[" iph"] == keys[_fullwidth("iph")] != keys["iph "]


def _search(http: httpx.Client, url: str, q: str, headers: dict[str, str]) -> int:
    response = http.post(url, json={"q": q}, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["total"])


@pytest.mark.long
@pytest.mark.parametrize("production", [False, True], ids=["sqlite", "postgres-redis"])
def test_a_trailing_space_cannot_poison_the_cached_answers_of_two_processes(production: bool) -> None:
    """The finding as a shopper would play it, on ``serve --workers 2`` over HTTP: right after a
    catalog change, ``"iph "`` (no hits) must not become the answer of ``"iph"`` in any process."""
    origin = "https://shop.example"
    with running_server(postgres=production, redis=production, workers=2) as server:
        tenant = make_tenant(server.database_url, public_origins=[origin])
        assert tenant.public_key is not None
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            created = http.post(f"/v1/projects/{tenant.project_id}/indices", json={"name": "p", "mapping": MAPPING})
            assert created.status_code == 201, created.text
            index_url = f"/v1/projects/{tenant.project_id}/indices/{created.json()['id']}"
            upload_catalog(server.base, tenant, created.json()["id"], load_products()[:600])
            profile = http.post(index_url + "/profiles", json=PROFILE).json()["profileKey"]
            shopper = {"Authorization": f"Bearer {tenant.public_key}", "Origin": origin}
            url = f"/v1/search/{profile}"
            assert _search(http, url, "iph", shopper) > 0
            upload_catalog(server.base, tenant, created.json()["id"], load_products()[600:700])  # the epoch moves
            assert _search(http, url, "iph ", shopper) == 0
        for q in ("iph", "IPH", " iph", "iph"):
            for _ in range(4):  # fresh connections land on either process
                with httpx.Client(base_url=server.base, timeout=60) as http:
                    assert _search(http, url, q, shopper) > 0, q
