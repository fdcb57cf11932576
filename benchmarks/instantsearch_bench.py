"""What an InstantSearch render costs through the JavaScript client, against one storefront search
(issue 31: at most 1.5x, server CPU and latency, uncached, on 100k products).

    python -m benchmarks.instantsearch_bench [--docs 100000] [--queries 60] [--passes 3]

Starts ``shopsearch serve`` (one serving process), uploads the Best Buy catalog expanded to
``--docs`` products with the demo's mapping, facets and storefront profile (``cli/demo.py``: a
category tree, distinct on the model, brand and price facets). ``instantsearch_renders.mjs`` then
lets InstantSearch's own helper build a render for each of ``--queries`` real shopper queries (two
brands refined, a price range, the category tree one level down: the hits query, a facet-only query
for each of the two refined facets, the tree without its refinement and its parent level) and
records what the client sends for it. Replayed uncached (``Cache-Control: no-cache``, a secret key),
block by block so the server's CPU time can be read between blocks, in ``--passes`` rounds:

- ``storefront``: the render's hits query alone on ``POST /v1/search/{profileKey}``;
- ``client``: the render as the client sends it (one ``POST /v1/multi-search``);
- ``all queries``: every query the helper asked, each as the server would be asked it alone, in one
  multi-search (what a client answering nothing itself would send).

Prints, per variant, the server's CPU per render (the serving process and its children) and the
client-side latency p50/p95, and the ratios to ``storefront``. Uses the built client
(``clients/js/dist``: ``scripts/build-js.sh test``) and node.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from typing import Any

import httpx

from benchmarks.common import (
    ROOT,
    expand,
    make_tenant,
    pct,
    running_server,
    tree_cpu,
    upload_catalog,
    weighted_queries,
)
from cli.demo import FACETS, MAPPING, STOREFRONT, storefront_products

FRESH = {"Cache-Control": "no-cache"}


def renders(base: str, key: str, profile: str, texts: list[str]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not (ROOT / "clients/js/dist/shopsearch.mjs").exists():
        raise SystemExit("needs node and the built client: scripts/build-js.sh test")
    out = subprocess.run([node, str(ROOT / "benchmarks/instantsearch_renders.mjs")], capture_output=True, text=True,
                         env={**os.environ, "BENCH_URL": base, "BENCH_KEY": key, "BENCH_PROFILE": profile,
                              "BENCH_QUERIES": json.dumps(texts)}, check=True, timeout=1200)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    texts = list(dict.fromkeys(weighted_queries(args.queries * 4, seed=7)))[: args.queries]
    with running_server(workers=1) as server:
        tenant = make_tenant(server.database_url)
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=600) as http:
            index = http.post(f"/v1/projects/{tenant.project_id}/indices",
                              json={"name": "storefront", "shards": 2, "mapping": MAPPING}).json()
            index_url = f"/v1/projects/{tenant.project_id}/indices/{index['id']}"
            http.put(index_url + "/facets", json={"facets": FACETS}).raise_for_status()
            started = time.perf_counter()
            upload_catalog(server.base, tenant, index["id"], storefront_products(expand(args.docs)))
            print(f"indexed {args.docs:,} products in {time.perf_counter() - started:.0f} s")
            profile = http.post(index_url + "/profiles", json=STOREFRONT).json()["profileKey"]

            made = renders(server.base, tenant.key, profile, texts)
            asked = sorted({r["helperRequests"] for r in made})
            sent = sorted({sum(len(b["queries"]) for b in r["batches"]) for r in made})
            print(f"{len(made)} renders of {asked} helper requests; the client sent {sent} queries "
                  f"in {sorted({len(r['batches']) for r in made})} request(s) each")

            def storefront(render: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
                hits = {k: v for k, v in render["solo"][0].items() if k != "profileKey"}
                return [(f"/v1/search/{profile}", hits)]

            variants = {
                "storefront": storefront,
                "client": lambda r: [("/v1/multi-search", body) for body in r["batches"]],
                "all queries": lambda r: [("/v1/multi-search", {"queries": r["solo"]})],
            }
            cpu: dict[str, float] = {name: 0.0 for name in variants}
            latency: dict[str, list[float]] = {name: [] for name in variants}
            for calls in variants.values():  # warm-up: every shard's columns read once
                for render in made[:5]:
                    for path, body in calls(render):
                        http.post(path, json=body, headers=FRESH).raise_for_status()
            for _ in range(args.passes):
                for name, calls in variants.items():
                    before = tree_cpu(server.pid)
                    for render in made:
                        t0 = time.perf_counter()
                        for path, body in calls(render):
                            http.post(path, json=body, headers=FRESH).raise_for_status()
                        latency[name].append((time.perf_counter() - t0) * 1000)
                    cpu[name] += tree_cpu(server.pid) - before
            count = len(made) * args.passes
            base_cpu = cpu["storefront"] / count
            base_p50 = pct(latency["storefront"], 50)
            print(f"\n{'variant':<12} {'CPU ms/render':>14} {'x':>6} {'p50 ms':>8} {'x':>6} {'p95 ms':>8}")
            for name in variants:
                per = cpu[name] / count * 1000
                p50 = pct(latency[name], 50)
                print(f"{name:<12} {per:14.2f} {per / (base_cpu * 1000):6.2f} {p50:8.2f} {p50 / base_p50:6.2f} "
                      f"{pct(latency[name], 95):8.2f}")


if __name__ == "__main__":
    main()
