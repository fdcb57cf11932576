"""What the benchmark scripts share: the Best Buy catalog and queries, a real server, tenants, uploads."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
from shopsearch_client import AsyncClient, Client, Index, Sync
from shopsearch_client.models import TaskAccepted

# the test fixtures' servers, tenants, ports and task waits: one copy, shared with the benchmarks
from tests.fixtures import tasks
from tests.fixtures.ports import free_port  # noqa: F401 - re-exported
from tests.fixtures.server import PG_ADMIN_URL, Server, running_server, scratch_pg_database  # noqa: F401
from tests.fixtures.tenants import Tenant, make_tenant  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
DATASET = Path(os.environ.get("SHOPSEARCH_DATASET", ROOT / "shared" / "datasets" / "bestbuy"))
PRODUCTS = DATASET / "products.json"
QUERIES = DATASET / "queries.jsonl"

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


def search_cpu(engines: list[Any], kinds: dict[str, list[Any]], cold: bool = False) -> dict[str, tuple[float, float]]:
    """Per kind of query, p50 and p95 in ms of each query's CPU (this thread) searched on every
    engine in turn. The kinds take turns query by query (the i-th of each, then the (i+1)-th), so a
    busier moment of the machine weighs on every kind alike. ``cold``: every engine's query cache
    (typo and prefix expansions, long posting lists' masks, the nearest documents) is emptied
    before each search, so a query repeated does not find its work done."""
    costs: dict[str, list[float]] = {name: [] for name in kinds}
    for i in range(max(len(queries) for queries in kinds.values())):
        for name, queries in kinds.items():
            if i >= len(queries):
                continue
            if cold:
                for engine in engines:
                    engine._mem.expansion_cache.clear()
            start = time.thread_time()
            for engine in engines:
                engine.search(queries[i])
            costs[name].append((time.thread_time() - start) * 1000)
    out = {}
    for name, values in costs.items():
        values.sort()
        out[name] = (values[len(values) // 2], values[int(len(values) * 0.95)])
    return out


def weighted_queries(k: int, seed: int = 1) -> list[str]:
    """``k`` real shopper queries drawn by popularity (so popular ones repeat, as in real traffic)."""
    rows = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    rng = random.Random(seed)
    return rng.choices([r["query"] for r in rows], weights=[max(1, r["popularity"]) for r in rows], k=k)


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


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 3600) -> dict[str, Any]:
    """``tests.fixtures.tasks.wait_task`` with a benchmark's patience (a catalog of millions)."""
    return tasks.wait_task(http, project_id, task_id, timeout)


def api(base: str, tenant: Tenant, timeout: float = 300) -> Client:
    """The Python client with the tenant's secret key (close it, or use it in a ``with``)."""
    return Client(base, tenant.key, timeout=timeout)


def upload_catalog(base: str, tenant: Tenant, index_id: str, docs: list[dict[str, Any]], *,
                   batch: int = 1000, uploaders: int = 4) -> tuple[float, float]:
    """Uploads in batches with concurrent uploaders (the async client); returns (seconds to send,
    seconds to last task succeeded)."""

    async def run() -> tuple[float, float]:
        async with AsyncClient(base, tenant.key, timeout=300) as client:
            index = client.index(tenant.project_id, index_id)
            gate = asyncio.Semaphore(uploaders)

            async def send(chunk: list[dict[str, Any]]) -> list[TaskAccepted]:
                async with gate:
                    return await index.upload_documents(chunk, batch_size=batch)

            started = time.perf_counter()
            sent = await asyncio.gather(*(send(docs[i:i + batch]) for i in range(0, len(docs), batch)))
            sending = time.perf_counter() - started
            await index.wait_for_tasks([task for tasks in sent for task in tasks], timeout=3600, poll_interval=0.05)
            return sending, time.perf_counter() - started

    return asyncio.run(run())


def storefront_index(client: Client, tenant: Tenant, docs: list[dict[str, Any]], *, name: str = "bench",
                     shards: int = 2, mapping: dict[str, Any] = STOREFRONT_MAPPING,
                     facets: list[dict[str, Any]] | None = STOREFRONT_FACETS, **options: Any) -> Index[Sync]:
    """A new index (the storefront mapping and facets by default) holding ``docs``, searchable."""
    project = client.project(tenant.project_id)
    index = project.index(project.create_index(name, shards=shards, mapping=mapping, **options).id)
    if facets:
        index.update_facets(facets)
    upload_catalog(client.url, tenant, index.id, docs)
    return index
