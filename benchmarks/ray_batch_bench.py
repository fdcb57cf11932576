"""Ray mode's fast path with and without batching, and the in-process host, on one machine:
``python -m benchmarks.ray_batch_bench [--docs 100000] [--seconds 10] [--searchers 1,4,8]``.

The Best Buy catalog expanded to ``--docs`` products in 2 shards (built once into ``--dir`` with the
engine, one process per shard; each run searches copies), the storefront profile's queries
(``benchmarks.engine_bench.storefront_requests`` through ``engine_query``, as the storefront route
builds them), no HTTP. N searchers are N tasks on one event loop (one API process serving N
concurrent requests), each searching in a loop for ``--seconds``:

* ``ray unbatched``: ``RayHost.search_here`` with ``batching = False`` (one call per shard per search);
* ``ray batched (k in flight)``: with batching, ``max_in_flight = k``;
* ``ray channel``: the shard queries over the actors' channels (Unix sockets, same node);
* ``in-process``: ``LocalHost.search_now`` on the loop, as the bridge runs in-process searches, in
  one process (one core: the GIL) and in two (``serve --workers 2``: both cores, the searchers split
  between them), each process with its own copy of the shards.

Printed per run: searches/s, latency p50/p95, and CPU ms per search of this process (the caller), of
the shard actors' worker processes, their sum, and of the rest of Ray's processes (GCS, raylet, idle
workers), with the shard calls made per search (batches: fewer than 2). CPU time per search grows
when both cores are busy (here and in what else runs on the machine): compare runs with the same
number of busy cores (Ray at 4-8 searchers with two in-process processes).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as cf
import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import STOREFRONT_FACETS, STOREFRONT_MAPPING, STOREFRONT_PROFILE, expand, pct
from shared.contract import Change, Query, ShardSpec
from shared.routing import shard_for

INDEX = "bench"
SHARDS = 2


def _build_shard(args: tuple[str, int, int]) -> int:
    from search_workers.engine import ShardEngine

    path, shard_no, docs = args
    mine = [(i + 1, d) for i, d in enumerate(expand(docs)) if shard_for(d["id"], SHARDS) == shard_no]
    engine = ShardEngine(path, STOREFRONT_MAPPING)
    for k in range(0, len(mine), 1000):
        engine.apply([Change(seq, "upsert", d["id"], d) for seq, d in mine[k:k + 1000]])
    engine.flush()
    n = engine.doc_count
    engine.close()
    return n


def build(base: Path, docs: int) -> Path:
    """``base/<INDEX>/g1/s<k>r0`` for both shards, built when missing."""
    paths = [base / INDEX / "g1" / f"s{k}r0" for k in range(SHARDS)]
    todo = [(str(p), k, docs) for k, p in enumerate(paths) if not p.is_dir()]
    if todo:
        t0 = time.perf_counter()
        with cf.ProcessPoolExecutor(max_workers=len(todo)) as pool:
            counts = list(pool.map(_build_shard, todo))
        print(f"built {sum(counts)} docs into {len(todo)} shards in {time.perf_counter() - t0:.0f} s")
    return base


def copy_of(base: Path, to: Path) -> Path:
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(base, to)
    return to


def queries(k: int) -> list[Query]:
    from benchmarks.engine_bench import storefront_requests
    from control_plane.profile.schemas import ProfileSettings
    from control_plane.search.profile_query import SearchRequest, engine_query

    settings = ProfileSettings.model_validate({k: v for k, v in STOREFRONT_PROFILE.items() if k != "name"})
    return [engine_query(settings, SearchRequest.model_validate(r), STOREFRONT_FACETS, STOREFRONT_MAPPING)[0]
            for r in storefront_requests(k)]


def cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def ray_tree(exclude: set[int]) -> list[psutil.Process]:
    """Ray's processes below this one (GCS, raylet, workers) but ``exclude``."""
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in exclude]


async def drive(search: Any, qs: list[Query], searchers: int, seconds: float, first: int = 0) -> list[float]:
    """``searchers`` tasks searching ``qs`` in turn for ``seconds``; the latency of every search."""
    lat: list[float] = []
    stop = time.perf_counter() + seconds

    async def one(offset: int) -> None:
        i = offset
        while (t0 := time.perf_counter()) < stop:
            await search(qs[i % len(qs)])
            lat.append(time.perf_counter() - t0)
            i += 1

    await asyncio.gather(*(one((first + k) * 97) for k in range(searchers)))
    return lat


def report(name: str, searchers: int, lat: list[float], seconds: float, caller: float, actors: float | None,
           other: float | None, calls: int | None) -> None:
    n = len(lat)
    per = 1000 / max(n, 1)
    line = (f"{name:27s} {searchers:2d} searchers {n / seconds:5.0f}/s  p50 {pct(lat, 50) * 1000:5.1f} p95 "
            f"{pct(lat, 95) * 1000:5.1f} ms  CPU ms/search: caller {caller * per:5.2f}")
    if actors is not None and other is not None:
        line += f"  actors {actors * per:5.2f}  sum {(caller + actors) * per:5.2f}  (other Ray {other * per:4.2f})"
    if calls is not None:
        line += f"  calls/search {calls / max(n, 1):4.2f}"
    print(line, flush=True)


