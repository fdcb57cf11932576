"""Searches/s and p99 as the serving topology grows, on this machine (issue #16 item 5).

One run (2 cores shared with other work, load average 5-9; 100k products, 10 s phases, 8 clients):
a. 362/s cached mix (p99 80 ms), 126/s uncached (p99 144 ms), 1.75 / 4.84 ms server CPU per search;
b. 342/s (p99 80 ms), 211/s (p99 74 ms), 2.30 / 4.35 ms; c. 349/s (p99 105 ms), 177/s (p99 122 ms),
3.56 / 8.04 ms. On 2 cores the topologies share the same cores, so b and c can only show their
overhead here (CPU per search); the gain is in adding machines.

    python -m benchmarks.scale_bench [--docs 100000] [--seconds 15] [--clients 8] [--only a,b,c]

Three topologies, each on a fresh scratch PostgreSQL database and a Redis key prefix of its own,
the Best Buy catalog expanded to ``--docs`` products in 2 shards, the storefront profile of
``common.STOREFRONT_PROFILE``, searches on the storefront route with a public key:

a. 1 API process, shards in-process (``serve --workers 1``; its in-process task runner);
b. 2 API processes, shards in-process (``serve --workers 2``: a primary and a follower, each with
   its own in-memory replicas; one port, the kernel and uvicorn's accept loop spread connections);
c. 2 API processes with the shards in Ray actors, 2 replicas per shard (a ``ray start --head``
   cluster on 127.0.0.1, two ``serve --workers 1`` on two ports, one ``shopsearch worker``); the
   load generator sends each request to the next API in turn (round robin).

Per topology two phases of ``--seconds``: the real-query mix (popular queries repeat, so the
answer cache serves most; a fifth carry a filter), and uncached word combinations (each sent once).
The load generator is an aiohttp client in this process (``--clients`` connections): on a 2-core
machine it takes a share of the CPU it measures, and so does everything else running there - the
machine's load average is printed beside each line, with the serving processes' CPU time per
answered search (their process trees' CPU time over the phase / searches answered), which other
work on the machine disturbs much less than searches/s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.common import (
    STOREFRONT_PROFILE,
    Tenant,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    storefront_index,
    tree_cpu,
)
from benchmarks.search_bench import ORIGIN, real_mix, word_combinations

TOPOLOGIES = {
    "a": "1 API, in-process shards",
    "b": "2 APIs (serve --workers 2), in-process shards",
    "c": "2 APIs, Ray actors, 2 replicas/shard",
}


async def _load(bases: Sequence[str], path: str, headers: dict[str, str], bodies: list[dict[str, Any]],
                clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    turn = itertools.count()
    deadline = time.perf_counter() + seconds

    async def client(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < deadline:
            n = next(turn)
            url = bases[n % len(bases)] + path  # round robin over the APIs
            started = time.perf_counter()
            try:
                async with session.post(url, json=bodies[n % len(bodies)], headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        errors[str(response.status)] += 1
                        continue
            except aiohttp.ClientError as exc:
                errors[type(exc).__name__] += 1
                continue
            latencies.append(time.perf_counter() - started)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients * len(bases))) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    lat = [x * 1000 for x in latencies]
    return {"rate": len(lat) / elapsed, "p50": pct(lat, 50), "p99": pct(lat, 99), "n": len(lat),
            "errors": dict(errors), "load": os.getloadavg()[0]}


def _bodies(requests: Sequence[str | dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"q": r} if isinstance(r, str) else dict(r) for r in requests]


def _prepare(base: str, tenant: Tenant, docs: list[dict[str, Any]], replicas: int) -> str:
    """The index, the catalog and the storefront profile; the profile's storefront path."""
    with api(base, tenant) as client:
        started = time.perf_counter()
        index = storefront_index(client, tenant, docs, name="scale", shards=2, replicas=replicas)
        print(f"  {len(docs):,} documents indexed in {time.perf_counter() - started:.0f} s", flush=True)
        return f"/v1/search/{index.create_profile(STOREFRONT_PROFILE).profile_key}"


