"""A hostile storefront search never holds up ``/health`` or another tenant's search (issue 9, item 1).

Over real HTTP against a real ``shopsearch serve`` on PostgreSQL + Redis (the search path and its
limits are the engine's and the door's, the same on both backends; this test runs alone on the machine
(``exclusive``), so its minutes count twice in the suite's budget: one backend, the production one):
a shop of a few thousand Best Buy products with a keyword field of one distinct value per product
and the largest product the server accepts (100 KB by default; ``python -m benchmarks.hostile_search``
measures a 9 MB one, with the limit raised: highlighting it is capped too); another shop. While each hostile search runs (sent with the shop's public key
from its allowed origin: what any visitor can send), ``/health`` and the other shop's uncached
search are polled back to back; none may take longer than ``BOUND_SECONDS``. The hostile searches
are the review's (past today's limits: refused at once) and the worst still within the limits
(``benchmarks.hostile_search``); those are answered 200, or 503 ``SEARCH_TIMEOUT``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from benchmarks.hostile_search import HOSTILE_PROFILE, catalog, hostile_requests, make_shop, under_probes
from tests.fixtures.server import Server, running_server

pytestmark = pytest.mark.exclusive  # bounds the probes' latency

BOUND_SECONDS = 0.25
DOCS = 3000
HUGE_BYTES = 95 * 1024  # the largest product the server takes by default (MAX_DOCUMENT_BYTES: 100 KB)
ATTEMPTS = 3
PAST_LIMITS = {"or-ranges-on-keyword", "deep-nesting-300", "and-not-a-list"}


def _uncached(body: dict[str, Any], attempt: int) -> dict[str, Any]:
    """``body`` with a condition every product meets, so each attempt misses the answer cache
    (a public key's ``Cache-Control: no-cache`` is not honoured)."""
    filters = body.get("filters") or {}
    if not isinstance(filters, dict) or "not" in filters:
        return body
    return {**body, "filters": {**filters, "not": {"sku": f"no such sku {attempt}"}}}


@pytest.fixture
def shops() -> Iterator[tuple[Server, Any, Any]]:
    """The server and its two shops, made in the test's setup: beside other tests (only the call,
    which measures, keeps the machine to itself)."""
    with running_server(postgres=True, redis=True) as server:
        shop = make_shop(server, catalog(DOCS, huge_bytes=HUGE_BYTES), HOSTILE_PROFILE)
        other = make_shop(server, catalog(300, huge=False), {"queryFields": {"name": {"weight": 1}}})
        yield server, shop, other


def test_hostile_search_never_delays_health_or_another_tenant(shops: tuple[Server, Any, Any]) -> None:
    server, shop, other = shops
    report = []
    with httpx.Client(base_url=server.base, headers=shop.storefront_headers, timeout=120) as http:
        for name, body in hostile_requests().items():
            # a shared 2-core machine has its own hiccups: a request passes when one of up to
            # ATTEMPTS runs stays within the bound (a stall of the server's making repeats)
            for attempt in range(ATTEMPTS):
                response, took, probes = under_probes(server, other, lambda body=body, n=attempt: http.post(
                    f"/v1/search/{shop.profile_key}", json=_uncached(body, n)))
                code = response.json()["error"]["code"] if response.status_code != 200 else None
                if name in PAST_LIMITS:
                    assert (response.status_code, code) == (400, "VALIDATION_ERROR"), (name, response.text[:300])
                else:
                    assert response.status_code == 200 or code == "SEARCH_TIMEOUT", (name, response.text[:300])
                for probe_name, probe in probes.items():
                    assert probe.latencies, (name, probe_name)
                    assert not probe.failures, (name, probe_name, probe.failures[:3])
                worst = {k: round(p.worst, 3) for k, p in probes.items()}
                report.append((name, attempt, response.status_code, round(took, 3), worst))
                if max(worst.values()) <= BOUND_SECONDS:
                    break
    print("\n".join(map(str, report)))  # shown with -s: each request's status, seconds and the probes' worst
    last = {r[0]: r for r in report}
    slow = [r for r in last.values() if max(r[4].values()) > BOUND_SECONDS]
    assert not slow, f"probes slower than {BOUND_SECONDS}s while a hostile search ran: {slow} (all: {report})"