async def bench_ray(shards_dir: Path, qs: list[Query], args: argparse.Namespace) -> None:
    from search_workers.actors.ray_host import RayHost

    host = RayHost.connect("local", shards_dir)
    try:
        await host.open(ShardSpec(INDEX, 1, SHARDS, 1, STOREFRONT_MAPPING, "en"))
        infos = await host.replica_info(INDEX, 1)
        pids = {r["pid"] for rs in infos.values() for r in rs}
        print(f"ray: shard actors {sorted(pids)}, docs {[rs[0]['docCount'] for rs in infos.values()]}", flush=True)
        actors = [psutil.Process(p) for p in pids]
        me = psutil.Process()
        fallbacks = [0]

        async def search(q: Query) -> None:
            if await host.search_here(INDEX, 1, q) is None:
                fallbacks[0] += 1
                await host.search(INDEX, 1, q)

        for q in qs:  # warm-up: every query once (caches per shard version, imports)
            await search(q)
        modes = ([("ray unbatched", False, 1, False)]
                 + [(f"ray batched ({k} in flight)", True, k, False) for k in args.in_flight]
                 + [("ray channel", True, 1, True)])
        host.channels = True
        for q in qs[:20]:  # opens the channels
            await search(q)
        for searchers in args.searchers:
            for name, batching, in_flight, channels in modes:
                host.batching, host.max_in_flight, host.channels = batching, in_flight, channels
                others = ray_tree(pids)
                c0, a0, o0, calls0 = cpu([me]), cpu(actors), cpu(others), host.fast_calls
                t0 = time.perf_counter()
                lat = await drive(search, qs, searchers, args.seconds)
                dt = time.perf_counter() - t0
                report(name, searchers, lat, dt, cpu([me]) - c0, cpu(actors) - a0, cpu(others) - o0,
                       host.fast_calls - calls0)
        if fallbacks[0]:
            print(f"ray: {fallbacks[0]} searches fell back to the general path")
    finally:
        await host.close()


def local_worker(shards_dir: str, qs: list[Query], searchers: int, seconds: float, first: int,
                 ready: Any, go: Any) -> tuple[list[float], float, float]:
    """One in-process serving process: ``searchers`` tasks on its loop, ``LocalHost.search_now``
    on the loop as the bridge runs in-process searches; (latencies, CPU seconds, wall seconds)."""
    from search_workers.local import LocalHost

    async def run() -> tuple[list[float], float, float]:
        host = LocalHost(shards_dir)
        await host.open(ShardSpec(INDEX, 1, SHARDS, 1, STOREFRONT_MAPPING, "en"))

        async def search(q: Query) -> None:
            host.search_now(INDEX, 1, q)
            await asyncio.sleep(0)  # the other searchers' turn, as between requests

        try:
            for q in qs:  # warm-up
                await search(q)
            ready.release()
            go.wait()
            c0, t0 = time.process_time(), time.perf_counter()
            lat = await drive(search, qs, searchers, seconds, first)
            return lat, time.process_time() - c0, time.perf_counter() - t0
        finally:
            await host.close()

    return asyncio.run(run())


def bench_local(root: Path, base: Path, qs: list[Query], args: argparse.Namespace, processes: int) -> None:
    """``processes`` in-process serving processes (each its own copy of the shards) sharing the
    searchers, started together."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    dirs = [str(copy_of(base, root / f"local{k}")) for k in range(processes)]
    for searchers in args.searchers:
        if searchers < processes:
            continue
        mgr = ctx.Manager()
        ready, go = mgr.Semaphore(0), mgr.Event()
        with cf.ProcessPoolExecutor(processes, mp_context=ctx) as pool:
            futs = [pool.submit(local_worker, dirs[k], qs, searchers // processes + (k < searchers % processes),
                                args.seconds, k * 1000, ready, go) for k in range(processes)]
            for _ in range(processes):
                ready.acquire()
            go.set()
            outs = [f.result() for f in futs]
        mgr.shutdown()
        lat = [x for o in outs for x in o[0]]
        name = "in-process" if processes == 1 else f"in-process, {processes} processes"
        report(name, searchers, lat, max(o[2] for o in outs), sum(o[1] for o in outs), None, None, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/ray_batch_bench", help="built shards are kept here between runs")
    ap.add_argument("--seconds", type=float, default=10.0, help="per run")
    ap.add_argument("--searchers", default="1,4,8")
    ap.add_argument("--in-flight", default="1,2", help="max_in_flight values to measure with batching")
    ap.add_argument("--queries", type=int, default=600, help="distinct storefront requests")
    ap.add_argument("--skip-local", action="store_true")
    args = ap.parse_args()
    args.searchers = [int(x) for x in args.searchers.split(",")]
    args.in_flight = [int(x) for x in args.in_flight.split(",")]
    root = Path(args.dir)
    base = build(root / f"base{args.docs}", args.docs)
    qs = queries(args.queries)
    print(f"{args.docs} docs, {SHARDS} shards, {len(qs)} storefront queries, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    asyncio.run(bench_ray(copy_of(base, root / "ray"), qs, args))
    if not args.skip_local:
        for processes in (1, 2):
            bench_local(root, base, qs, args, processes)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
