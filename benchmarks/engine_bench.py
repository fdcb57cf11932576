"""Shard engine benchmark: ``python -m benchmarks.engine_bench [--docs N] [--queries N]``.

Expands the Best Buy catalog to N products (default 100,000: variant words appended to names,
prices and popularity perturbed, fresh ids), spreads them over 2 shards by a hash of the id,
builds both shards (one process per shard, ``apply`` in batches of 1000), reopens them in this
process and then replays the real shopper queries (``queries.jsonl``, drawn by popularity):

* ours: both shards searched one after the other (what one worker pair costs), top 20,
  with and without a brand facet;
* raw Whoosh: a plain Whoosh searcher with ``MultifieldParser`` over the very same index files
  (same analyzer, field boosts), with and without ``groupedby`` on the brand field;
* tantivy (in-process, RAM index, same documents, BM25, fuzzy distance 1 + prefix, AND), with and
  without a terms aggregation on brand.

Also: the cost of a 500-document commit into a built shard, memory, and relevance on the real
catalog (``benchmarks.relevance``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from benchmarks.common import expand
from benchmarks.relevance import ENGINE_FIELDS, FIELDS, MAPPING, QUERIES, report
from search_workers.engine import ShardEngine
from shared.contract import Change, Facet, Query


def shard_of(doc_id: str, shards: int) -> int:
    return zlib.crc32(doc_id.encode()) % shards


def _build_shard(args: tuple[str, int, int, int]) -> dict:
    path, shard, shards, n = args
    docs = [d for d in expand(n) if shard_of(d["id"], shards) == shard]
    e = ShardEngine(path, MAPPING)
    t0 = time.perf_counter()
    seq = 0
    for i in range(0, len(docs), 1000):
        batch = []
        for d in docs[i:i + 1000]:
            seq += 1
            batch.append(Change(seq, "upsert", d["id"], d))
        e.apply(batch)
    dt = time.perf_counter() - t0
    cpu = time.process_time()
    e.flush()  # write-behind: wait until Whoosh has committed everything
    durable = time.perf_counter() - t0
    out = {"shard": shard, "docs": e.doc_count, "seconds": dt, "durable": durable, "cpu": cpu}
    e.close()
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] * 1000


def summary(name: str, xs: list[float]) -> str:
    return (f"{name:28s} n={len(xs):5d}  p50 {pct(xs, 50):8.2f} ms  p95 {pct(xs, 95):8.2f} ms  "
            f"p99 {pct(xs, 99):8.2f} ms  mean {statistics.mean(xs) * 1000:8.2f} ms")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load_queries(k: int, seed: int = 1) -> list[str]:
    rows = [json.loads(x) for x in QUERIES.read_text().splitlines() if x.strip()]
    rng = random.Random(seed)
    return rng.choices([r["query"] for r in rows], weights=[max(1, r["popularity"]) for r in rows], k=k)


def bench_ours(engines, queries, facet: bool) -> list[float]:
    lat = []
    facets = (Facet("brand"),) if facet else ()
    for q in queries:
        t = time.perf_counter()
        for e in engines:
            e.search(Query(q=q, fields=ENGINE_FIELDS, limit=20, facets=facets))
        lat.append(time.perf_counter() - t)
    return lat


def bench_whoosh(paths, queries, facet: bool) -> tuple[list[float], int]:
    from whoosh import index as windex
    from whoosh import sorting
    from whoosh.qparser import MultifieldParser

    ixs = [windex.open_dir(p) for p in paths]
    searchers = [ix.searcher() for ix in ixs]
    fields = ["t_name", "t_brand", "t_categories", "t_description"]
    boosts = {"t_" + f: float(c["weight"]) for f, c in FIELDS.items()}
    parser = MultifieldParser(fields, ixs[0].schema, fieldboosts=boosts)
    lat, errors = [], 0
    for q in queries:
        t = time.perf_counter()
        try:
            wq = parser.parse(q)
            for s in searchers:
                if facet:
                    r = s.search(wq, limit=20, groupedby=sorting.FieldFacet("k_brand"))
                    r.groups("k_brand")
                else:
                    r = s.search(wq, limit=20)
                [hit["docid"] for hit in r]
        except Exception:
            errors += 1
        lat.append(time.perf_counter() - t)
    for s in searchers:
        s.close()
    return lat, errors


_TANTIVY_SPECIAL = re.compile(r"[^\w\s]+")


def bench_tantivy(docs, queries) -> dict:
    import tantivy

    sb = tantivy.SchemaBuilder()
    for f in ("name", "brand", "categories", "description"):
        sb.add_text_field(f, stored=False, tokenizer_name="en_stem")
    sb.add_text_field("brand_raw", stored=False, fast=True, tokenizer_name="raw")
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    schema = sb.build()
    index = tantivy.Index(schema)
    t0 = time.perf_counter()
    w = index.writer(heap_size=200_000_000, num_threads=1)
    for d in docs:
        w.add_document(tantivy.Document(id=d["id"], name=d["name"], brand=d["brand"], brand_raw=d["brand"],
                                        categories=" ; ".join(d["categories"]), description=d["description"]))
    w.commit()
    w.wait_merging_threads()
    build = time.perf_counter() - t0
    index.reload()
    searcher = index.searcher()
    fields = ["name", "brand", "categories", "description"]
    boosts = {f: float(c["weight"]) for f, c in FIELDS.items()}
    fuzzy = {f: (True, 1, True) for f in fields}
    out: dict = {"build_s": build}
    for facet in (False, True):
        lat = []
        for q in queries:
            t = time.perf_counter()
            clean = _TANTIVY_SPECIAL.sub(" ", q).strip()
            if clean:
                tq = index.parse_query(clean, fields, field_boosts=boosts, fuzzy_fields=fuzzy, conjunction_by_default=True)
            else:
                tq = tantivy.Query.all_query()
            res = searcher.search(tq, 20)
            [searcher.doc(addr)["id"] for _, addr in res.hits]
            if facet:
                searcher.aggregate(tq, {"brands": {"terms": {"field": "brand_raw", "size": 100}}})
            lat.append(time.perf_counter() - t)
        out["facet" if facet else "plain"] = lat
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--queries", type=int, default=2000, help="query draws for our engine and tantivy")
    ap.add_argument("--whoosh-queries", type=int, default=200, help="query draws for raw Whoosh (slow)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--no-relevance", action="store_true")
    args = ap.parse_args()

    root = args.dir or tempfile.mkdtemp(prefix="engine_bench_")
    paths = [os.path.join(root, f"shard{k}") for k in range(args.shards)]
    print(f"== {args.docs} products, {args.shards} shards, in {root}")
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(max_workers=min(args.shards, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_build_shard, [(p, k, args.shards, args.docs) for k, p in enumerate(paths)]))
    wall = time.perf_counter() - t0
    for r in results:
        print(f"build shard {r['shard']}: {r['docs']} docs applied in {r['seconds']:.1f}s -> "
              f"{r['docs'] / r['seconds']:.0f} docs/s (apply, batches of 1000; {r['cpu']:.1f}s CPU in the "
              f"applying process); on disk after {r['durable']:.1f}s -> {r['docs'] / r['durable']:.0f} docs/s "
              "(Whoosh, write-behind helper process)")
    print(f"build wall time (shards in parallel processes): {wall:.1f}s")

    rss0 = rss_mb()
    t0 = time.perf_counter()
    engines = [ShardEngine(p, MAPPING) for p in paths]
    print(f"reopen both shards (MemIndex rebuilt from Whoosh stored docs): {time.perf_counter() - t0:.1f}s")
    print(f"engine memory: RSS +{rss_mb() - rss0:.0f} MB for {sum(e.doc_count for e in engines)} docs "
          f"(estimated structures {sum(e.memory_bytes() for e in engines) / 2**20:.0f} MB)")

    # incremental commit cost
    docs = expand(args.docs)
    mine = [d for d in docs if shard_of(d["id"], args.shards) == 0][:500]
    seq = engines[0].applied_seq
    batch = [Change(seq + i + 1, "upsert", d["id"], {**d, "price": d["price"] + 1}) for i, d in enumerate(mine)]
    t = time.perf_counter()
    engines[0].apply(batch)
    t1 = time.perf_counter()
    engines[0].flush()
    print(f"commit of 500 changed docs into a {engines[0].doc_count}-doc shard: apply {(t1 - t) * 1000:.0f} ms "
          f"(searchable), on disk after {(time.perf_counter() - t) * 1000:.0f} ms")

    queries = load_queries(args.queries)
    bench_ours(engines, queries[:100], False)  # warm-up
    print("\n== query latency per shard pair (sequential over both shards), top 20")
    print(summary("ours", bench_ours(engines, queries, False)))
    print(summary("ours + brand facet", bench_ours(engines, queries, True)))
    for e in engines:
        e.close()

    wq = queries[: args.whoosh_queries]
    lat, errs = bench_whoosh(paths, wq, False)
    print(summary("raw whoosh", lat) + (f"  ({errs} parse/search errors)" if errs else ""))
    lat, errs = bench_whoosh(paths, wq[: max(20, len(wq) // 2)], True)
    print(summary("raw whoosh + brand facet", lat) + (f"  ({errs} errors)" if errs else ""))
    print(summary("ours (same whoosh sample)", bench_ours([ShardEngine(p, MAPPING) for p in paths], wq, False)))

    tv = bench_tantivy(docs, queries)
    print(f"(tantivy RAM index build, 1 thread: {tv['build_s']:.1f}s -> {len(docs) / tv['build_s']:.0f} docs/s)")
    print(summary("tantivy (1 index)", tv["plain"]))
    print(summary("tantivy + brand agg", tv["facet"]))

    if not args.no_relevance:
        print("\n== relevance on the Best Buy catalog (1 shard, name 8 > brand 4 > categories 2 > description 1)")
        report(indent="  ")

if __name__ == "__main__":
    main()
