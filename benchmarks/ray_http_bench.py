"""Ray mode against in-process through HTTP, phases interleaved so both see the same machine:
``python -m benchmarks.ray_http_bench [--docs 100000] [--seconds 10] [--rounds 3]``.

This machine's speed drifts by 20-30% over minutes, more than the difference being measured, so two
``search_bench`` runs one after the other compare the drift as much as the modes. Here both servers
run at once (``serve`` default processes, one with ``SHOPSEARCH_RAY_ADDRESS=local``: shards in Ray
actors), each with the catalog expanded to ``--docs`` products in 2 shards and the storefront profile
of ``search_bench``, and every phase runs on one, then at once on the other (the idle one costs
~0.01 core), for ``--rounds`` rounds:

* uncached word combinations at 4 clients (every phase its own combinations);
* the real-query mix at 8 clients from a cold cache;
* the same mix again, its answers now cached (what the shard host costs nothing in).

``--ray near,actors`` (the default) runs one Ray-mode server per entry, all interleaved: ``near``
with near replicas (``SHOPSEARCH_RAY_NEAR_REPLICAS=true``: every serving process searches its own
in-memory replicas, the default with a local Ray), ``actors`` without (searches go to the shard
actors over their channels); ``:N`` sets the serving processes (``actors:1,actors:2``), else
``serve``'s default. Printed per phase and mode: searches/s,
p50, p99 and the server's CPU per search; then the median of the rounds per mode and the median of
each round's Ray/in-process ratios (paired: the same minutes of the machine).
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import ExitStack
from typing import Any

from benchmarks.common import (
    STOREFRONT_PROFILE,
    api,
    expand,
    make_tenant,
    running_server,
    storefront_index,
    tree_rss,
)
from benchmarks.search_bench import ORIGIN, load, measured, rate, real_mix, word_combinations

PHASES = ("uncached, 4 clients", "real-query mix, 8 clients", "mix all cached, 8 clients")


class Target:
    """One running server with the storefront index and profile."""

    def __init__(self, name: str, server: Any, docs: list[dict[str, Any]]) -> None:
        self.name, self.server = name, server
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        self.client = api(server.base, tenant)
        self.index = storefront_index(self.client, tenant, docs, name="bestbuy", shards=2)
        self.profile = self.index.create_profile(STOREFRONT_PROFILE)
        self.url = f"{server.base}/v1/search/{self.profile.profile_key}"
        self.headers = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}

    def cold_cache(self) -> None:
        """Saving the profile moves the index epoch: every cached answer is retired."""
        self.index.update_profile(self.profile.id, STOREFRONT_PROFILE)

    def phase(self, requests: list[Any], clients: int, seconds: float) -> dict[str, Any]:
        return measured(self.server.pid, lambda: load(self.url, self.headers, requests, clients, seconds))


def cpu_ms(r: dict[str, Any]) -> float:
    return 1000 * r["cores"] / rate(r) if rate(r) else 0.0


def line(name: str, mode: str, r: dict[str, Any]) -> str:
    per = cpu_ms(r)
    return (f"{name:26s} {mode:15s} {rate(r):6.0f}/s  p50 {r['p50']:6.2f}  p99 {r['p99']:6.2f} ms  "
            f"server {r['cores']:4.2f} cores, {per:4.2f} ms CPU/search  errors {r['errors']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ray", default="near,actors",
                    help="Ray-mode servers: near|actors[:serving processes], comma-separated")
    args = ap.parse_args()
    ray_modes = [(kind, int(w) if w else None) for kind, _, w in (m.partition(":") for m in args.ray.split(",") if m)]
    if any(kind not in ("near", "actors") for kind, _ in ray_modes):
        ap.error("--ray takes near or actors, each optionally with :N")
    docs = expand(args.docs)
    mix = real_mix(20_000)
    per_phase = int(1_600 * args.seconds)
    combos = word_combinations((1 + len(ray_modes)) * args.rounds * per_phase + 2_000)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with ExitStack() as stack:
        targets = [Target("in-process", stack.enter_context(running_server()), docs)]
        for kind, w in ray_modes:
            env = {"SHOPSEARCH_RAY_ADDRESS": "local", "SHOPSEARCH_RAY_NEAR_REPLICAS": str(kind == "near").lower()}
            server = running_server(extra_env=env, workers=w)
            targets.append(Target(f"ray {kind}" + ("" if w is None else f" x{w}"), stack.enter_context(server), docs))
        for t in targets:  # warm-up: paths, columns, channels
            load(t.url, t.headers, combos[-2_000:], 4, 3)
        used = 0
        for k in range(args.rounds):
            for name in PHASES:
                for t in targets[k % len(targets):] + targets[:k % len(targets)]:
                    if name.startswith("uncached"):
                        r = t.phase(combos[used:used + per_phase], 4, args.seconds)
                        used += per_phase
                    elif name.startswith("real-query"):
                        t.cold_cache()
                        r = t.phase(mix, 8, args.seconds)
                        t.phase(mix, 8, args.seconds)  # the rest of the mix into the cache
                    else:
                        r = t.phase(mix, 8, args.seconds)
                    results.setdefault((name, t.name), []).append(r)
                    print(f"round {k + 1}  " + line(name, t.name, r), flush=True)
        memory = {t.name: tree_rss(t.server.pid) for t in targets}
    print(f"\n== median of {args.rounds} interleaved rounds, {args.docs} products, 2 shards; ratios paired by round")
    for name in PHASES:
        base = results[(name, "in-process")]
        for mode in [t.name for t in targets]:
            rs = results[(name, mode)]
            p99 = statistics.median(r["p99"] for r in rs)
            print(f"{name:26s} {mode:15s} {statistics.median(rate(r) for r in rs):6.0f}/s  "
                  f"{statistics.median(cpu_ms(r) for r in rs):4.2f} ms CPU/search  p99 {p99:5.1f} ms")
        for mode in [t.name for t in targets[1:]]:
            rs = results[(name, mode)]
            rates = statistics.median(rate(r) / rate(b) for r, b in zip(rs, base, strict=True))
            cpus = statistics.median(cpu_ms(r) / cpu_ms(b) for r, b in zip(rs, base, strict=True))
            print(f"{name:26s} {mode}/in-process: {rates:.2f}x the searches/s, {cpus:.2f}x the CPU per search")
    for mode, rss in memory.items():  # Ray's own processes (GCS, raylet, dashboard) included
        print(f"memory, {mode:15s} {rss / 2**30:5.2f} GiB (RSS of the server's process tree)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
