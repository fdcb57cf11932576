"""Indexing benchmark against a real server (``shopsearch serve`` in a subprocess).

    python -m benchmarks.indexing_bench [--docs 100000] [--shards 2] [--uploaders 4] [--postgres]

1. Starts ``shopsearch serve`` with a temporary ``SHOPSEARCH_DATA_DIR`` (embedded default: SQLite,
   in-process shards and task runner) or, with ``--postgres``, against a scratch PostgreSQL database.
2. Creates a tenant on the enterprise plan straight in the database and an index over a Best Buy
   catalog expanded to ``--docs`` products.
3. Uploads through the API in batches of 1000 with a few concurrent uploaders and prints
   documents/s from the first upload to the last task succeeded (target >= 1,500 docs/s).
4. Runs a full reindex while a loop of searches runs and prints the failed searches (target 0).
5. Prints the total RSS of the server process tree holding the index (each serving process holds a replica:
   the RSS per process is printed after the upload).

Throughput is wall-clock; on a shared machine it follows the other load, so the upload also prints
the CPU seconds per document of each server process (the serving process: upload, database, feeding,
in-memory apply; the Whoosh helper), which do not.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import threading
import time
from typing import Any

import psutil
from shopsearch_client import NO_RETRY, Client, ShopsearchError

from benchmarks.common import (
    MAPPING,
    Server,
    Tenant,
    api,
    expand,
    make_tenant,
    pct,
    running_server,
    tree_rss,
    upload_catalog,
    weighted_queries,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--uploaders", type=int, default=4)
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--postgres", action="store_true", help="use a scratch PostgreSQL database")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--upload-only", action="store_true", help="stop after the upload (no reindex)")
    args = parser.parse_args()

    with running_server(postgres=args.postgres, keep=args.keep) as server:
        return run(args, server)


def _processes(pid: int) -> list[tuple[str, psutil.Process]]:
    """The server and its children, named by role: the Whoosh helper runs ``persist._child_main``;
    its parent is the serving process that owns the shard files and runs the task runner (primary),
    the other serving processes follow the database (followers)."""
    proc = psutil.Process(pid)
    out = [("server", proc)]
    helpers: dict[int, psutil.Process] = {}
    others: list[tuple[psutil.Process, str]] = []
    for child in proc.children(recursive=True):
        try:
            cmd = " ".join(child.cmdline())
            if "persist import _child_main" in cmd:
                helpers[child.ppid()] = child
            else:
                others.append((child, cmd))
        except psutil.Error:
            continue
    for child, cmd in others:
        if child.pid in helpers:
            out += [("primary", child), ("whoosh helper", helpers[child.pid])]
        else:
            out.append(("follower" if "spawn_main" in cmd else f"child {child.pid}", child))
    return out


def process_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds per server process, by pid."""
    out = {}
    for name, proc in _processes(pid):
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        out[proc.pid] = (name, t.user + t.system)
    return out


def database_cpu() -> float | None:
    """CPU seconds PostgreSQL has used so far on this machine: the postmaster, its live children and
    the children it has reaped (a backend that ends between two readings still counts); None where
    no postmaster runs here. Other databases' work counts too: read it on a quiet machine."""
    for proc in psutil.process_iter(["name", "ppid"]):
        try:
            if proc.info["name"] != "postgres" or psutil.Process(proc.info["ppid"]).name() == "postgres":
                continue
            t = proc.cpu_times()
            total = t.user + t.system + t.children_user + t.children_system
            for child in proc.children():
                with contextlib.suppress(psutil.Error):
                    c = child.cpu_times()
                    total += c.user + c.system
            return total
        except psutil.Error:
            continue
    return None


def process_rss(pid: int) -> list[tuple[str, int]]:
    out = []
    for name, proc in _processes(pid):
        try:
            out.append((name, proc.memory_info().rss))
        except psutil.Error:
            continue
    return out


def rss_by_process(pid: int) -> str:
    """RSS per server process, as printed: the primary builds a reindex's generation and persists it,
    the followers follow the database, the supervisor and the Whoosh helper hold no index."""
    return ", ".join(f"{name} {rss / 2**20:,.0f} MiB" for name, rss in process_rss(pid))


