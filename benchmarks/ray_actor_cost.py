"""Where a shard actor's CPU goes per shard query on one node:
``python -m benchmarks.ray_actor_cost [--docs 100000] [--seconds 8] [--searchers 1,4,8]``.

The shards of ``benchmarks.ray_batch_bench`` (built once into ``--dir``), the storefront profile's
queries. Printed:

* ``loop``: each shard's queries searched back to back for half of ``--seconds``, in this process and
  then inside the shard's actor (``__ray_call__``): thread CPU per query, and the garbage
  collections that ran. Nothing else is scheduled between the queries.
* ``channel``: N searchers on this loop searching both shards over the actors' channels (as an API
  process does); per search, this process's CPU; per shard query, the actor processes' CPU, the
  part spent in the channel's handler (unpickling, the search, encoding) and in the engine's search
  alone (thread CPU, timed inside the actors).

The difference between the engine's time over the channel and in the loop is what switching
between three processes on the machine's cores costs it (cold caches), not the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import time
from pathlib import Path
from typing import Any

import psutil
import ray

from benchmarks.common import STOREFRONT_MAPPING
from benchmarks.ray_batch_bench import INDEX, SHARDS, build, copy_of, cpu, drive, queries
from shared.contract import ShardSpec, shard_query


def search_loop(replica: Any, packed: list[bytes], seconds: float) -> tuple[int, float, int]:
    """(queries, thread CPU ms per query, GC passes) of ``replica`` searching ``packed`` in turn."""
    import gc

    passes = [0]

    def count(phase: str, info: dict) -> None:
        passes[0] += phase == "stop"

    qs = [pickle.loads(p) for p in packed]
    gc.callbacks.append(count)
    try:
        n, c0, stop = 0, time.thread_time(), time.perf_counter() + seconds
        while time.perf_counter() < stop:
            replica.search(qs[n % len(qs)])
            n += 1
        return n, (time.thread_time() - c0) / n * 1000, passes[0]
    finally:
        gc.callbacks.remove(count)


def _in_actor(actor: Any, packed: list[bytes], seconds: float) -> tuple[int, float, int]:
    return search_loop(actor, packed, seconds)


def _time_channel(actor: Any) -> None:
    """Time the actor's channel handler and its engine calls (thread CPU), from now on."""
    clock = actor.__dict__.setdefault("_bench", {"queries": 0, "handler": 0.0, "search": 0.0})
    search, handler = actor.search, actor._answer_many

    def timed_search(query: Any, wait: bool = True) -> Any:
        t = time.thread_time()
        try:
            return search(query, wait)
        finally:
            clock["search"] += time.thread_time() - t

    def timed_handler(batch: list[bytes]) -> Any:
        t = time.thread_time()
        try:
            return handler(batch)
        finally:
            clock["handler"] += time.thread_time() - t
            clock["queries"] += len(batch)

    actor.search = timed_search
    actor._channel._answer = timed_handler


def _read_clock(actor: Any) -> dict:
    out = dict(actor._bench)
    actor._bench.update(queries=0, handler=0.0, search=0.0)
    return out


async def run(args: argparse.Namespace) -> None:
    from search_workers.actors.ray_host import RayHost
    from search_workers.replica import ShardReplica

    root = Path(args.dir)
    base = build(root / f"base{args.docs}", args.docs)
    qs = queries(args.queries)
    packed = [pickle.dumps(shard_query(q)) for q in qs]
    plain_dir = copy_of(base, root / "cost-plain") / INDEX / "g1"
    plain = [ShardReplica(str(plain_dir / f"s{s}r0"), STOREFRONT_MAPPING) for s in range(SHARDS)]
    host = RayHost.connect("local", copy_of(base, root / "cost-ray"))
    try:
        await host.open(ShardSpec(INDEX, 1, SHARDS, 1, STOREFRONT_MAPPING, "en"))
        actors = [await host.actor(INDEX, 1, s, 0) for s in range(SHARDS)]
        for shard_no in range(SHARDS):  # warm-up
            search_loop(plain[shard_no], packed, 1)
            ray.get(actors[shard_no].__ray_call__.remote(_in_actor, packed, 1))
        for _ in range(2):
            for shard_no in range(SHARDS):
                n, ms, passes = search_loop(plain[shard_no], packed, args.seconds / 2)
                print(f"loop, shard {shard_no}, plain process  {ms:5.3f} ms/query  ({n} queries, {passes} GC passes)",
                      flush=True)
                n, ms, passes = ray.get(actors[shard_no].__ray_call__.remote(_in_actor, packed, args.seconds / 2))
                print(f"loop, shard {shard_no}, in its actor   {ms:5.3f} ms/query  ({n} queries, {passes} GC passes)",
                      flush=True)

        infos = await host.replica_info(INDEX, 1)
        procs = [psutil.Process(r["pid"]) for rs in infos.values() for r in rs]
        me = psutil.Process()

        async def search(q: Any) -> None:
            if await host.search_here(INDEX, 1, q) is None:
                await host.search(INDEX, 1, q)

        for q in qs:  # warm-up; opens the channels
            await search(q)
        ray.get([a.__ray_call__.remote(_time_channel) for a in actors])
        for searchers in args.searchers:
            ray.get([a.__ray_call__.remote(_read_clock) for a in actors])
            c0, a0, t0 = cpu([me]), cpu(procs), time.perf_counter()
            lat = await drive(search, qs, searchers, args.seconds)
            dt = time.perf_counter() - t0
            clocks = ray.get([a.__ray_call__.remote(_read_clock) for a in actors])
            sq = max(sum(c["queries"] for c in clocks), 1)
            print(f"channel, {searchers} searchers {len(lat) / dt:5.0f}/s  caller {(cpu([me]) - c0) / len(lat) * 1000:5.3f}"
                  f" ms/search; per shard query: actor process {(cpu(procs) - a0) / sq * 1000:5.3f}, handler"
                  f" {sum(c['handler'] for c in clocks) / sq * 1000:5.3f}, engine"
                  f" {sum(c['search'] for c in clocks) / sq * 1000:5.3f} ms", flush=True)
    finally:
        for replica in plain:
            replica.close()
        await host.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/ray_batch_bench", help="built shards are kept here between runs")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--searchers", default="1,4,8")
    ap.add_argument("--queries", type=int, default=600, help="distinct storefront requests")
    args = ap.parse_args()
    args.searchers = [int(x) for x in args.searchers.split(",")]
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
