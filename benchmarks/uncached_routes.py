"""Uncached search on the storefront route and on the secret route, alternated in short phases on
one server, so the two are compared under the same conditions; the storefront profile and facets of
``search_bench`` (issue #11), real shopper queries, ``Cache-Control: no-cache`` with the secret key.

    python -m benchmarks.uncached_routes [--docs 30000] [--seconds 10] [--rounds 2]
"""

from __future__ import annotations

import argparse

from benchmarks.common import (
    STOREFRONT_PROFILE,
    api,
    expand,
    make_tenant,
    running_server,
    storefront_index,
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
        with api(server.base, tenant) as client:
            index = storefront_index(client, tenant, docs, name="bestbuy", shards=2)
            profile = index.create_profile(STOREFRONT_PROFILE)
        storefront = f"{server.base}/v1/search/{profile.profile_key}"
        secret = f"{server.base}/v1/projects/{tenant.project_id}/indices/{index.id}/search"
        fresh = {**tenant.headers, "Cache-Control": "no-cache"}  # only a secret key's no-cache is honoured
        load(storefront, fresh, queries[:300], 4, 3)  # warm-up
        for r in range(args.rounds):
            print(report(f"storefront route, uncached, round {r + 1}", load(storefront, fresh, queries, 4, args.seconds)))
            print(report(f"secret route, uncached, round {r + 1}",
                         load(secret, fresh, queries, 4, args.seconds, {"profileKey": profile.profile_key})))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
