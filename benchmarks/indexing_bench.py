"""Indexing benchmark against a real server (``shopsearch serve`` in a subprocess).

    python -m benchmarks.indexing_bench [--docs 100000] [--shards 2] [--uploaders 4] [--postgres]

1. Starts ``shopsearch serve`` with a temporary ``SHOPSEARCH_DATA_DIR`` (embedded default: SQLite,
   in-process shards and task runner) or, with ``--postgres``, against a scratch PostgreSQL database.
2. Creates a tenant on the enterprise plan straight in the database and an index over a Best Buy
   catalog expanded to ``--docs`` products.
3. Uploads through the API in batches of 1000 with a few concurrent uploaders and prints
   documents/s from the first upload to the last task succeeded (target >= 1,500 docs/s).
4. Runs a full reindex while a loop of searches runs and prints the failed searches (target 0).
5. Prints the total RSS of the server process tree holding the index (target < 1.5 GiB).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
DATASET = Path("/work/shared/datasets/bestbuy")
PG_ADMIN_URL = os.environ.get("SHOPSEARCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True, "suggest": True},
        "description": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
        "categories": {"type": "keyword[]", "searchable": True, "filterable": True, "facetable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True, "filterable": True},
        "image": {"type": "keyword"},
    },
}


def catalog(n: int) -> list[dict[str, Any]]:
    base = json.loads((DATASET / "products.json").read_text())
    rng = random.Random(42)
    out = []
    for i in range(n):
        src = base[i % len(base)]
        variant = i // len(base)
        doc = dict(src)
        doc["id"] = f"p{i}"
        if variant:
            doc["name"] = f"{src['name']} (variant {variant})"
            doc["price"] = round(float(src.get("price") or 0) * rng.uniform(0.8, 1.2), 2)
            doc["popularity"] = int(src.get("popularity") or 0) + variant
        out.append(doc)
    return out


def queries() -> list[str]:
    lines = (DATASET / "queries.jsonl").read_text().splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()][:500]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_tenant(database_url: str) -> tuple[str, str]:
    """An enterprise-plan organization, a project and a full-access key, made in the database."""
    from control_plane.api_key.models import ApiKey
    from control_plane.auth.models import User
    from control_plane.db import make_engine, make_sessionmaker
    from control_plane.org.service import create_organization
    from control_plane.project.models import Project
    from control_plane.security import hash_password, hash_token, new_api_key
    from shared.ids import new_id

    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine).begin() as db:
            user = User(id=new_id("usr"), email=f"bench-{secrets.token_hex(4)}@example.com", name="bench",
                        password_hash=hash_password("benchmark password"))
            db.add(user)
            db.flush()
            org = create_organization(db, "bench", user.id, plan="enterprise")
            project = Project(id=new_id("prj"), org_id=org.id, name="bench")
            db.add(project)
            db.flush()
            raw = new_api_key("secret")
            db.add(ApiKey(id=new_id("key"), project_id=project.id, type="secret", name="bench", access="full",
                          allowed_origins=[], prefix=raw[:12], key_hash=hash_token(raw)))
            return project.id, raw
    finally:
        engine.dispose()


def tree_rss(pid: int) -> int:
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 3600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = http.get(f"/v1/projects/{project_id}/tasks/{task_id}").json()
        if task["status"] in ("succeeded", "failed", "canceled"):
            return task  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise TimeoutError(task_id)
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--uploaders", type=int, default=4)
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--postgres", action="store_true", help="use a scratch PostgreSQL database")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="shopsearch-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(SHOPSEARCH_DATA_DIR=str(data_dir), SHOPSEARCH_LOG_LEVEL="WARNING")
    pg_name = None
    if args.postgres:
        import psycopg

        pg_name = f"shopsearch_bench_{secrets.token_hex(4)}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{pg_name}"')
        env["SHOPSEARCH_DATABASE_URL"] = f"postgresql+psycopg://postgres@127.0.0.1:5432/{pg_name}"
    database_url = env.get("SHOPSEARCH_DATABASE_URL") or f"sqlite:///{(data_dir / 'shopsearch.db').resolve()}"
    port = free_port()
    print(f"data dir {data_dir}; database {'postgres ' + str(pg_name) if pg_name else 'sqlite'}; port {port}")
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", str(port)], cwd=ROOT, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        project_id, key = make_tenant(database_url)
        headers = {"Authorization": f"Bearer {key}"}
        http = httpx.Client(base_url=base, headers=headers, timeout=120)
        created = http.post(f"/v1/projects/{project_id}/indices",
                            json={"name": "bestbuy", "shards": args.shards, "mapping": MAPPING})
        created.raise_for_status()
        index_id = created.json()["id"]
        index_url = f"/v1/projects/{project_id}/indices/{index_id}"
        docs = catalog(args.docs)
        batches = [docs[i:i + args.batch] for i in range(0, len(docs), args.batch)]
        bodies = [json.dumps(b).encode() for b in batches]
        print(f"catalog: {len(docs)} products in {len(batches)} batches; {args.uploaders} uploaders, {args.shards} shards")

        task_ids: list[str] = []
        lock = threading.Lock()
        local = threading.local()

        def client() -> httpx.Client:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=base, headers={**headers, "content-type": "application/json"},
                                            timeout=120)
            return local.client  # type: ignore[no-any-return]

        def send(body: bytes) -> None:
            response = client().post(index_url + "/documents", content=body)
            response.raise_for_status()
            with lock:
                task_ids.append(response.json()["taskId"])

        started = time.perf_counter()
        with ThreadPoolExecutor(args.uploaders) as pool:
            list(pool.map(send, bodies))
        uploaded = time.perf_counter()
        last = None
        for task_id in task_ids:
            last = wait_task(http, project_id, task_id)
            if last["status"] != "succeeded":
                raise RuntimeError(f"task failed: {last}")
        finished = time.perf_counter()
        rate = len(docs) / (finished - started)
        print(f"upload: requests done in {uploaded - started:.1f}s, last task succeeded after {finished - started:.1f}s")
        print(f"INDEXING THROUGHPUT: {rate:,.0f} documents/s (target >= 1,500)")
        count = http.get(index_url).json()["documentCount"]
        total = http.post(index_url + "/search", json={"q": ""}).json()["total"]
        print(f"documentCount {count}, search total {total}")
        rss_after_upload = tree_rss(server.pid)

        # ---- reindex while searching
        terms = queries()
        stop = threading.Event()
        failures: list[str] = []
        latencies: list[float] = []

        def searcher(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    try:
                        r = c.post(index_url + "/search", json={"q": rng.choice(terms), "facets": ["brand"]})
                        if r.status_code != 200:
                            failures.append(f"{r.status_code} {r.text[:200]}")
                    except httpx.HTTPError as exc:
                        failures.append(repr(exc))
                    latencies.append(time.perf_counter() - t0)

        peak = [rss_after_upload]

        def sample_rss() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], tree_rss(server.pid))
                time.sleep(0.5)

        threads = [threading.Thread(target=searcher, args=(n,)) for n in range(args.searchers)]
        threads.append(threading.Thread(target=sample_rss))
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        task = http.post(index_url + "/reindex").json()
        result = wait_task(http, project_id, task["taskId"])
        reindex_s = time.perf_counter() - t0
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join()
        latencies.sort()
        p50 = latencies[len(latencies) // 2] * 1000 if latencies else 0
        p99 = latencies[int(len(latencies) * 0.99)] * 1000 if latencies else 0
        print(f"reindex: {result['status']} in {reindex_s:.1f}s; {len(latencies)} searches meanwhile "
              f"(p50 {p50:.0f} ms, p99 {p99:.0f} ms)")
        print(f"FAILED SEARCHES DURING REINDEX: {len(failures)} (target 0)")
        for failure in failures[:5]:
            print("  ", failure)
        rss_now = tree_rss(server.pid)
        print(f"SERVER RSS: {rss_now / 2**30:.2f} GiB now, {rss_after_upload / 2**30:.2f} GiB after upload, "
              f"{peak[0] / 2**30:.2f} GiB peak during reindex (target < 1.5 GiB)")
        return 0 if not failures and result["status"] == "succeeded" else 1
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        if pg_name:
            import psycopg

            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
