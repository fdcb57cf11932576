"""Storefront search speed against a real server, beside raw Whoosh and tantivy on the same queries.

    python -m benchmarks.search_bench [--docs 100000] [--shards 2] [--seconds 20] [--postgres --redis]

1. Starts ``shopsearch serve`` (embedded default unless ``--postgres``/``--redis``), uploads the Best
   Buy catalog expanded to ``--docs`` products into an index of ``--shards`` shards, saves a profile
   (name > brand > categories > description, a brand facet) and a public key for an origin.
2. Uncached: real shopper queries drawn by popularity, ``Cache-Control: no-cache`` on every request,
   4 concurrent clients → p50/p95/p99 (targets p50 ≤ 10 ms, p99 ≤ 60 ms).
3. The realistic mix with the cache (same popularity-weighted stream; popular queries repeat) at 4
   and 16 concurrent clients → searches/s and p99 (target ≥ 1,000/s with p99 ≤ 50 ms).
4. Stops the server and runs raw Whoosh (a MultifieldParser searcher over the very shard files the
   service built) and tantivy (in-process, same documents) on the same queries, printed beside.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from benchmarks.common import (
    FIELDS,
    MAPPING,
    expand,
    make_tenant,
    pct,
    running_server,
    upload_catalog,
    weighted_queries,
)

ORIGIN = "https://shop.example"


async def _load(url: str, headers: dict[str, str], queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    cursor = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal cursor
        while time.perf_counter() < deadline:
            q = queries[cursor % len(queries)]
            cursor += 1
            started = time.perf_counter()
            try:
                async with session.post(url, json={"q": q}, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        errors.append(str(response.status))
            except aiohttp.ClientError as exc:
                errors.append(repr(exc))
            latencies.append(time.perf_counter() - started)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {"latencies": latencies, "errors": errors, "elapsed": elapsed}


def load(url: str, headers: dict[str, str], queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    return asyncio.run(_load(url, headers, queries, clients, seconds))


def report(name: str, result: dict[str, Any]) -> str:
    lat = [x * 1000 for x in result["latencies"]]
    rate = len(lat) / result["elapsed"] if result["elapsed"] else 0.0
    return (f"{name:44s} n={len(lat):6d}  {rate:7.0f}/s  p50 {pct(lat, 50):6.2f} ms  p95 {pct(lat, 95):6.2f} ms  "
            f"p99 {pct(lat, 99):6.2f} ms  errors {len(result['errors'])}")


def in_process_line(name: str, latencies: list[float]) -> str:
    lat = [x * 1000 for x in latencies]
    return f"{name:44s} n={len(lat):6d}  p50 {pct(lat, 50):6.2f} ms  p95 {pct(lat, 95):6.2f} ms  p99 {pct(lat, 99):6.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--redis", action="store_true")
    parser.add_argument("--whoosh-queries", type=int, default=200)
    args = parser.parse_args()

    docs = expand(args.docs)
    queries = weighted_queries(20_000)
    lines: list[str] = []
    shard_dirs: list[Path] = []
    with running_server(postgres=args.postgres, redis=args.redis, keep=True) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        http = httpx.Client(base_url=server.base, headers=tenant.headers, timeout=120)
        index = http.post(f"/v1/projects/{tenant.project_id}/indices",
                          json={"name": "bestbuy", "shards": args.shards, "mapping": MAPPING}).json()
        index_url = f"/v1/projects/{tenant.project_id}/indices/{index['id']}"
        _, indexed = upload_catalog(server.base, tenant, index_url, docs)
        print(f"indexed {len(docs)} products into {args.shards} shards in {indexed:.1f}s ({len(docs) / indexed:,.0f} docs/s)")
        profile = http.post(index_url + "/profiles", json={
            "name": "storefront", "queryFields": FIELDS, "facets": ["brand"], "perPage": 20,
            "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 0.05}],
        }).json()
        url = f"{server.base}/v1/search/{profile['profileKey']}"
        headers = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}

        load(url, {**headers, "Cache-Control": "no-cache"}, queries[:300], 4, 3)  # warm-up
        uncached = load(url, {**headers, "Cache-Control": "no-cache"}, queries, 4, args.seconds)
        lines.append(report("service, uncached, 4 clients", uncached))
        cached4 = load(url, headers, queries, 4, args.seconds)
        lines.append(report("service, realistic mix with cache, 4 clients", cached4))
        cached16 = load(url, headers, queries, 16, args.seconds)
        lines.append(report("service, realistic mix with cache, 16 clients", cached16))
        generation = http.get(index_url).json().get("servingGeneration", 1)
        shard_root = server.data_dir / "shards" / index["id"]
        shard_dirs = sorted(p for p in shard_root.glob("g*/s*") if p.is_dir())
        if not shard_dirs:
            shard_dirs = sorted(p for p in shard_root.rglob("*") if (p / "meta.json").exists() or any(p.glob("*.toc")))
        print(f"(serving generation {generation}; shard dirs: {[str(p.relative_to(server.data_dir)) for p in shard_dirs]})")

    from benchmarks.engine_bench import bench_tantivy, bench_whoosh

    sample = queries[: args.whoosh_queries]
    whoosh_lat, whoosh_errors = bench_whoosh([str(p) for p in shard_dirs], sample, False)
    lines.append(in_process_line("raw whoosh in-process (both shards)", whoosh_lat)
                 + (f"  ({whoosh_errors} errors)" if whoosh_errors else ""))
    tantivy = bench_tantivy(docs, queries[:2000])
    lines.append(in_process_line("tantivy in-process (one index)", tantivy["plain"]))
    lines.append(in_process_line("tantivy in-process + brand aggregation", tantivy["facet"]))
    print("\n== storefront search, Best Buy catalog expanded to", len(docs), "products")
    for line in lines:
        print(line)
    print("targets: uncached p50 <= 10 ms and p99 <= 60 ms at 4 clients; with cache >= 1,000/s and p99 <= 50 ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
