"""The production topology under faults (issue #16 item 2): PostgreSQL and Redis behind proxies the
test cuts, a local Ray cluster holding the shard actors (2 shards x 2 replicas), 2 API processes and
2 task runners, with storefront searches through both APIs and a writer adding, updating and
deleting documents through both the whole time.

Faults, one after another, during that traffic: kill -9 of one API process (then restarted); kill -9
of the task runner holding a large upload (then restarted); a shard actor killed by Ray while
searches run; the database cut for 3 s; Redis cut for 10 s.

It passes when no task failed, every write answered 202 is in the database and searchable (every
deleted document gone, nothing twice, the counts equal), searches succeed again within 5 s of the
end of each fault, and the other API answered every search while one was down.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from benchmarks.common import load_products
from tests.fixtures.server import ROOT
from tests.production.agreement import assert_search_agrees, shop_index, wait_tasks_settled
from tests.production.stack import ORIGIN, RAY_ENV, Stack, base_env, production_stack
from tests.production.traffic import (
    Accepted,
    Searcher,
    Writer,
    check_alive,
    join_all,
    seed,
    send,
    start,
    wait_writes_accepted,
)

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

RECOVERY_S = 5.0

_KILL_ACTOR = """
import random, sys, ray
ray.init(address=sys.argv[1], namespace="shopsearch", log_to_driver=False)
names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
         if a["namespace"] == "shopsearch" and a["name"].startswith("shard:" + sys.argv[2] + ":")]
newest = max(int(n.split(":")[2][1:]) for n in names)  # the serving generation
name = random.Random(3).choice(sorted(n for n in names if n.split(":")[2] == f"g{newest}"))
ray.kill(ray.get_actor(name, namespace="shopsearch"), no_restart=False)
print(name)
"""

_REPLICAS = """
import json, sys, ray
ray.init(address=sys.argv[1], namespace="shopsearch", log_to_driver=False)
prefix = "shard:" + sys.argv[2] + ":g" + sys.argv[3] + ":"
names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
               if a["namespace"] == "shopsearch" and a["name"].startswith(prefix))