def run(args: argparse.Namespace, server: Server) -> int:
    tenant = make_tenant(server.database_url)
    client = api(server.base, tenant)
    project = client.project(tenant.project_id)
    index = project.index(project.create_index("bestbuy", shards=args.shards, mapping=MAPPING).id)
    docs = expand(args.docs)
    print(f"catalog: {len(docs)} products in batches of {args.batch}; {args.uploaders} uploaders, {args.shards} shards")
    cpu_before = process_cpu(server.pid)
    db_before = database_cpu() if server.database_url.startswith("postgresql") else None
    sent, finished = upload_catalog(server.base, tenant, index.id, docs, batch=args.batch, uploaders=args.uploaders)
    print(f"upload: requests done in {sent:.1f}s, last task succeeded after {finished:.1f}s")
    print(f"INDEXING THROUGHPUT: {len(docs) / finished:,.0f} documents/s (target >= 1,500)")
    used = {pid: (name, cpu - cpu_before.get(pid, (name, 0.0))[1]) for pid, (name, cpu) in process_cpu(server.pid).items()}
    print("server CPU per document: " + ", ".join(f"{name} {cpu / len(docs) * 1e6:,.0f} us" for name, cpu in used.values())
          + f"; total {sum(cpu for _, cpu in used.values()) / len(docs) * 1e6:,.0f} us")
    if db_before is not None and (db_after := database_cpu()) is not None:
        print(f"PostgreSQL CPU per document: {(db_after - db_before) / len(docs) * 1e6:,.0f} us (all its processes)")
    print("server RSS after upload: " + rss_by_process(server.pid))
    count = index.get().document_count
    total = index.search("").total
    print(f"documentCount {count}, search total {total}")
    rss_after_upload = tree_rss(server.pid)
    if args.upload_only:
        return 0

    # ---- a full reindex while searches run
    result = reindex_while_searching(server, tenant, index.id, args.searchers, rss_after_upload)
    ms, failures = result["latencies_ms"], result["failures"]
    print(f"reindex: {result['status']} in {result['seconds']:.1f}s; {len(ms)} searches meanwhile "
          f"(p50 {pct(ms, 50):.0f} ms, p99 {pct(ms, 99):.0f} ms)")
    print(f"FAILED SEARCHES DURING REINDEX: {len(failures)} (target 0)")
    for failure in failures[:5]:
        print("  ", failure)
    print(f"SERVER RSS: {result['rss'] / 2**30:.2f} GiB now, {rss_after_upload / 2**30:.2f} GiB after upload, "
          f"{result['peak_rss'] / 2**30:.3f} GiB peak during reindex")
    print("server RSS after the reindex: " + rss_by_process(server.pid))
    client.close()
    return 0 if not failures and result["status"] == "succeeded" else 1


def reindex_while_searching(server: Server, tenant: Tenant, index_id: str, searchers: int,
                            rss_before: int) -> dict[str, Any]:
    """A full reindex of ``index_id`` while ``searchers`` shop servers search it (secret key, no
    cache, no retries: every failure counts): its status and seconds, the searches' latencies (ms)
    and failures, the server tree's peak RSS meanwhile, and its RSS once the old generation is gone."""
    terms = weighted_queries(5000)
    stop = threading.Event()
    failures: list[str] = []
    latencies: list[float] = []
    peak = [rss_before]

    def searcher(seed: int) -> None:
        rng = random.Random(seed)
        with Client(server.base, tenant.key, timeout=30, retry=NO_RETRY,
                    headers={"Cache-Control": "no-cache"}) as searching:
            shop = searching.index(tenant.project_id, index_id)
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    shop.search(rng.choice(terms), facets=["brand"])
                except ShopsearchError as exc:
                    failures.append(str(exc)[:200])
                latencies.append(time.perf_counter() - started)

    def sample_rss() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], tree_rss(server.pid))
            time.sleep(0.5)

    threads = [threading.Thread(target=searcher, args=(n,), daemon=True) for n in range(searchers)]
    threads.append(threading.Thread(target=sample_rss, daemon=True))
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    with Client(server.base, tenant.key, timeout=60) as owner:
        index = owner.index(tenant.project_id, index_id)
        try:
            result = index.wait_for_task(index.reindex(), timeout=3600, raise_on_failure=False, poll_interval=0.05)
            seconds = time.perf_counter() - started
            time.sleep(1.0)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
    time.sleep(5.0)  # the old generation is dropped a few seconds after the swap
    return {"status": result.status, "seconds": seconds, "latencies_ms": [x * 1000 for x in latencies],
            "failures": failures, "peak_rss": peak[0], "rss": tree_rss(server.pid)}


if __name__ == "__main__":
    raise SystemExit(main())
