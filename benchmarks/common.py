"""What the benchmark scripts share: the Best Buy catalog and queries, a real server, tenants, uploads."""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
DATASET = Path(os.environ.get("SHOPSEARCH_DATASET", ROOT / "shared" / "datasets" / "bestbuy"))
PRODUCTS = DATASET / "products.json"
QUERIES = DATASET / "queries.jsonl"
PG_ADMIN_URL = os.environ.get("SHOPSEARCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "categories": {"type": "keyword[]", "searchable": True, "facetable": True, "filterable": True},
        "description": {"type": "text", "searchable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True},
    },
}
# name over brand over categories over description
FIELDS: dict[str, dict[str, int]] = {
    "name": {"weight": 8}, "brand": {"weight": 4}, "categories": {"weight": 2}, "description": {"weight": 1},
}
# The storefront users measured (issue #11): the profile, the index's facets and an image to show.
STOREFRONT_MAPPING: dict[str, Any] = {
    **MAPPING, "fields": {**MAPPING["fields"], "image": {"type": "keyword", "searchable": False}},
}
STOREFRONT_FACETS: list[dict[str, Any]] = [
    {"field": "brand", "type": "terms", "label": "Brand"},
    {"field": "categories", "type": "terms", "label": "Category"},
    {"field": "price", "type": "range", "label": "Price", "ranges": [
        {"to": 50, "label": "Under $50"}, {"from": 50, "to": 200, "label": "$50 to $200"},
        {"from": 200, "label": "$200 and up"}]},
]
STOREFRONT_PROFILE: dict[str, Any] = {
    "name": "storefront",
    "queryFields": {"name": {"weight": 10, "typo": True, "prefix": True},
                    "brand": {"weight": 5, "typo": True, "prefix": True},
                    "description": {"weight": 1, "typo": False, "prefix": False}},
    "operator": "and",
    "facets": ["brand", "categories", "price"],
    "perPage": 20,
    "retrieve": ["name", "brand", "price", "image", "categories"],
    "highlight": ["name"],
}
SUFFIXES = ["Pro", "Lite", "Plus", "Max", "Mini", "Edition", "Bundle", "Kit", "Deluxe", "Sport", "Travel",
            "Classic", "Premium", "Value", "Essentials", "Starter", "Ultra", "Compact", "Duo", "Go"]


def load_products() -> list[dict[str, Any]]:
    """The Best Buy catalog with ids (its position in the file)."""
    return [{"id": str(i), **p} for i, p in enumerate(json.loads(PRODUCTS.read_text()))]


def expand(n: int, seed: int = 42) -> list[dict[str, Any]]:
    """The catalog grown to ``n`` products: variant words on names, prices and popularity perturbed."""
    base = load_products()
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = dict(base[i % len(base)])
        v = i // len(base)
        if v:
            suffix = SUFFIXES[v % len(SUFFIXES)]
            p["name"] = f"{p['name']} {suffix} {v // len(SUFFIXES) + 1}" if v >= len(SUFFIXES) else f"{p['name']} {suffix}"
            p["price"] = round(p["price"] * rng.uniform(0.8, 1.25), 2)
            p["popularity"] = max(0, int(p["popularity"] * rng.uniform(0.5, 1.5)))
        p["id"] = f"p{i:06d}"
        out.append(p)
    return out