def _quiet(pids: list[int], limit: float = 90) -> float:
    """Wait until the serving processes are idle (under 0.3 cores over 2 s; Ray's own daemons idle
    at about 0.1): shards may still be writing their files behind memory after an upload, which
    would be measured as search cost. Seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        cpu = sum(tree_cpu(pid) for pid in pids)
        time.sleep(2)
        if (sum(tree_cpu(pid) for pid in pids) - cpu) / 2 < 0.3:
            break
    return time.monotonic() - started


def _run(name: str, bases: list[str], path: str, public: str, pids: list[int], args: argparse.Namespace,
         mix: list[dict[str, Any]], uncached: Iterator[list[dict[str, Any]]]) -> list[str]:
    headers = {"Authorization": f"Bearer {public}", "Origin": ORIGIN}
    print(f"  servers idle after {_quiet(pids):.0f} s", flush=True)
    asyncio.run(_load(bases, path, headers, mix, args.clients, 2))  # warm-up: connections, first answers
    lines = []
    for phase, bodies in (("real mix, cached", mix), ("uncached", next(uncached))):
        cpu = sum(tree_cpu(pid) for pid in pids)
        r = asyncio.run(_load(bases, path, headers, bodies, args.clients, args.seconds))
        cpu_ms = 1000 * (sum(tree_cpu(pid) for pid in pids) - cpu) / max(1, r["n"])
        line = (f"{name:46s} {phase:17s} {r['rate']:6.0f} searches/s  p50 {r['p50']:7.2f} ms  "
                f"p99 {r['p99']:7.2f} ms  server CPU {cpu_ms:5.2f} ms/search  n={r['n']}  "
                f"errors {r['errors'] or 0}  load avg {r['load']:.1f}")
        print(line, flush=True)
        lines.append(line)
    return lines


@contextlib.contextmanager
def _topology(key: str, docs: list[dict[str, Any]]) -> Iterator[tuple[list[str], str, str, list[int]]]:
    """``(API bases, storefront path, public key, the process trees serving)`` of a running topology,
    prepared (for Ray: the head's tree holds the raylet and the shard actors' worker processes)."""
    if key in ("a", "b"):
        with running_server(postgres=True, redis=True, workers=1 if key == "a" else 2) as server:
            tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
            path = _prepare(server.base, tenant, docs, replicas=1)
            assert tenant.public_key
            yield [server.base], path, tenant.public_key, [server.pid]
        return
    from tests.production.stack import production_stack

    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp, \
            production_stack(Path(tmp), apis=2, runners=1, proxied=False) as stack:
        path = _prepare(stack.apis[0].base, stack.tenant, docs, replicas=2)
        assert stack.tenant.public_key
        pids = [api.pid for api in stack.apis] + [stack.ray_head.pid]
        yield [api.base for api in stack.apis], path, stack.tenant.public_key, pids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent connections of the load generator")
    parser.add_argument("--only", default="a,b,c", help="topologies to run (a, b, c)")
    args = parser.parse_args()
    docs = expand(args.docs)
    mix = _bodies(real_mix(5000))
    uncached_all = _bodies(word_combinations(60_000))
    chunk = len(uncached_all) // 6
    uncached = iter(uncached_all[i:i + chunk] for i in range(0, len(uncached_all), chunk))
    print(f"scale_bench: {args.docs:,} documents, 2 shards, {args.clients} clients, {args.seconds:.0f} s phases, "
          f"{os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}", flush=True)
    lines = []
    for key in args.only.split(","):
        print(f"== {key}. {TOPOLOGIES[key]}", flush=True)
        with _topology(key, docs) as (bases, path, public, pids):
            lines += _run(f"{key}. {TOPOLOGIES[key]}", bases, path, public, pids, args, mix, uncached)
    print("\n== summary")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
