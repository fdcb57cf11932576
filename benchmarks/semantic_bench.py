"""Hybrid search and built-in embedding cost: ``python -m benchmarks.semantic_bench [--docs N] [--shards N] [--rounds N] [--served]``.

Builds N products (default 100,000: the Best Buy catalog expanded by ``benchmarks.common.expand``)
over ``--shards`` shards (default 2, the service's default) with a built-in vector of name,
categories and description (``wordllama-128``), and prints:

* indexing: documents per second through ``ShardEngine.apply`` (batches of 1,000: analysis,
  memory and the embedding), with and without the vector field;
* per query, the CPU of the whole search summed over the shards (this thread: the shards are
  searched one after the other), p50 and p95 in ms, with a brand facet and 20 hits: keyword only,
  hybrid at ratio 0.5, vector only, taking turns query by query; over real shopper queries drawn
  by popularity (a popular query repeats and finds the shards' query caches warm, as in traffic),
  then over each distinct query once with the query caches emptied before every search;
* the vector columns' memory per 100k documents.

``--served``: the same comparison over HTTP against ``shopsearch serve`` (the embedded default, its
default serving processes): the catalog uploaded into an index of the storefront mapping with the
built-in vector, the 3-facet storefront profile and the same profile with ``semantic: {meaning,
0.5}``; each distinct real query once through each profile in turn, one client, with the secret key
and ``Cache-Control: no-cache`` (no cached answer); p50 and p95 of the latency seen by the client and
of the server's ``tookMs``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.common import (
    STOREFRONT_FACETS,
    STOREFRONT_MAPPING,
    STOREFRONT_PROFILE,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    search_cpu,
    storefront_index,
    weighted_queries,
)
from benchmarks.relevance import ENGINE_FIELDS, MAPPING, SEMANTIC_MAPPING
from search_workers.engine import ShardEngine
from shared.contract import Change, Facet, Query, Semantic
from shared.routing import shard_for


def _build(root: Path, mapping: dict, docs: list[dict], shards: int) -> tuple[list[ShardEngine], float]:
    engines = [ShardEngine(root / f"s{i}", mapping) for i in range(shards)]
    parts: list[list[dict]] = [[] for _ in range(shards)]
    for doc in docs:
        parts[shard_for(doc["id"], shards)].append(doc)
    started = time.perf_counter()
    for engine, part in zip(engines, parts, strict=True):
        for i in range(0, len(part), 1000):
            engine.apply([Change(i + j + 1, "upsert", d["id"], d) for j, d in enumerate(part[i:i + 1000])])
    return engines, len(docs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--served", action="store_true", help="over HTTP against `shopsearch serve` instead")
    args = parser.parse_args()
    docs = expand(args.docs)
    if args.served:
        served(docs, args.shards)
        return
    words = [q for q in weighted_queries(args.rounds) if q.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        plain, plain_rate = _build(Path(tmp) / "plain", MAPPING, docs, args.shards)
        for engine in plain:
            engine.close(snapshot_memory=False)
        engines, rate = _build(Path(tmp) / "semantic", SEMANTIC_MAPPING, docs, args.shards)
        print(f"{len(docs):,} documents over {args.shards} shards: indexed at {plain_rate:,.0f} docs/s without "
              f"a vector field, {rate:,.0f} docs/s with the built-in one")
        facets = (Facet("brand"),)

        def query(q: str, ratio: float | None) -> Query:
            semantic = None if ratio is None else Semantic("meaning", ratio, text=q)
            return Query(q=q, fields=ENGINE_FIELDS, facets=facets, limit=20, semantic=semantic)

        modes = {"keyword only": None, "hybrid 0.5": 0.5, "vector only": 1.0}
        for title, queries, cold in (("real-query mix, popular queries repeated", words, False),
                                     ("each distinct query once, query caches emptied", list(dict.fromkeys(words)), True)):
            costs = search_cpu(engines, {name: [query(q, ratio) for q in queries] for name, ratio in modes.items()}, cold)
            print(f"{title} ({len(queries)} queries)")
            print(f"  {'query':<16}{'p50 ms':>9}{'p95 ms':>9}")
            for name, (p50, p95) in costs.items():
                print(f"  {name:<16}{p50:>9.2f}{p95:>9.2f}")
            print(f"  hybrid p50 / keyword p50: {costs['hybrid 0.5'][0] / costs['keyword only'][0]:.2f}")
        mem = sum(e._mem.vectors["meaning"].memory_bytes()
                  for e in engines)
        print(f"vector columns: {mem * 100_000 / len(docs) / 2**20:.1f} MiB per 100k documents "
              f"(128 float32 per document and its listed copy; capacity doubling can hold up to twice the rows)")
        for engine in engines:
            engine.close(snapshot_memory=False)


def served(docs: list[dict], shards: int) -> None:
    mapping = {**STOREFRONT_MAPPING, "fields": {**STOREFRONT_MAPPING["fields"], **{
        "meaning": SEMANTIC_MAPPING["fields"]["meaning"]}}}
    queries = list(dict.fromkeys(q for q in weighted_queries(2000) if q.strip()))
    with running_server() as server:
        tenant = make_tenant(server.database_url)
        client = api(server.base, tenant)
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="semantic", shards=shards, mapping=mapping,
                                 facets=STOREFRONT_FACETS)
        print(f"{len(docs):,} documents over {shards} shards, with the built-in vector: indexed at "
              f"{len(docs) / (time.perf_counter() - started):,.0f} docs/s through the API")
        profiles = {"keyword only": index.create_profile(STOREFRONT_PROFILE).profile_key,
                    "hybrid 0.5": index.create_profile({**STOREFRONT_PROFILE, "name": "hybrid",
                                                        "semantic": {"field": "meaning", "ratio": 0.5}}).profile_key}
        headers = {**tenant.headers, "Cache-Control": "no-cache"}
        latency: dict[str, list[float]] = {name: [] for name in profiles}
        took: dict[str, list[float]] = {name: [] for name in profiles}
        with httpx.Client(base_url=server.base, headers=headers, timeout=30) as http:
            for q in queries[:50]:  # warm-up: paths, columns, the model
                for key in profiles.values():
                    http.post(f"/v1/search/{key}", json={"q": q}).raise_for_status()
            for q in queries:
                for name, key in profiles.items():
                    start = time.perf_counter()
                    answer = http.post(f"/v1/search/{key}", json={"q": q})
                    latency[name].append((time.perf_counter() - start) * 1000)
                    answer.raise_for_status()
                    took[name].append(answer.json()["tookMs"])
        client.close()
    print(f"each of {len(queries)} distinct real queries once per profile, uncached, one client")
    print(f"  {'profile':<16}{'p50 ms':>9}{'p95 ms':>9}{'tookMs p50':>12}{'p95':>8}")
    for name in profiles:
        print(f"  {name:<16}{pct(latency[name], 50):>9.2f}{pct(latency[name], 95):>9.2f}"
              f"{pct(took[name], 50):>12.2f}{pct(took[name], 95):>8.2f}")
    print(f"  hybrid p50 / keyword p50: {pct(latency['hybrid 0.5'], 50) / pct(latency['keyword only'], 50):.2f} "
          f"(tookMs {pct(took['hybrid 0.5'], 50) / pct(took['keyword only'], 50):.2f})")


if __name__ == "__main__":
    main()
