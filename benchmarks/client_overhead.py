"""What the Python client costs its caller: CPU of the calling process per call, against bare httpx.

    python -m benchmarks.client_overhead [--docs 3000] [--calls 2000]

Starts ``shopsearch serve``, loads the storefront index, then sends the same cached storefront
search (the server's part is small and equal for all) ``--calls`` times, one at a time, with bare
``httpx.Client`` (the body decoded with ``response.json()``), with ``shopsearch_client.Client``
(the answer parsed into ``SearchAnswer``) and with ``AsyncClient``; and uploads the catalog in
batches of 1000 with bare httpx (``json.dumps``) and with the client (an Idempotency-Key each, the
body encoded by pydantic-core). It prints this process's CPU time per call (user + system: what a
shop's server pays, whatever else the machine runs) and the wall time, which follows the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from shopsearch_client import AsyncClient

from benchmarks.common import STOREFRONT_PROFILE, api, expand, make_tenant, running_server, storefront_index


def timed(calls: int, fn: Callable[[], Any]) -> tuple[float, float]:
    """(CPU ms, wall ms) per call of ``fn``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    docs = expand(args.docs)
    rows: list[tuple[str, float, float]] = []
    with running_server() as server:
        tenant = make_tenant(server.database_url)
        with api(server.base, tenant) as client:
            index = storefront_index(client, tenant, docs[:1000])
            profile_key = index.create_profile(STOREFRONT_PROFILE).profile_key
            path = f"/v1/search/{profile_key}"
            with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=30) as bare:
                for _ in range(50):  # warm-up: the answer cached, connections open
                    bare.post(path, json={"q": "samsung"}).json()
                    client.search(profile_key, "samsung")
                for _ in range(2):  # twice, alternated: the machine's speed drifts
                    rows.append(("search, bare httpx", *timed(args.calls, lambda: bare.post(
                        path, json={"q": "samsung"}).raise_for_status().json())))
                    rows.append(("search, Client", *timed(args.calls, lambda: client.search(profile_key, "samsung"))))

                async def async_searches() -> tuple[float, float]:
                    async with AsyncClient(server.base, tenant.key) as aclient:
                        for _ in range(50):
                            await aclient.search(profile_key, "samsung")
                        cpu, wall = time.process_time(), time.perf_counter()
                        for _ in range(args.calls):
                            await aclient.search(profile_key, "samsung")
                        return ((time.process_time() - cpu) * 1000 / args.calls,
                                (time.perf_counter() - wall) * 1000 / args.calls)

                rows.append(("search, AsyncClient", *asyncio.run(async_searches())))
                url = f"/v1/projects/{tenant.project_id}/indices/{index.id}/documents"
                batches = [docs[i:i + 1000] for i in range(0, len(docs), 1000)]
                upload_bare = timed(1, lambda: [bare.post(url, content=json.dumps(b), headers={
                    "Content-Type": "application/json"}).raise_for_status() for b in batches])
                upload_client = timed(1, lambda: index.upload_documents(docs))
                rows.append(("upload of 1000 documents, bare httpx", *(x / len(batches) for x in upload_bare)))
                rows.append(("upload of 1000 documents, Client", *(x / len(batches) for x in upload_client)))
    print(f"\n== the calling process's CPU per call, {args.calls} cached storefront searches each, one at a time")
    for name, cpu, wall in rows:
        print(f"{name:40s} CPU {cpu:7.3f} ms   wall {wall:7.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