def weighted_queries(k: int, seed: int = 1) -> list[str]:
    """``k`` real shopper queries drawn by popularity (so popular ones repeat, as in real traffic)."""
    rows = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    rng = random.Random(seed)
    return rng.choices([r["query"] for r in rows], weights=[max(1, r["popularity"]) for r in rows], k=k)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def _tree(pid: int) -> list[psutil.Process]:
    """A process and all its children (empty when it is gone)."""
    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_rss(pid: int) -> int:
    """Total RSS of a process and all its children (bytes)."""
    total = 0
    for p in _tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its children, counting exited children it reaped."""
    total = 0.0
    for p in _tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass
class Tenant:
    project_id: str
    key: str
    public_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def make_tenant(database_url: str, public_origins: list[str] | None = None) -> Tenant:
    """An enterprise-plan organization, a project, a full-access key (and a public key), in the database."""
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
            public = None
            if public_origins:
                public = new_api_key("public")
                db.add(ApiKey(id=new_id("key"), project_id=project.id, type="public", name="bench web",
                              allowed_origins=public_origins, prefix=public[:12], key_hash=hash_token(public)))
            return Tenant(project.id, raw, public, {"Authorization": f"Bearer {raw}"})
    finally:
        engine.dispose()


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 3600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = http.get(f"/v1/projects/{project_id}/tasks/{task_id}")
        if response.status_code != 200:
            raise RuntimeError(f"reading task {task_id} failed: {response.status_code} {response.text[:500]}")
        task = response.json()
        if task["status"] in ("succeeded", "failed", "canceled"):
            return task  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise TimeoutError(task_id)
        time.sleep(0.05)


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    database_url: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def cli(self, *args: str) -> str:
        """``shopsearch ARGS`` as a separate process on this server's database; its standard output."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
        env.update(SHOPSEARCH_DATA_DIR=str(self.data_dir), SHOPSEARCH_DATABASE_URL=self.database_url)
        result = subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"shopsearch {' '.join(args)} failed: {result.stderr}")
        return result.stdout


@contextlib.contextmanager
def scratch_pg_database(prefix: str = "shopsearch_scratch") -> Iterator[str]:
    """A fresh, empty PostgreSQL database on the machine's server (its name), dropped afterwards."""
    import psycopg

    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def running_server(postgres: bool = False, redis: bool = False, keep: bool = False,
                   extra_env: dict[str, str] | None = None, workers: int | None = None) -> Iterator[Server]:
    """``shopsearch serve`` in a subprocess on a temporary data dir (optionally a scratch PostgreSQL);
    ``workers`` is passed as ``serve --workers`` (unset: the serve default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(extra_env or {})  # may name the data directory (one that doesn't exist yet, say)
    env.setdefault("SHOPSEARCH_DATA_DIR", tempfile.mkdtemp(prefix="shopsearch-bench-"))
    env.setdefault("SHOPSEARCH_LOG_LEVEL", "WARNING")
    data_dir = Path(env["SHOPSEARCH_DATA_DIR"])
    cleanup = contextlib.ExitStack()
    if postgres:
        pg_name = cleanup.enter_context(scratch_pg_database("shopsearch_bench"))
        env["SHOPSEARCH_DATABASE_URL"] = f"postgresql+psycopg://postgres@127.0.0.1:5432/{pg_name}"
    if redis:
        env["SHOPSEARCH_REDIS_URL"] = "redis://127.0.0.1:6379/0"
        env["SHOPSEARCH_REDIS_PREFIX"] = f"bench:{secrets.token_hex(4)}:"
    database_url = env.get("SHOPSEARCH_DATABASE_URL") or f"sqlite:///{(data_dir / 'shopsearch.db').resolve()}"
    port = free_port()
    command = [sys.executable, "-m", "cli.main", "serve", "--port", str(port)]
    if workers is not None:
        command += ["--workers", str(workers)]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/ready", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        yield Server(base, process, data_dir, database_url)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        cleanup.close()
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)


def upload_catalog(base: str, tenant: Tenant, index_url: str, docs: list[dict[str, Any]], *,
                   batch: int = 1000, uploaders: int = 4) -> tuple[float, float]:
    """Uploads in batches with concurrent uploaders; returns (seconds to send, seconds to last task succeeded)."""
    bodies = [json.dumps(docs[i:i + batch]).encode() for i in range(0, len(docs), batch)]
    task_ids: list[str] = []
    lock = threading.Lock()
    local = threading.local()

    def send(body: bytes) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, headers={**tenant.headers, "content-type": "application/json"},
                                        timeout=300)
        response = local.client.post(index_url + "/documents", content=body)
        response.raise_for_status()
        with lock:
            task_ids.append(response.json()["taskId"])

    started = time.perf_counter()
    with ThreadPoolExecutor(uploaders) as pool:
        list(pool.map(send, bodies))
    sent = time.perf_counter() - started
    with httpx.Client(base_url=base, headers=tenant.headers, timeout=60) as http:
        for task_id in task_ids:
            task = wait_task(http, tenant.project_id, task_id)
            if task["status"] != "succeeded":
                raise RuntimeError(f"task failed: {task}")
    return sent, time.perf_counter() - started
