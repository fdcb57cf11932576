"""Analytics cost and click/conversion event ingest against a real server.

    python -m benchmarks.analytics_bench [--docs 100000] [--shards 2] [--seconds 8] [--rounds 2]
                                         [--workers N] [--postgres --redis] [--batch 500]

1. Starts ``shopsearch serve`` (as ``search_bench``), uploads the Best Buy catalog expanded to
   ``--docs`` products and saves the storefront profile twice: analytics on, and the same settings
   with ``analytics: false``.
2. Searches/s with analytics recording on vs off, in one run: the real-query mix with the answer
   cache (where recording is the largest share of a search's cost) at 8 clients, on the storefront
   route, alternating off/on phases ``--rounds`` times after a warm-up of each; the ratio of the
   summed rates. Then checks that analytics counted every answered search of the "on" phases once.
3. Event ingest: clicks and conversions on real queryIds in batches of ``--batch``, secret key, 4
   clients; events accepted per second.

Load comes from ``wrk`` when installed, else from an aiohttp client in this process (see
``search_bench``); on a shared 2-core machine the figures move with the other work on it.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import psutil

from benchmarks.common import STOREFRONT_PROFILE, api, expand, make_tenant, running_server, storefront_index
from benchmarks.search_bench import load, measured, rate, real_mix, report

ORIGIN = "https://shop.example"


def _events(query_ids: list[tuple[str, list[str]]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        query_id, hits = rng.choice(query_ids)
        position = rng.randrange(len(hits))
        out.append({"type": "click" if rng.random() < 0.8 else "conversion", "queryId": query_id,
                    "documentId": hits[position], "position": position + 1})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=2, help="off/on phase pairs")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=500, help="events per POST /v1/events")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--redis", action="store_true")
    args = parser.parse_args()

    docs = expand(args.docs)
    mix = real_mix(20_000)
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    # the ingest phase replays its events: each (queryId, document, type) counts once, and no daily
    # cap per index (SHOPSEARCH_ANALYTICS_EVENTS_PER_DAY) should stop it midway
    with running_server(postgres=args.postgres, redis=args.redis, workers=args.workers,
                        extra_env={"SHOPSEARCH_ANALYTICS_EVENTS_PER_DAY": "1000000000"}) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        client = api(server.base, tenant)
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="bestbuy", shards=args.shards)
        print(f"indexed {len(docs)} products in {time.perf_counter() - started:.1f}s", flush=True)
        urls = {}
        for name, analytics in (("on", True), ("off", False)):
            profile = index.create_profile({**STOREFRONT_PROFILE, "name": f"analytics {name}", "analytics": analytics})
            urls[name] = f"{server.base}/v1/search/{profile.profile_key}"
        public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}

        # --- searches/s, analytics on vs off
        for name in ("off", "on"):  # warm-up: the popular answers of each profile cached once
            load(urls[name], public, mix, args.clients, min(3.0, args.seconds))
        time.sleep(3)  # the warm-up's counts written (every 2 s)
        before = index.analytics().totals.searches
        results: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        for round_ in range(args.rounds):
            for name in ("off", "on"):
                result = measured(server.pid, lambda name=name: load(urls[name], public, mix, args.clients, args.seconds))
                results[name].append(result)
                say(report(f"cached mix, {args.clients} clients, analytics {name} ({round_ + 1})", result))
        off = sum(rate(r) for r in results["off"])
        on = sum(rate(r) for r in results["on"])
        time.sleep(3)  # the last counts written (every 2 s)
        after = index.analytics().totals.searches
        answered_on = sum(r["count"] - r["errors"] for r in results["on"])
        say(f"  analytics counted {after - before} searches during the 'on' phases; {answered_on} were answered")

        # --- event ingest
        rng = random.Random(7)
        query_ids = []
        for q in [m if isinstance(m, str) else m["q"] for m in mix[:300]]:
            answer = index.search(q, per_page=10)
            if answer.hits:  # an event names a hit of its search (else 404)
                query_ids.append((answer.query_id, [h.id for h in answer.hits]))
        bodies = [{"events": _events(query_ids, args.batch, rng)} for _ in range(40)]
        clicks_before = index.analytics().totals
        ingest = measured(server.pid, lambda: load(f"{server.base}/v1/events", tenant.headers, bodies, 4, args.seconds))
        events_per_s = rate(ingest) * args.batch
        say(report(f"events, batches of {args.batch}, 4 clients", ingest).replace("/s ", " req/s ", 1)
            + f"  = {events_per_s:,.0f} events/s")
        totals = index.analytics().totals
        recorded = (totals.clicks + totals.conversions) - (clicks_before.clicks + clicks_before.conversions)
        client.close()
        distinct = len({(e["queryId"], e["documentId"], e["type"]) for body in bodies for e in body["events"]})
        say(f"  events recorded: {recorded} (each distinct event once: {distinct} in the batches); "
            f"sent: {(ingest['count'] - ingest['errors']) * args.batch}")

    print(f"\n== analytics, Best Buy catalog expanded to {len(docs)} products, {args.shards} shards, "
          f"serve --workers {args.workers if args.workers is not None else '(default)'}"
          f"{', PostgreSQL' if args.postgres else ''}{', Redis' if args.redis else ''}; {psutil.cpu_count()} cores")
    for line in lines:
        print(line)
    ratio = on / off if off else 0.0

    def cpu_per_search(runs: list[dict[str, Any]]) -> float:
        return 1000 * sum(r["cores"] * r["elapsed"] for r in runs) / max(1, sum(r["count"] - r["errors"] for r in runs))

    print(f"server CPU per search, analytics off / on: {cpu_per_search(results['off']):.3f} / "
          f"{cpu_per_search(results['on']):.3f} ms (steadier than rates on a shared machine)")
    print("== targets (issue #13)")
    print(f"searches/s with analytics on / off: {on / args.rounds:,.0f} / {off / args.rounds:,.0f} = {ratio:.1%}"
          f"  (target >= 90%)  {'met' if ratio >= 0.9 else 'NOT met'}")
    print(f"events ingest: {events_per_s:,.0f} events/s  (target >= 5,000)  {'met' if events_per_s >= 5000 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
