"""Storefront search speed against a real server, and the server's CPU cores used per phase.

    python -m benchmarks.search_bench [--docs 100000] [--shards 2] [--seconds 15] [--workers N]
                                      [--postgres --redis] [--ray] [--whoosh-queries 200]

1. Starts ``shopsearch serve`` (``--workers N`` passed through; embedded default unless
   ``--postgres``/``--redis``; ``--ray``: shards in Ray actors), uploads the Best Buy catalog expanded
   to ``--docs`` products into ``--shards`` shards, and saves the storefront users measured (issue #11,
   ``common.STOREFRONT_PROFILE``): name x10 and brand x5 (typo, prefix), description x1, operator
   "and"; facets on brand, categories and price (three ranges); 20 hits, 5 retrieved fields, name
   highlighted. Searches go to the storefront route with a public key and an allowed Origin, as a
   shop's page sends them.
2. Uncached: shopper-like combinations of 2-4 words from real queries and product names (most need
   words dropped), each sent once, so none is answered from the cache; 1 client, then 4.
3. The real-query mix with the cache: queries drawn by popularity (popular ones repeat), a fifth with
   a filter, at 8 and 32 clients, each from a cold cache (saving the profile retires every answer).
4. The former one-facet profile (name > brand > categories > description, a brand facet) on real
   queries, uncached (``Cache-Control: no-cache`` with the secret key), 4 clients.
5. Unless ``--whoosh-queries 0``: tantivy in-process on the same documents and queries, printed
   beside. (No raw-Whoosh line any more: the service's Whoosh files hold ids and stored documents
   only, no postings to search.)

Load comes from ``wrk`` (``apt-get install wrk``; C, one thread), else from an aiohttp client in this
process (which then competes with the server for CPU). Each phase prints searches/s (answered ones),
p50, p99, the cores the server's process tree used (its CPU time / the phase's wall time), its CPU
time per answered search (steadier than wall-clock figures on a shared machine), the cores of the
load generator and the cores the whole machine was busy (other work on a shared machine shows there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import resource
import shutil
import subprocess
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from shopsearch_client import Client

from benchmarks.common import (
    FIELDS,
    STOREFRONT_PROFILE,
    api,
    expand,
    load_products,
    make_tenant,
    pct,
    running_server,
    storefront_index,
    tree_cpu,
    weighted_queries,
)

ORIGIN = "https://shop.example"
# Filters a shopper adds from the facets; a fifth of the real-query mix carries one.
FILTERS: list[dict[str, Any]] = [
    {"brand": ["Samsung"]}, {"brand": ["Apple", "Sony"]}, {"price": {"lt": 50}}, {"price": {"gte": 50, "lt": 200}},
    {"price": {"gte": 200}}, {"categories": ["Headphones"]}, {"categories": ["Cell Phones", "Laptops"]},
    {"brand": ["Insignia"], "price": {"lt": 200}},
]
Request = str | dict[str, Any]  # a query, or a whole search body


def _bodies(requests: Sequence[Request], extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"q": r, **extra} if isinstance(r, str) else {**r, **extra} for r in requests]


async def _load(url: str, headers: dict[str, str], bodies: list[dict[str, Any]], clients: int,
                seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.perf_counter() + seconds
    cursor = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal cursor
        while time.perf_counter() < deadline:
            body = bodies[cursor % len(bodies)]
            cursor += 1
            started = time.perf_counter()
            try:
                async with session.post(url, json=body, headers=headers) as response:
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


def _wrk(url: str, headers: dict[str, str], bodies: list[dict[str, Any]], clients: int,
         seconds: float) -> dict[str, Any]:
    """wrk (C, one thread) drives the load when installed: a Python client would eat the CPU it measures.
    The bodies go through a file, one per line, sent in turn (wrapping around)."""
    base, _, path = url.partition("/v1/")
    lua_headers = ", ".join(f'["{k}"]="{v}"' for k, v in {**headers, "Content-Type": "application/json"}.items())
    with tempfile.TemporaryDirectory(prefix="search-bench-") as tmp:
        bodies_file = Path(tmp) / "bodies.jsonl"
        bodies_file.write_text("".join(json.dumps(b) + "\n" for b in bodies))
        script = Path(tmp) / "bench.lua"
        script.write_text(textwrap.dedent(f"""
            local bodies = {{}}
            for line in io.lines({json.dumps(str(bodies_file))}) do bodies[#bodies + 1] = line end
            local i = 0
            request = function()
              i = i + 1
              return wrk.format("POST", "/v1/{path}", {{{lua_headers}}}, bodies[((i - 1) % #bodies) + 1])
            end
            done = function(summary, latency, requests)
              local e = summary.errors
              io.write(string.format("RESULT %d %f %d %d %d %d %d", summary.requests, summary.duration / 1e6,
                e.status, e.connect, e.read, e.write, e.timeout))
              for _, p in ipairs({{50, 95, 99}}) do io.write(string.format(" %f", latency:percentile(p) / 1000)) end
              io.write("\\n")
            end
        """))
        out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{max(1, round(seconds))}s", "-s", str(script), base],
                             capture_output=True, text=True, check=True).stdout
    fields = next(line for line in out.splitlines() if line.startswith("RESULT")).split()[1:]
    requests, duration = int(fields[0]), float(fields[1])
    # wrk's kinds: "status" is an HTTP status >= 400; "timeout" a request unanswered after 2 s
    kinds = {kind: int(n) for kind, n in zip(("status", "connect", "read", "write", "timeout"), fields[2:7], strict=True)}
    return {"count": requests, "elapsed": duration, "errors": sum(kinds.values()),
            "error_kinds": {kind: n for kind, n in kinds.items() if n},
            "p50": float(fields[7]), "p95": float(fields[8]), "p99": float(fields[9])}


def load(url: str, headers: dict[str, str], queries: Sequence[Request], clients: int, seconds: float,
         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sends ``queries`` in turn (a query string is ``{"q": query}``; a dict is a whole body), each
    body merged with ``extra``, from ``clients`` concurrent connections for ``seconds``."""
    bodies = _bodies(queries, extra or {})
    if shutil.which("wrk"):
        return _wrk(url, headers, bodies, clients, seconds)
    result = asyncio.run(_load(url, headers, bodies, clients, seconds))
    lat = [x * 1000 for x in result["latencies"]]
    return {"count": len(lat), "elapsed": result["elapsed"], "errors": len(result["errors"]),
            "error_kinds": dict(Counter(result["errors"])),
            "p50": pct(lat, 50), "p95": pct(lat, 95), "p99": pct(lat, 99)}


def _machine_busy() -> float:
    """CPU seconds the whole machine spent busy so far (all cores)."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


def _own_cpu() -> float:
    """CPU seconds of this process and its finished children (the load generator: wrk or aiohttp)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def measured(server_pid: int, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``'s result with ``cores`` (the server tree's CPU time / wall time), ``client`` (the
    load generator's) and ``busy`` (the whole machine's busy cores) over the same wall time."""
    cpu, client, busy, started = tree_cpu(server_pid), _own_cpu(), _machine_busy(), time.perf_counter()
    result = run()
    wall = time.perf_counter() - started
    return {**result, "cores": (tree_cpu(server_pid) - cpu) / wall, "client": (_own_cpu() - client) / wall,
            "busy": (_machine_busy() - busy) / wall}


def rate(result: dict[str, Any]) -> float:
    """Answered searches per second: refusals (a 429 from the plan's quota, say) would flatter it."""
    return (result["count"] - result["errors"]) / result["elapsed"] if result["elapsed"] else 0.0


def report(name: str, result: dict[str, Any]) -> str:
    """One phase; any error makes the line invalid, since cheap refusals flatter throughput and latency."""
    line = (f"{name:46s} n={result['count'] - result['errors']:6d} {rate(result):7.0f}/s  p50 {result['p50']:6.2f} ms  "
            f"p99 {result['p99']:6.2f} ms")
    if "cores" in result:
        cpu_ms = 1000 * result["cores"] / rate(result) if rate(result) else 0.0
        line += (f"  server {result['cores']:4.2f} cores, {cpu_ms:4.2f} ms CPU/search (load generator "
                 f"{result['client']:4.2f}, machine busy {result['busy']:4.2f})")
    line += f"  errors {result['errors']}"
    if result["errors"]:
        line += " (" + ", ".join(f"{kind} {n}" for kind, n in result["error_kinds"].items()) + ")"
    return line + ("  INVALID: not every request was answered" if result["errors"] else "")


def in_process_line(name: str, latencies: list[float]) -> str:
    lat = [x * 1000 for x in latencies]
    return f"{name:46s} n={len(lat):6d}  p50 {pct(lat, 50):6.2f} ms  p95 {pct(lat, 95):6.2f} ms  p99 {pct(lat, 99):6.2f} ms"


def word_combinations(k: int, seed: int = 3) -> list[str]:
    """``k`` distinct shopper-like queries of 2-4 words, each word from a real query (drawn by
    popularity) or a product name; words of different products rarely all match, so most need words
    dropped. Distinct as word sets, whatever the cache's normalization of order and case."""
    rng = random.Random(seed)
    query_words = [w for q in weighted_queries(20_000, seed) for w in q.lower().split()]
    name_words = [w for p in load_products() for w in re.findall(r"[a-z0-9][a-z0-9'-]+", p["name"].lower())]
    seen: set[frozenset[str]] = set()
    out: list[str] = []
    while len(out) < k:
        words = [rng.choice(query_words if rng.random() < 0.5 else name_words) for _ in range(rng.choice((2, 2, 3, 3, 4)))]
        key = frozenset(words)
        if len(key) == len(words) and key not in seen:
            seen.add(key)
            out.append(" ".join(words))
    return out


def real_mix(k: int, seed: int = 1) -> list[Request]:
    """Real shopper queries drawn by popularity; every fifth carries one of ``FILTERS``."""
    rng = random.Random(seed)
    return [{"q": q, "filters": rng.choice(FILTERS)} if i % 5 == 4 else q
            for i, q in enumerate(weighted_queries(k, seed))]


def zero_hit_share(uncached: Client, profile_key: str, requests: Sequence[Request]) -> float:
    """The share of ``requests`` answered with no hit (``uncached``: a secret key sending no-cache)."""
    empty = 0
    for body in _bodies(requests, {}):
        empty += uncached.search(profile_key, body["q"], filters=body.get("filters")).total == 0
    return empty / len(requests)


def answer_shape(storefront: Client, profile_key: str) -> str:
    """What one storefront answer carries, to show the profile is the one measured."""
    answer = storefront.search(profile_key, "samsung tv")
    hit = answer.hits[0] if answer.hits else None
    return (f"  (a storefront answer: {len(answer.hits)} hits of {answer.total}, facets {sorted(answer.facets)}, "
            f"document fields {sorted((hit and hit.document) or {})}, highlights {sorted((hit and hit.highlights) or {})})")


def summary(uncached4: dict[str, Any], mix8: dict[str, Any]) -> list[str]:
    """The issue's targets next to this run's figures."""
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"
    return [
        "== targets (issue #11)",
        f"uncached, 4 clients:   p50 {uncached4['p50']:6.2f} ms  (target <= 8 ms)   {verdict(uncached4['p50'] <= 8)}",
        f"                       p99 {uncached4['p99']:6.2f} ms  (target <= 40 ms)  {verdict(uncached4['p99'] <= 40)}",
        f"real mix, 8 clients:   {rate(mix8):6.0f} searches/s  (target >= 2,000)  "
        f"{verdict(rate(mix8) >= 2000 and not mix8['errors'])}",
        f"server under that load: {mix8['cores']:4.2f} cores  (target >= 1.7)  {verdict(mix8['cores'] >= 1.7)}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--workers", type=int, default=None,
                        help="passed as `shopsearch serve --workers N` (unset: the serve default)")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--redis", action="store_true")
    parser.add_argument("--ray", action="store_true", help="shards in Ray actors (SHOPSEARCH_RAY_ADDRESS=local)")
    parser.add_argument("--whoosh-queries", type=int, default=200,
                        help="kept for old command lines: 0 skips the in-process tantivy lines")
    args = parser.parse_args()

    docs = expand(args.docs)
    queries = weighted_queries(20_000)
    mix = real_mix(20_000)
    per_phase = max(2_000, int(1_600 * args.seconds))  # more distinct combinations than a phase can send
    combos = word_combinations(3 * per_phase)
    lines: list[str] = []
    extra_env = {"SHOPSEARCH_RAY_ADDRESS": "local"} if args.ray else None
    with running_server(postgres=args.postgres, redis=args.redis, extra_env=extra_env,
                        workers=args.workers) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        client = api(server.base, tenant)
        storefront = Client(server.base, tenant.public_key, headers={"Origin": ORIGIN})
        uncached = Client(server.base, tenant.key, headers={"Cache-Control": "no-cache"})
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="bestbuy", shards=args.shards)
        indexed = time.perf_counter() - started
        print(f"indexed {len(docs)} products into {args.shards} shards in {indexed:.1f}s ({len(docs) / indexed:,.0f} docs/s)")
        profile = index.create_profile(STOREFRONT_PROFILE)
        url = f"{server.base}/v1/search/{profile.profile_key}"
        public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}

        def phase(name: str, requests: Sequence[Request], clients: int, headers: dict[str, str] = public,
                  target: str = url, unique: bool = False) -> dict[str, Any]:
            result = measured(server.pid, lambda: load(target, headers, requests, clients, args.seconds))
            line = report(name, result)
            if unique and result["count"] > len(requests):
                line += "  (queries repeated: some answers came from the cache)"
            lines.append(line)
            print(line, flush=True)
            return result

        lines.append(answer_shape(storefront, profile.profile_key))
        print(lines[-1], flush=True)
        load(url, public, combos[2 * per_phase:], 4, 3)  # warm-up: one pass over paths and columns
        phase("uncached word combinations, 1 client", combos[:per_phase], 1, unique=True)
        uncached4 = phase("uncached word combinations, 4 clients", combos[per_phase:2 * per_phase], 4, unique=True)

        def cold_cache() -> None:
            """Saving the profile moves the index epoch: every cached answer is retired."""
            index.update_profile(profile.id, STOREFRONT_PROFILE)

        cold_cache()
        mix8 = phase("real-query mix with cache, 8 clients", mix, 8)
        cold_cache()
        phase("real-query mix with cache, 32 clients", mix, 32)
        sent = min(len(mix), mix8["count"])
        distinct = len({json.dumps(b, sort_keys=True) for b in _bodies(mix[:sent], {})})
        lines.append(f"  (each mix run starts from a cold cache; {distinct} distinct requests among the first {sent} "
                     f"of the 8-client run had to be computed)")

        one_facet = index.create_profile({
            "name": "one facet", "queryFields": FIELDS, "facets": ["brand"], "perPage": 20,
            "boosts": [{"field": "popularity", "modifier": "log1p", "weight": 0.05}],
        })
        # only a secret key's no-cache is honoured: a public key can't make the service skip its cache
        phase("one-facet profile, real queries, uncached, 4 cl.", queries, 4,
              {**tenant.headers, "Cache-Control": "no-cache"}, f"{server.base}/v1/search/{one_facet.profile_key}")

        lines.append(f"  (answered with no hit: {zero_hit_share(uncached, profile.profile_key, combos[:200]):.0%} of the "
                     f"word combinations, {zero_hit_share(uncached, profile.profile_key, mix[:300]):.0%} of the "
                     "real-query mix)")
        for opened in (client, storefront, uncached):
            opened.close()

    if args.whoosh_queries:
        from benchmarks.engine_bench import bench_tantivy

        tantivy = bench_tantivy(docs, queries[:2000])
        lines.append(in_process_line("tantivy in-process (one index)", tantivy["plain"]))
        lines.append(in_process_line("tantivy in-process + brand aggregation", tantivy["facet"]))
    print(f"\n== storefront search, Best Buy catalog expanded to {len(docs)} products, {args.shards} shards, "
          f"serve --workers {args.workers if args.workers is not None else '(default)'}"
          f"{', Ray actors' if args.ray else ''}{', PostgreSQL' if args.postgres else ''}{', Redis' if args.redis else ''}; "
          f"{psutil.cpu_count()} cores on this machine")
    for line in lines:
        print(line)
    for line in summary(uncached4, mix8):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
