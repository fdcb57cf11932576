"""Storefront suggest speed against a real server (issue #13: p50 <= 3 ms, p99 <= 15 ms at 8 clients).

    python -m benchmarks.suggest_bench [--docs 100000] [--seconds 10] [--workers N] [--postgres --redis]

1. Starts ``shopsearch serve`` (``--workers`` passed through), uploads the Best Buy catalog expanded
   to ``--docs`` products with ``name``, ``brand`` and ``categories`` marked ``suggest``, sets the
   suggestion sources (brand x3, categories x2, name x0.5; typo tolerance on) and runs a rebuild
   (its time is printed).
2. Keystrokes: every prefix of real shopper queries (drawn by popularity), as a search box sends
   them while a shopper types, plus a tenth with a typo in the last word. Phases of ``--seconds``
   each, on the storefront route with a public key and an allowed Origin, 8 clients:
   - distinct keystrokes: each prefix sent once (answers computed, not from the answer cache);
   - keystroke mix: prefixes in typing order, popular queries repeating (the answer cache helps).
3. The in-memory matcher alone, in this process, on the same built suggestions (what a request
   costs beyond HTTP, key and epoch checks).

Load comes from ``wrk`` when installed, else from an aiohttp client in this process (see
``search_bench``); figures include the server's cores and CPU per request.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import psutil
from shopsearch_client import Client

from benchmarks.common import (
    STOREFRONT_MAPPING,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    storefront_index,
)
from benchmarks.common import weighted_queries as real_queries
from benchmarks.search_bench import load, measured, report

ORIGIN = "https://shop.example"
SOURCES = [{"field": "brand", "weight": 3}, {"field": "categories", "weight": 2}, {"field": "name", "weight": 0.5}]


def suggest_mapping() -> dict[str, Any]:
    fields = dict(STOREFRONT_MAPPING["fields"])
    for name in ("name", "brand", "categories"):
        fields[name] = {**fields[name], "suggest": True}
    return {**STOREFRONT_MAPPING, "fields": fields}


def typo(word: str, rng: random.Random) -> str:
    if len(word) < 5:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def keystrokes(k: int, seed: int = 7) -> list[str]:
    """Prefixes of real queries as typed (each query from 1 character to the whole), a tenth of
    the queries with a transposition in their last word."""
    rng = random.Random(seed)
    out: list[str] = []
    for q in real_queries(k, seed=seed):
        if rng.random() < 0.1:
            words = q.split()
            q = " ".join([*words[:-1], typo(words[-1], rng)]) if words else q
        out.extend(q[:n] for n in range(1, len(q) + 1) if not q[:n].endswith(" "))
    return out


def in_process(database_url: str, index_id: str, prefixes: list[str]) -> str:
    from control_plane.db import make_engine, make_sessionmaker
    from control_plane.suggestion import repository
    from control_plane.suggestion.service import settings_of
    from control_plane.suggestion.serving import matcher_from

    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine)() as db:
            row = repository.config_by_index(db, index_id, with_built=True)
            assert row is not None
            started = time.perf_counter()
            matcher = matcher_from(row.built, settings_of(row), set())
            loaded = time.perf_counter() - started
    finally:
        engine.dispose()
    latencies = []
    for p in prefixes:
        started = time.perf_counter()
        for m in matcher.match(p, 8, True):
            matcher.highlight(m)
        latencies.append((time.perf_counter() - started) * 1000)
    return (f"{'matcher in-process (load ' + f'{loaded:.2f}s, {len(matcher):,} suggestions)':46s} n={len(latencies):6d}"
            f"  p50 {pct(latencies, 50):6.3f} ms  p99 {pct(latencies, 99):6.3f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--workers", type=int, default=None, help="passed as `shopsearch serve --workers N`")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--redis", action="store_true")
    args = parser.parse_args()

    docs = expand(args.docs)
    mix = keystrokes(4_000)
    distinct = list(dict.fromkeys(mix))
    random.Random(3).shuffle(distinct)
    lines: list[str] = []
    with running_server(postgres=args.postgres, redis=args.redis, workers=args.workers) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        client = api(server.base, tenant)
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="bestbuy", shards=2, mapping=suggest_mapping(),
                                 facets=None)
        index_id = index.id
        print(f"indexed {len(docs)} products in {time.perf_counter() - started:.1f}s", flush=True)
        config = index.get_suggestion_config().model_dump(by_alias=True)
        config.update(sources=SOURCES, maxSuggestions=8, typoTolerance=True)
        suggest_key = index.update_suggestion_config(config).suggest_key
        for text, weight in (("samsung galaxy case", 50), ("zzqx finds nothing", 50)):  # the second is dropped
            index.add_custom_suggestion(text, weight=weight)
        # the settings and custom suggestions enqueued rebuilds of their own: time one rebuild alone
        index.wait_for_tasks(list(index.iter_tasks(type=["suggestions.rebuild"], status=["enqueued", "processing"])))
        started = time.perf_counter()
        task = index.wait_for_task(index.rebuild_suggestions(), timeout=1800, poll_interval=0.05)
        lines.append(f"rebuild: {time.perf_counter() - started:.1f}s, {task.details}")
        print(lines[-1], flush=True)
        url = f"{server.base}/v1/suggest/{suggest_key}"
        public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}
        with Client(server.base, tenant.public_key, headers={"Origin": ORIGIN}) as storefront:
            sample = storefront.suggest(suggest_key, "sam")
        lines.append(f"sample 'sam': {[s.highlighted for s in sample.suggestions[:4]]}")
        client.close()
        load(url, public, distinct[-2000:], 4, 2)  # warm-up: every serving process loads the suggestions

        def phase(name: str, requests: list[str], clients: int) -> dict[str, Any]:
            result = measured(server.pid, lambda: load(url, public, requests, clients, args.seconds))
            line = report(name, result)
            lines.append(line)
            print(line, flush=True)
            return result

        computed = phase("distinct keystrokes (computed), 8 clients", distinct[:-2000], 8)
        phase("keystroke mix (cache helps), 8 clients", mix, 8)
        lines.append(in_process(server.database_url, index_id, distinct[:5000]))
    print(f"\n== storefront suggest, Best Buy catalog expanded to {len(docs)} products, serve --workers "
          f"{args.workers if args.workers is not None else '(default)'}{', PostgreSQL' if args.postgres else ''}"
          f"{', Redis' if args.redis else ''}; {psutil.cpu_count()} cores on this machine")
    for line in lines:
        print(line)
    ok = computed["p50"] <= 3 and computed["p99"] <= 15 and not computed["errors"]
    print(f"distinct keystrokes, 8 clients: p50 {computed['p50']:.2f} ms (target <= 3), p99 {computed['p99']:.2f} ms "
          f"(target <= 15): {'ok' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
