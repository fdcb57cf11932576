"""Facet value search speed against a real server (issue 31: p50 <= 3 ms on a field with 50,000
distinct values).

    python -m benchmarks.facet_values_bench [--docs 100000] [--values 50000] [--requests 400]

Starts ``shopsearch serve`` (one serving process), uploads the Best Buy catalog expanded to
``--docs`` products, each with a ``seller`` drawn from ``--values`` distinct names (two words of the
catalog's vocabulary and a number: "Galaxy Charger 1234"), and a profile faceting on it. Then one
client sends facet value searches, uncached (``Cache-Control: no-cache`` with a secret key), in
three mixes: what a shopper types in the seller box (1-5 letters of a word) over the whole catalog,
the same under a search text, and under a filter. Prints p50/p99 latency (client side) and the
server's own ``tookMs``.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from typing import Any

import httpx

from benchmarks.common import MAPPING, expand, make_tenant, pct, running_server, upload_catalog


def sellers(n: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    words = sorted({w for p in expand(3000) for w in re.findall(r"[A-Za-z]{4,}", p["name"])})
    out: set[str] = set()
    while len(out) < n:
        out.add(f"{rng.choice(words).title()} {rng.choice(words).title()} {rng.randrange(10_000)}")
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--values", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    rng = random.Random(3)
    names = sellers(args.values)
    docs = expand(args.docs)
    for i, doc in enumerate(docs):
        doc["seller"] = names[i % len(names)] if i < len(names) else rng.choice(names)
    mapping: dict[str, Any] = {**MAPPING, "fields": {**MAPPING["fields"],
                                                     "seller": {"type": "keyword", "facetable": True,
                                                                "filterable": True}}}
    with running_server(workers=1) as server:
        tenant = make_tenant(server.database_url)
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=600) as http:
            index = http.post(f"/v1/projects/{tenant.project_id}/indices",
                              json={"name": "fv", "shards": 2, "mapping": mapping}).json()
            index_url = f"/v1/projects/{tenant.project_id}/indices/{index['id']}"
            started = time.perf_counter()
            upload_catalog(server.base, tenant, index["id"], docs)
            print(f"indexed {len(docs):,} products ({len(set(d['seller'] for d in docs)):,} sellers) "
                  f"in {time.perf_counter() - started:.0f} s")
            profile = http.post(index_url + "/profiles", json={
                "name": "fv", "queryFields": {"name": {"weight": 3}, "brand": {}}, "facets": ["seller", "brand"]}
            ).json()["profileKey"]
            url = index_url + "/facet-values"
            words = sorted({w.lower() for n in names for w in n.split() if w.isalpha()})
            fresh = {"Cache-Control": "no-cache"}
            mixes = {
                "whole catalog": {},
                "under a search text": {"query": "phone case"},
                "under a filter": {"filters": {"brand": ["Samsung", "Apple", "Insignia"]}},
            }
            print(f"{'mix':<22} {'p50 ms':>7} {'p99 ms':>7} {'tookMs p50':>10} {'values/answer':>13}")
            for label, extra in mixes.items():
                lat, took, found = [], [], []
                for i in range(args.requests + 20):
                    word = rng.choice(words)
                    typed = word[: rng.randint(1, min(5, len(word)))]
                    t0 = time.perf_counter()
                    response = http.post(url, headers=fresh, json={"field": "seller", "q": typed,
                                                                   "profileKey": profile, **extra})
                    elapsed = (time.perf_counter() - t0) * 1000
                    response.raise_for_status()
                    if i >= 20:  # warm-up: the word index of each shard is built on first use
                        body = response.json()
                        lat.append(elapsed)
                        took.append(body["tookMs"])
                        found.append(len(body["values"]))
                print(f"{label:<22} {pct(lat, 50):7.2f} {pct(lat, 99):7.2f} {pct(took, 50):10.2f} "
                      f"{sum(found) / len(found):13.1f}")


if __name__ == "__main__":
    main()