print(json.dumps({n: ray.get(ray.get_actor(n, namespace="shopsearch").info.remote(), timeout=60) for n in names}))
"""


def _replicas(stack: Stack, index_id: str, generation: int) -> dict[str, dict[str, Any]]:
    """``{actor name: info}`` of every replica of the generation (applied seq, documents held)."""
    result = subprocess.run([sys.executable, "-c", _REPLICAS, stack.ray_address, index_id, str(generation)],
                            cwd=ROOT, env={**base_env(), **RAY_ENV}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _kill_actor(stack: Stack, index_id: str) -> str:
    result = subprocess.run([sys.executable, "-c", _KILL_ACTOR, stack.ray_address, index_id], cwd=ROOT,
                            env={**base_env(), **RAY_ENV}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def _lease_owner(database_url: str, task_id: str) -> tuple[str, str | None, int]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as db:
            status, owner, attempts = db.execute(
                text("SELECT status, lease_owner, attempts FROM tasks WHERE id = :t"), {"t": task_id}).one()
    finally:
        engine.dispose()
    return status, owner, attempts


def _big_catalog(n: int) -> list[dict[str, Any]]:
    products = load_products()
    return [{"id": f"c{i:05d}", "sku": f"c{i:05d}", "name": f"{p['name']} v{i // len(products)}",
             "brand": str(p.get("brand") or "none").lower(), "price": float(p.get("price") or 0), "rev": 0}
            for i, p in ((i, products[i % len(products)]) for i in range(n))]


T0 = [time.monotonic()]


def _log(what: str) -> None:
    print(f"[{time.monotonic() - T0[0]:6.1f}s] {what}", flush=True)


def test_production_topology_survives_faults(tmp_path: Path) -> None:
    T0[0] = time.monotonic()
    with production_stack(tmp_path) as stack:
        api0, api1 = stack.apis
        tenant = stack.tenant
        admin = httpx.Client(base_url=api0.base, headers=tenant.headers, timeout=30)
        shop = shop_index(admin, tenant.project_id, tenant.public_key, ORIGIN, name="shop", shards=2, replicas=2)
        index_id, index_path = shop.id, shop.path

        _log("stack up, index created")
        accepted = Accepted()
        bases = [api0.base, api1.base]
        rng = random.Random(11)
        seed(bases, tenant.headers, index_path + "/documents", accepted, rng)
        wait_tasks_settled(stack.database_url, tenant.project_id)

        searchers = [Searcher(api.base, shop.search_url, shop.storefront) for api in stack.apis]
        writer = Writer(bases, tenant.headers, index_path + "/documents", accepted)
        threads = [start(s) for s in searchers] + [start(writer)]
        faults: list[tuple[str, float, float]] = []  # (what, started, over)
        resumed: dict[str, float] = {}  # seconds from a fault's end to the writer's next accepted write

        def writes_resume() -> None:
            what, _, over = faults[-1]
            resumed[what] = round(wait_writes_accepted(accepted, threads, over, timeout=60), 2)

        try:
            time.sleep(2)

            # 1. kill -9 one API process; the other keeps serving; restart it
            started = time.monotonic()
            api1.kill9()
            api1.start()
            api1.wait_ready()
            faults.append(("api kill", started, time.monotonic()))
            _log("api restarted")
            during = (started, faults[-1][2])
            assert searchers[0].successes(*during), "the other API answered nothing while one restarted"
            assert not searchers[0].failures(*during), searchers[0].failures(*during)[:5]
            writes_resume()
            time.sleep(1)

            # 2. a large task (a reindex of ~6,000 documents into new shard actors); kill -9 the runner
            # holding it mid-task, then restart that runner
            catalog = _big_catalog(6000)
            for part in range(0, len(catalog), 1000):
                send(bases, tenant.headers, index_path + "/documents", catalog[part:part + 1000], accepted, rng)
                accepted.record(catalog[part:part + 1000])
            big = send(bases, tenant.headers, index_path + "/reindex", None, accepted, rng)
            deadline = time.monotonic() + 90
            while True:
                status, owner, _ = _lease_owner(stack.database_url, big)
                if status == "processing" and owner:
                    break
                assert status == "enqueued" and time.monotonic() < deadline, (status, owner)
                time.sleep(0.02)
            _log("reindex claimed")
            pid = int(owner.split(":")[1])
            runner = next(r for r in stack.runners if r.pid == pid)
            time.sleep(0.3)  # into its work
            started = time.monotonic()
            assert _lease_owner(stack.database_url, big)[0] == "processing", "the upload finished before the kill"
            runner.kill9()
            runner.start()
            faults.append(("runner kill", started, time.monotonic()))
            _log("runner killed and restarted")
            writes_resume()
            time.sleep(1)

            deadline = time.monotonic() + 90
            while _lease_owner(stack.database_url, big)[0] != "succeeded":  # the new generation serves
                assert time.monotonic() < deadline, _lease_owner(stack.database_url, big)
                time.sleep(0.1)
            _log("reindex succeeded")

            # 3. a shard actor killed by Ray while searches run (Ray restarts it; the host fails over)
            started = time.monotonic()
            killed_actor = _kill_actor(stack, index_id)
            faults.append((f"actor kill {killed_actor}", started, time.monotonic()))
            _log(f"actor killed: {killed_actor}")
            writes_resume()
            time.sleep(2)

            # 4. the database cut for 3 s
            started = time.monotonic()
            stack.db.cut()
            time.sleep(3)
            stack.db.restore()
            faults.append(("database cut", started, time.monotonic()))
            _log("database back")
            writes_resume()
            time.sleep(2)

            # 5. Redis cut for 10 s
            started = time.monotonic()
            stack.redis.cut()
            time.sleep(10)
            stack.redis.restore()
            faults.append(("redis cut", started, time.monotonic()))
            _log("redis back")
            writes_resume()
            check_alive(threads)
            time.sleep(RECOVERY_S + 1)
        finally:
            stack.db.restore()
            stack.redis.restore()
            writer.stop.set()
            for s in searchers:
                s.stop.set()
        join_all(threads, 150)  # a writer or searcher that died (a 500 in `send`) fails the test here
        print("writes accepted again after each fault (s):", json.dumps(resumed))

        # searches succeed again within 5 s of the end of each fault, through both APIs: the time from
        # the fault's end to the first success after its last failure
        recovery: dict[str, float] = {}
        failed_during: dict[str, int] = {}
        for n, (what, started, over) in enumerate(faults):
            until = faults[n + 1][1] if n + 1 < len(faults) else time.monotonic()
            worst = 0.0
            for s in searchers:
                after = [x for x in s.samples if over <= x.at < until]
                last_fail = max((x.at for x in after if not x.ok), default=over)
                ok_at = min((x.at for x in after if x.ok and x.at >= last_fail), default=None)
                assert ok_at is not None, f"{s.base}: no search succeeded after {what}"
                worst = max(worst, ok_at - over)
            recovery[what] = round(worst, 2)
            failed_during[what] = sum(len(s.failures(started, over)) for s in searchers)
            kinds = {(x.status, x.detail[:120]) for s in searchers for x in s.failures(started, over)}
            print(what, "failures:", sorted(kinds)[:5])
        print("searches failed during each fault:", json.dumps(failed_during))
        print("recovery after each fault (s):", json.dumps(recovery))
        assert max(recovery.values()) <= RECOVERY_S, recovery

        _log("traffic stopped")
        statuses = wait_tasks_settled(stack.database_url, tenant.project_id, timeout=120)
        assert set(statuses) == {"succeeded"}, {k: v[:5] for k, v in statuses.items()}
        assert _lease_owner(stack.database_url, big)[2] >= 2, "the killed runner's task was not run again"
        for api in stack.apis:
            http = httpx.Client(base_url=api.base, headers=tenant.headers, timeout=30)
            live = assert_search_agrees(http, index_path + "/search", stack.database_url, index_id, accepted.expected)
        # and every replica, the restarted actor too, holds the index up to its last change
        engine = create_engine(stack.database_url)
        with engine.connect() as db:
            generation, seq = db.execute(text("SELECT serving_generation, seq FROM indices WHERE id = :i"),
                                         {"i": index_id}).one()
        engine.dispose()
        replicas = _replicas(stack, index_id, generation)
        assert len(replicas) == 4, replicas
        assert {r["appliedSeq"] for r in replicas.values()} == {seq}, replicas
        held = {name.rsplit(":", 1)[0]: r["docCount"] for name, r in replicas.items() if name.endswith(":r0")}
        for name, r in replicas.items():
            assert r["docCount"] == held[name.rsplit(":", 1)[0]], replicas
        assert sum(held.values()) == live, (held, live)
        _log("checked")
        print(f"{len(accepted.task_ids)} writes accepted ({accepted.retries} resent), {live} documents live, "
              f"{sum(len(s.samples) for s in searchers)} searches")
