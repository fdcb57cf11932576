"""How search, indexing and memory follow the catalog's size (issue 34): one command, one table.

    python -m benchmarks.catalog_bench [--docs 1000000] [--shards 2] [--seconds 15] [--reindexes 1] [--workers N]

Against ``shopsearch serve`` on the embedded default with its default serving processes: the Best
Buy catalog recombined to ``--docs`` products (``common.expand``) uploaded into ``--shards`` shards of
the storefront mapping with its 3 facets (brand, ``keyword[]`` categories, price ranges), then:

1. indexing: docs/s from the first upload until the last task succeeded;
2. uncached, 1 client and 4 clients: shopper-like word combinations, each sent once, on the
   storefront route (``search_bench``'s phases), p50 and p99;
3. the real-query mix with the answer cache, 8 clients, from a cold cache;
4. ``--reindexes`` full reindexes while two shop servers search (secret key, no cache): docs/s of
   each and the searches' p99, and the server's memory (RSS of its process tree) after each one
   against its memory once indexed and after the search phases (their caches).

Prints the phases as they finish and the issue's table at the end. At 1M products on this 2-core
machine a run takes 15-25 minutes and up to ~9 GiB of memory.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks.common import (
    STOREFRONT_PROFILE,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    storefront_index,
    tree_rss,
)
from benchmarks.indexing_bench import reindex_while_searching, rss_by_process
from benchmarks.search_bench import ORIGIN, load, measured, rate, real_mix, report, word_combinations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each search phase")
    parser.add_argument("--reindexes", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None, help="serve --workers (default: serve's own)")
    args = parser.parse_args()

    docs = expand(args.docs)
    per_phase = max(2_000, int(1_600 * args.seconds))
    combos = word_combinations(4 * per_phase)
    mix = real_mix(20_000)
    rows: list[tuple[str, str]] = []
    failed = False
    with running_server(workers=args.workers) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        client = api(server.base, tenant)
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="catalog", shards=args.shards)
        indexing = len(docs) / (time.perf_counter() - started)
        del docs
        indexed_rss = tree_rss(server.pid)
        print(f"indexing: {indexing:,.0f} docs/s; memory {indexed_rss / 2**30:.2f} GiB ({rss_by_process(server.pid)})",
              flush=True)
        rows.append(("indexing", f"{indexing:,.0f} docs/s"))
        profile = index.create_profile(STOREFRONT_PROFILE)
        url = f"{server.base}/v1/search/{profile.profile_key}"
        public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}

        def phase(name: str, requests: list[Any], clients: int) -> dict[str, Any]:
            nonlocal failed
            result = measured(server.pid, lambda: load(url, public, requests, clients, args.seconds))
            failed |= bool(result["errors"])
            print("  " + report(name, result), flush=True)
            return result

        load(url, public, combos[3 * per_phase:], 4, 3)  # warm-up: one pass over paths and columns
        one = phase("uncached, 1 client", combos[:per_phase], 1)
        rows.append(("uncached, 1 client", f"p50 {one['p50']:.1f} ms, p99 {one['p99']:.0f} ms"))
        four = phase("uncached, 4 clients", combos[per_phase:2 * per_phase], 4)
        rows.append(("uncached, 4 clients", f"{rate(four):,.0f}/s, p50 {four['p50']:.1f} ms, p99 {four['p99']:.0f} ms"))
        index.update_profile(profile.id, STOREFRONT_PROFILE)  # moves the index epoch: a cold answer cache
        eight = phase("real-query mix, 8 clients", mix, 8)
        rows.append(("real-query mix, 8 clients", f"{rate(eight):,.0f}/s, p99 {eight['p99']:.0f} ms"))

        # the answer, facet and expansion caches the searches filled: what a reindex is compared with
        searched_rss = tree_rss(server.pid)
        print(f"after the searches: memory {searched_rss / 2**30:.2f} GiB ({rss_by_process(server.pid)})", flush=True)
        after: list[int] = []
        for n in range(args.reindexes):
            result = reindex_while_searching(server, tenant, index.id, 2, tree_rss(server.pid))
            ms = result["latencies_ms"]
            failed |= bool(result["failures"]) or result["status"] != "succeeded"
            after.append(result["rss"])
            line = (f"{args.docs / result['seconds']:,.0f} docs/s, search p99 {pct(ms, 99):.0f} ms"
                    f"{'' if result['status'] == 'succeeded' else ' (' + result['status'] + ')'}"
                    f", {len(result['failures'])} failed searches")
            print(f"  reindex {n + 1}: {line}; memory {result['rss'] / 2**30:.2f} GiB "
                  f"(peak {result['peak_rss'] / 2**30:.2f}; {rss_by_process(server.pid)})", flush=True)
            rows.append((f"reindex {n + 1} while searching", line))
        memory = " → ".join(f"{rss / 2**30:.2f}" for rss in [indexed_rss, searched_rss, *after])
        rows.append(("memory, indexed → after the searches → after each reindex", f"{memory} GiB"))
        client.close()

    processes = "serve's default serving processes" if args.workers is None else f"{args.workers} serving process(es)"
    print(f"\n== {args.docs:,} products, {args.shards} shards, 3-facet storefront profile, embedded default, {processes}")
    print(f"| | {args.docs:,} products |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
