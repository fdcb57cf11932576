"""Uncached search on the storefront route and on the secret route, alternated in short phases on
one server, so the two are compared under the same conditions; the storefront profile and facets of
``search_bench`` (issue #11), real shopper queries, ``Cache-Control: no-cache`` with the secret key.

    python -m benchmarks.uncached_routes [--docs 30000] [--seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse

import httpx

from benchmarks.common import (
    STOREFRONT_FACETS,
    STOREFRONT_MAPPING,
    STOREFRONT_PROFILE,
    expand,
    make_tenant,
    running_server,
    upload_catalog,
    weighted_queries,
)
from benchmarks.search_bench import ORIGIN, load, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    docs = expand(args.docs)
    queries = weighted_queries(20_000)
    with running_server() as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        http = httpx.Client(base_url=server.base, headers=tenant.headers, timeout=120)
        index = http.post(f"/v1/projects/{tenant.project_id}/indices",
                          json={"name": "bestbuy", "shards": 2, "mapping": STOREFRONT_MAPPING}).json()
        index_url = f"/v1/projects/{tenant.project_id}/indices/{index['id']}"
        http.put(index_url + "/facets", json={"facets": STOREFRONT_FACETS}).raise_for_status()
        upload_catalog(server.base, tenant, index_url, docs)
        profile = http.post(index_url + "/profiles", json=STOREFRONT_PROFILE).json()
        storefront = f"{server.base}/v1/search/{profile['profileKey']}"
        secret = f"{server.base}{index_url}/search"
        fresh = {**tenant.headers, "Cache-Control": "no-cache"}  # only a secret key's no-cache is honoured
        load(storefront, fresh, queries[:300], 4, 3)  # warm-up
        for r in range(args.rounds):
            print(report(f"storefront route, uncached, round {r + 1}", load(storefront, fresh, queries, 4, args.seconds)))
            print(report(f"secret route, uncached, round {r + 1}",
                         load(secret, fresh, queries, 4, args.seconds, {"profileKey": profile["profileKey"]})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
