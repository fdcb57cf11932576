"""How long the worst storefront searches hold a real server, seen from ``/health`` and another tenant.

    python -m benchmarks.hostile_search [--docs 50000] [--postgres --redis]

Starts ``shopsearch serve``, uploads the Best Buy catalog expanded to ``--docs`` products with a
``sku`` keyword field holding a distinct value per product, a 9 MB product, and a second tenant with
a small index. Then sends each hostile storefront search (public key, allowed Origin) while two
probes poll ``/health`` and the other tenant's search; prints each hostile request's status and
time, and the probes' worst latency meanwhile. ``tests/e2e/test_hostile_search.py`` uses the same
setup to assert a bound.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from benchmarks.common import (
    MAPPING,
    Server,
    Tenant,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    upload_catalog,
    weighted_queries,
)

ORIGIN = "https://shop.example"
HUGE_DOC_BYTES = 9 * 1024 * 1024
# the operator may allow documents that large (SHOPSEARCH_MAX_DOCUMENT_BYTES, 100 KB by default)
SERVER_ENV = {"SHOPSEARCH_MAX_DOCUMENT_BYTES": str(HUGE_DOC_BYTES + 1024 * 1024)}
SHOP_MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {**MAPPING["fields"], "sku": {"type": "keyword", "filterable": True, "facetable": True}},
}


@dataclass
class Shop:
    tenant: Tenant
    index_url: str
    profile_key: str

    @property
    def storefront_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tenant.public_key}", "Origin": ORIGIN}


def make_shop(server: Server, docs: list[dict[str, Any]], profile: dict[str, Any]) -> Shop:
    """A tenant with a public key, an index holding ``docs`` and a saved profile."""
    tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
    with api(server.base, tenant) as client:
        project = client.project(tenant.project_id)
        index = project.index(project.create_index("catalog", mapping=SHOP_MAPPING).id)
        upload_catalog(server.base, tenant, index.id, docs, batch=500 if len(docs) < 50_000 else 1000)
        saved = index.create_profile({"name": "web", **profile})
    return Shop(tenant, f"/v1/projects/{tenant.project_id}/indices/{index.id}", saved.profile_key)


def catalog(n: int, huge: bool = True, huge_bytes: int = HUGE_DOC_BYTES) -> list[dict[str, Any]]:
    """``n`` products, each with a distinct ``sku`` (brand/name/id: many distinct, sortable values),
    and (``huge``) one product of ``huge_bytes`` that the word ``zanzibar`` finds."""
    docs = expand(n)
    for d in docs:
        d["sku"] = f"{d['brand'] or 'x'}-{d['name'][:40]}-{d['id']}"
    if huge:
        words = "zanzibar phone case charger cable screen protector camera "
        docs[-1] = {**docs[-1], "description": words * (huge_bytes // len(words))}
    return docs


HOSTILE_PROFILE: dict[str, Any] = {
    "queryFields": {"name": {"weight": 8}, "brand": {"weight": 4}, "description": {"weight": 1}},
    "facets": ["brand", "categories", "sku"],
    "highlight": ["name", "description"],
}


def hostile_requests(clauses: int = 400) -> dict[str, dict[str, Any]]:
    """The worst storefront search bodies found (name -> body): first the review's (past today's
    limits), then the worst still within them (``shared.limits``)."""
    ranges = [{"sku": {"gte": f"{c}", "lt": f"{c}~"}} for c in (chr(48 + i % 75) + str(i) for i in range(clauses))]
    in_limits = ranges[:61]  # with the or node: 62 of the 64 conditions (2 left for a caller)
    typos = " ".join(["zanzibbar", "chargerr", "protectorr", "cammera", "headphonez", "televison", "samsnug",
                      "wireles"] * 4)
    return {
        "or-ranges-on-keyword": {"q": "", "filters": {"or": ranges}, "facets": ["sku"]},
        "highlight-huge-document": {"q": "zanzibar phone case charger", "perPage": 100},
        "match-all-facets": {"q": "", "facets": ["brand", "categories", "sku"], "sort": None},
        "deep-nesting-300": {"q": "", "filters": _nested(300)},
        "and-not-a-list": {"q": "", "filters": {"and": 5}},
        "in-limits:61-ranges+facets+window": {"q": "", "filters": {"or": in_limits},
                                              "facets": ["brand", "categories", "sku"], "page": 10, "perPage": 100},
        "in-limits:broad-q-window-1000": {"q": "a", "facets": ["brand", "categories", "sku"], "page": 10,
                                          "perPage": 100},
        "in-limits:32-typo-words": {"q": typos, "facets": ["brand", "categories", "sku"]},
    }


def _nested(depth: int) -> dict[str, Any]:
    flt: dict[str, Any] = {"brand": "Samsung"}
    for i in range(depth):
        flt = {"not": flt} if i % 2 else {"and": [flt]}
    return flt


class Probe(threading.Thread):
    """Calls ``fn`` back to back until stopped; keeps every latency (seconds)."""

    def __init__(self, fn: Callable[[], httpx.Response]) -> None:
        super().__init__(daemon=True)
        self.fn = fn
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                response = self.fn()
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
            except httpx.HTTPError as exc:
                self.failures.append(repr(exc))
            self.latencies.append(time.perf_counter() - started)
            time.sleep(0.01)

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)


def under_probes(server: Server, other: Shop, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, float, dict[str, Probe]]:
    """``send()`` while ``/health`` and ``other``'s storefront search are polled; returns its answer,
    its duration and the probes (their worst latency covers only the time ``send`` ran)."""
    health_client = httpx.Client(base_url=server.base, timeout=120)
    # the other shop's own server (secret key: its Cache-Control: no-cache is honoured, so every
    # probe search reaches the shards)
    other_client = httpx.Client(base_url=server.base, headers=other.tenant.headers, timeout=120)
    queries = ["samsung tv", "iphone case", "laptop", "headphones", "camera"]
    counter = iter(range(10**9))
    probes = {
        "health": Probe(lambda: health_client.get("/health")),
        "other-tenant": Probe(lambda: other_client.post(
            f"/v1/search/{other.profile_key}", headers={"Cache-Control": "no-cache"},
            json={"q": queries[next(counter) % len(queries)]})),
    }
    try:
        for probe in probes.values():
            probe.start()
        time.sleep(0.3)
        for probe in probes.values():
            probe.latencies.clear()
        started = time.perf_counter()
        response = send()
        took = time.perf_counter() - started
        time.sleep(0.05)
    finally:
        for probe in probes.values():
            probe.stop.set()
        for probe in probes.values():
            probe.join(120)
        health_client.close()
        other_client.close()
    return response, took, probes


def ordinary(server: Server, docs: int, searches: int) -> None:
    """p50/p95/p99 of ``searches`` sequential uncached storefront searches with real shopper queries."""
    shop = make_shop(server, catalog(docs, huge=False), {**HOSTILE_PROFILE, "facets": ["brand", "categories"]})
    queries = weighted_queries(searches)
    latencies = []
    # the shop's secret key: its no-cache is honoured (before and after issue 9), so every search is computed
    with httpx.Client(base_url=server.base, headers={**shop.tenant.headers, "Cache-Control": "no-cache"},
                      timeout=60) as http:
        for q in queries[:50]:  # warm up
            http.post(f"/v1/search/{shop.profile_key}", json={"q": q})
        for q in queries:
            started = time.perf_counter()
            response = http.post(f"/v1/search/{shop.profile_key}", json={"q": q})
            latencies.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    print(json.dumps({"docs": docs, "searches": searches, **{f"p{p}_ms": round(pct(latencies, p), 2)
                                                            for p in (50, 95, 99)},
                      "mean_ms": round(sum(latencies) / len(latencies), 2)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--clauses", type=int, default=400)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--redis", action="store_true")
    parser.add_argument("--ordinary", type=int, default=0,
                        help="only time this many ordinary storefront searches (real queries, no-cache)")
    args = parser.parse_args()
    with running_server(postgres=args.postgres, redis=args.redis, extra_env=SERVER_ENV) as server:
        if args.ordinary:
            ordinary(server, args.docs, args.ordinary)
            return
        started = time.perf_counter()
        shop = make_shop(server, catalog(args.docs), HOSTILE_PROFILE)
        other = make_shop(server, catalog(500, huge=False), {"queryFields": {"name": {"weight": 1}}})
        print(f"set up {args.docs} + 500 products in {time.perf_counter() - started:.0f} s")
        with httpx.Client(base_url=server.base, headers=shop.storefront_headers, timeout=600) as http:
            for name, body in hostile_requests(args.clauses).items():
                response, took, probes = under_probes(server, other, lambda body=body: http.post(
                    f"/v1/search/{shop.profile_key}", headers={"Cache-Control": "no-cache"}, json=body))
                code = response.json().get("error", {}).get("code", "") if response.status_code != 200 else ""
                print(json.dumps({"request": name, "status": response.status_code, "code": code,
                                  "seconds": round(took, 3),
                                  **{f"worst_{k}_ms": round(p.worst * 1000, 1) for k, p in probes.items()},
                                  **{f"{k}_failures": len(p.failures) for k, p in probes.items()}}))


if __name__ == "__main__":
    main()
