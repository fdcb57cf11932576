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

``--storefront``: the uncached cost of one storefront query instead (issue #11), with
``benchmarks.common.STOREFRONT_PROFILE``: name x10, brand x5 (typo, prefix), description x1; operator
"and"; facets brand, categories (keyword[]) and price (three ranges); 20 hits, 5 retrieved fields,
name highlighted.  Shopper-like word combinations
(several need words dropped) and real queries with filters, CPU time per query (``thread_time``)
of the full path (both shards + ``merge_answers`` + ``format_answer`` + ``orjson.dumps``) and of each
stage; ``--profile`` adds a cProfile of the full path; ``--save``/``--compare`` write/check the
answers (ids, order, totals, facets, dropped words) for before/after comparisons.  Shards are built
into ``--dir`` once and reopened from there on later runs::

    python -m benchmarks.engine_bench --storefront --dir /tmp/eb/s100k [--profile] [--save F | --compare F]
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

from benchmarks.common import STOREFRONT_FACETS, STOREFRONT_PROFILE, expand
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


# ----------------------------------------------------------------------------- storefront (issue #11)
def storefront_requests(k: int, seed: int = 7) -> list[dict]:
    """Shopper-like requests, a quarter each: real queries as typed; two or three words of one
    product's name, the last one half typed; those words plus one of another product (most need
    words dropped); real queries or name words with a filter on a brand, a category or a price."""
    from benchmarks.common import load_products, weighted_queries

    rng = random.Random(seed)
    products = load_products()
    real = weighted_queries(k, seed)

    def name_words(p: dict) -> list[str]:
        return [w for w in re.findall(r"[\w']+", p["name"]) if len(w) > 1]

    def some_words(p: dict, n: int) -> list[str]:
        ws = name_words(p)
        i = rng.randrange(max(1, len(ws) - n + 1))
        return ws[i:i + n]

    out: list[dict] = []
    for i in range(k):
        kind = i % 4
        p = rng.choice(products)
        filters = None
        if kind == 0:
            q = real[i]
        elif kind == 1:
            ws = some_words(p, rng.choice((2, 3)))
            if ws and len(ws[-1]) > 3:
                ws[-1] = ws[-1][: rng.randrange(2, len(ws[-1]))]
            q = " ".join(ws)
        elif kind == 2:
            ws = some_words(p, rng.choice((1, 2))) + some_words(rng.choice(products), 1)
            rng.shuffle(ws)
            q = " ".join(ws)
        else:
            q = real[i] if rng.random() < 0.5 else " ".join(some_words(p, 2))
            filters = rng.choice([{"brand": p["brand"]}, {"categories": rng.choice(p["categories"])},
                                  {"price": {"lt": 100}}, {"price": {"gte": 100, "lt": 500}},
                                  {"brand": [p["brand"], "Samsung"], "price": {"lt": 300}}])
        out.append({"q": q.lower(), "filters": filters})
    return out


def open_shards(root: str, shards: int, docs: int) -> list[ShardEngine]:
    """The shards in ``root``, built there first when missing (one process per shard)."""
    paths = [os.path.join(root, f"shard{k}") for k in range(shards)]
    missing = [(p, k, shards, docs) for k, p in enumerate(paths) if not os.path.isdir(p)]
    if missing:
        with cf.ProcessPoolExecutor(max_workers=min(len(missing), os.cpu_count() or 1)) as pool:
            for r in pool.map(_build_shard, missing):
                print(f"built shard {r['shard']}: {r['docs']} docs in {r['seconds']:.1f}s")
    return [ShardEngine(p, MAPPING) for p in paths]


def _answer_key(body: dict) -> dict:
    """What must not change between two versions of the engine: ids, order, totals, facets."""
    return {"ids": [h["id"] for h in body["hits"]], "scores": [round(h["score"], 4) for h in body["hits"]],
            "total": body["total"], "facets": body["facets"],
            "highlights": [h["highlights"] for h in body["hits"]], "documents": [h["document"] for h in body["hits"]]}


def bench_storefront(engines: list[ShardEngine], requests: list[dict], rounds: int, profile: bool,
                     save: str | None, compare: str | None) -> None:
    import cProfile
    import pstats

    import orjson

    from control_plane.profile.schemas import ProfileSettings
    from control_plane.search.profile_query import SearchRequest, engine_query, format_answer
    from search_workers.merge import merge_answers
    from shared.contract import shard_query

    settings = ProfileSettings.model_validate({k: v for k, v in STOREFRONT_PROFILE.items() if k != "name"})
    built = [engine_query(settings, SearchRequest.model_validate(r), STOREFRONT_FACETS, MAPPING) for r in requests]

    def run(query, facts):
        sq = shard_query(query)
        t0 = time.thread_time()
        answers = [e.search(sq) for e in engines]
        t1 = time.thread_time()
        merged = merge_answers(query, answers)
        t2 = time.thread_time()
        body = format_answer(merged, facts)
        t3 = time.thread_time()
        raw = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        t4 = time.thread_time()
        return raw, merged, (t4 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3)

    for query, facts in built[:50]:  # warm-up (tf caches, expansion caches per shard version)
        run(query, facts)
    stages: list[list[float]] = [[] for _ in range(5)]
    kinds = ("real", "name words", "mixed words", "filtered")
    by_kind: dict[str, list[float]] = {k: [] for k in kinds}
    relaxed = 0
    bodies: list[bytes] = []
    for r in range(rounds):
        for i, (query, facts) in enumerate(built):
            raw, merged, ts = run(query, facts)
            for lst, t in zip(stages, ts, strict=True):
                lst.append(t)
            by_kind[kinds[i % 4]].append(ts[0])
            if r == 0:
                bodies.append(raw)
                relaxed += merged.relaxed
    print(f"== storefront profile, {len(requests)} requests x {rounds} rounds, "
          f"{sum(e.doc_count for e in engines)} docs in {len(engines)} shards; {relaxed} answers dropped words")
    print("CPU per query (thread_time):")
    for name, xs in zip(("full path", "  shards (engine search)", "  merge_answers", "  format_answer",
                         "  orjson.dumps"), stages, strict=True):
        print(summary(name, xs))
    for name, xs in by_kind.items():
        print(summary(f"  full: {name}", xs))

    keys = [_answer_key(orjson.loads(b)) for b in bodies]
    if save:
        Path(save).write_bytes(orjson.dumps({"requests": requests, "answers": keys}))
        print(f"answers saved to {save}")
    if compare:
        ref = orjson.loads(Path(compare).read_bytes())
        assert ref["requests"] == requests, "compare: not the same requests"
        diff = [i for i, (a, b) in enumerate(zip(ref["answers"], keys, strict=True)) if a != b]
        print(f"compared with {compare}: {len(keys) - len(diff)} of {len(keys)} answers identical")
        for i in diff[:10]:
            a, b = ref["answers"][i], keys[i]
            what = [k for k in a if a[k] != b[k]]
            print(f"  differs: {requests[i]} in {what}")
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for query, facts in built:
            run(query, facts)
        prof.disable()
        stats = pstats.Stats(prof)
        stats.sort_stats("cumulative").print_stats(r"search\.py|query\.py|merge\.py|profile_query\.py", 25)
        stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--queries", type=int, default=2000, help="query draws for our engine and tantivy")
    ap.add_argument("--whoosh-queries", type=int, default=200, help="query draws for raw Whoosh (slow)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--no-relevance", action="store_true")
    ap.add_argument("--storefront", action="store_true", help="the storefront profile's uncached query cost only")
    ap.add_argument("--requests", type=int, default=600, help="storefront: distinct requests")
    ap.add_argument("--rounds", type=int, default=2, help="storefront: passes over the requests")
    ap.add_argument("--profile", action="store_true", help="storefront: cProfile of one pass")
    ap.add_argument("--save", default=None, help="storefront: write the answers to this file")
    ap.add_argument("--compare", default=None, help="storefront: compare the answers with this file")
    args = ap.parse_args()
    if args.storefront:
        engines = open_shards(args.dir or os.path.join(tempfile.gettempdir(), f"engine_bench_{args.docs}"),
                              args.shards, args.docs)
        try:
            bench_storefront(engines, storefront_requests(args.requests), args.rounds, args.profile,
                             args.save, args.compare)
        finally:
            for e in engines:
                e.close()
        return

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
