"""``shopsearch serve --workers 2``: two real serving processes behind one port.

After every write, the moment its task reads ``succeeded`` each serving process holds it (the
follower's report in ``serving_processes``) and answers from fresh connections agree and include it;
cached storefront answers retire in both processes (shared epochs), and without Redis each passes the
other what it computed (state.db); revoked keys and rate limits hold
whichever process a request reaches. On the embedded default (no Redis: ``state.db``), on
PostgreSQL + Redis, and in Ray mode on one machine (``SHOPSEARCH_RAY_ADDRESS=local``, on both), where
both processes follow the database with near replicas beside the shard actors and search them: they
keep answering when the actors are gone. Without near replicas (searches on the actors), both
processes answer again within a second or so once the killed actors were re-created.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psutil
import pytest
from sqlalchemy import create_engine, text

from tests.fixtures.server import Server, running_server
from tests.fixtures.tasks import wait_succeeded
from tests.fixtures.tenants import make_tenant

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

ORIGIN = "https://shop.example"
MAPPING = {"idField": "id", "fields": {
    "name": {"type": "text", "searchable": True},
    "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
}}
WORDS = ("zebra", "quokka", "narwhal", "okapi", "axolotl")
CONNECTIONS = 16  # fresh connections per check: the kernel hands each to either process


@pytest.fixture(scope="module", params=["sqlite", "postgres", "ray", "ray-postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """One server per topology for the module's tests (each its own tenant): a start is 10-30 s."""
    both = request.param.endswith("postgres")
    env = {"SHOPSEARCH_RAY_ADDRESS": "local"} if request.param.startswith("ray") else None
    with running_server(postgres=both, redis=both, workers=2, extra_env=env) as running:
        yield running


def _ray_worker_env(server: Server) -> dict[str, str] | None:
    """The environment of a serving process joined to the Ray cluster ``serve`` started, if any."""
    for child in psutil.Process(server.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            env = child.environ()
            if env.get("SHOPSEARCH_RAY_ADDRESS", "local") != "local":
                return env
    return None


def _followers_expected(server: Server) -> int:
    """Every process follows in Ray mode (near replicas); only the non-primary one otherwise."""
    return 2 if _ray_worker_env(server) else 1


_SHARD_ACTORS = """
import sys, ray
ray.init(address=sys.argv[1], namespace="shopsearch", log_to_driver=False)
names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
         if a["namespace"] == "shopsearch" and a["name"].startswith("shard:" + sys.argv[2] + ":")]
if sys.argv[3] == "kill":
    for name in names:
        ray.kill(ray.get_actor(name, namespace="shopsearch"), no_restart=True)
print(len(names))
"""


def _shard_actors(env: dict[str, str], index_id: str, action: str) -> int:
    """How many shard actors of the index are alive (``kill``: then kills them all), asked from a
    driver joined to the serving processes' Ray cluster (``env``: a serving process's environment)."""
    done = subprocess.run([sys.executable, "-c", _SHARD_ACTORS, env["SHOPSEARCH_RAY_ADDRESS"], index_id, action],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split()[-1])


def _fresh(server: Server, method: str, url: str, **kwargs: Any) -> list[httpx.Response]:
    """The same request on :data:`CONNECTIONS` new connections."""
    out = []
    for _ in range(CONNECTIONS):
        with httpx.Client(base_url=server.base, timeout=30) as http:
            out.append(http.request(method, url, **kwargs))
    return out


def _answers(responses: list[httpx.Response]) -> set[str]:
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses if r.status_code != 200]
    return {repr((r.json()["total"], [h["id"] for h in r.json()["hits"]], r.json().get("facets"))) for r in responses}


def _wait(http: httpx.Client, project_id: str, task_id: str) -> None:
    wait_succeeded(http, project_id, task_id, timeout=60, pause=0.02)


def _followers(server: Server, index_id: str) -> tuple[list[int], int]:
    """What each live follower reports holding of the index's serving generation, and the index's sequence."""
    engine = create_engine(server.database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT heartbeat_at, replicas FROM serving_processes")).all()
            generation, seq = db.execute(text("SELECT serving_generation, seq FROM indices WHERE id = :i"),
                                         {"i": index_id}).one_or_none() or (1, 0)
    finally:
        engine.dispose()
    live = [r for r in rows if r[0] > time.time() - 10]
    held = [json.loads(r[1]) if isinstance(r[1], str) else r[1] for r in live]
    return [int((h.get(index_id) or {}).get(str(generation), -1)) for h in held], int(seq)


def _hits(responses: list[httpx.Response]) -> set[tuple[int, tuple[str, ...]]]:
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses if r.status_code != 200]
    return {(r.json()["total"], tuple(h["id"] for h in r.json()["hits"])) for r in responses}


def _both_up(server: Server) -> None:
    """The follower registers before it looks at the indices (the primary answers /ready first)."""
    deadline = time.monotonic() + 60
    while len(_followers(server, "")[0]) != _followers_expected(server):
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_two_processes_answer_the_same_after_every_write(server: Server) -> None:
    _both_up(server)
    tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
    http = httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60)
    created = http.post(f"/v1/projects/{tenant.project_id}/indices", json={"name": "shop", "shards": 2, "mapping": MAPPING})
    assert created.status_code == 201, created.text
    index_id = created.json()["id"]
    index_url = f"/v1/projects/{tenant.project_id}/indices/{index_id}"
    base = [{"id": f"p{n}", "name": f"lamp model {n}", "brand": ("Acme", "Globex")[n % 2]} for n in range(40)]
    upload = http.post(index_url + "/documents", json=base)
    _wait(http, tenant.project_id, upload.json()["taskId"])
    profile = http.post(index_url + "/profiles", json={"name": "web", "queryFields": {"name": {"weight": 5}}})
    assert profile.status_code == 201, profile.text
    storefront = f"/v1/search/{profile.json()['profileKey']}"
    public = {"Authorization": f"Bearer {tenant.public_key}", "Origin": ORIGIN}
    secret = {**tenant.headers, "Cache-Control": "no-cache"}
    assert len(_followers(server, index_id)[0]) == _followers_expected(server)

    for n, word in enumerate(WORDS):
        # the storefront answer for the word is cached in both processes before the write
        assert {r.json()["total"] for r in _fresh(server, "POST", storefront, json={"q": word}, headers=public)} == {0}
        upload = http.post(index_url + "/documents", json=[{"id": f"new{n}", "name": f"{word} lamp", "brand": "Acme"}])
        _wait(http, tenant.project_id, upload.json()["taskId"])
        reported, seq = _followers(server, index_id)
        assert reported == [seq] * _followers_expected(server), (reported, seq)  # held when the task succeeded
        assert _hits(_fresh(server, "POST", index_url + "/search", json={"q": word}, headers=secret)) == {
            (1, (f"new{n}",))}
        assert {r.json()["total"] for r in _fresh(server, "POST", storefront, json={"q": word}, headers=public)} == {1}
        assert len(_answers(_fresh(server, "POST", index_url + "/search", headers=secret,
                                   json={"q": "lamp", "facets": ["brand"], "perPage": 50}))) == 1
        removed = http.post(index_url + "/documents/delete", json=[f"new{n}"])
        _wait(http, tenant.project_id, removed.json()["taskId"])
        assert _hits(_fresh(server, "POST", index_url + "/search", json={"q": word}, headers=secret)) == {(0, ())}
    if server.database_url.startswith("sqlite"):  # no Redis: the processes passed each other their answers
        with sqlite3.connect(server.data_dir / "state.db") as state:
            (shared,) = state.execute("SELECT count(*) FROM answers").fetchone()
        assert shared >= len(WORDS)
    env = _ray_worker_env(server)
    if env:  # near replicas: the answers come from each process's memory, not from the actors
        lamp = {"q": "lamp", "perPage": 50}
        before = _hits(_fresh(server, "POST", index_url + "/search", json=lamp, headers=secret))
        assert len(before) == 1 and next(iter(before))[0] == 40, before

        assert _shard_actors(env, index_id, "kill") == 2  # 2 shards, 1 replica each: all gone
        assert _hits(_fresh(server, "POST", index_url + "/search", json=lamp, headers=secret)) == before
        # nothing asked the actors (a search sent to them re-creates them from their files)
        assert _shard_actors(env, index_id, "count") == 0


def test_revocations_and_rate_limits_hold_in_every_process(server: Server) -> None:
    _both_up(server)
    email, password = f"owner-{secrets.token_hex(4)}@shop.example", "a long password"
    owner = json.loads(server.cli("tenants", "create", "--email", email, "--password", password, "--org", "Shop",
                                  "--project", "web", "--verified", "--json"))
    http = httpx.Client(base_url=server.base, timeout=60)
    login = http.post("/v1/auth/login", json={"email": email, "password": password})
    assert login.status_code == 200, login.text
    session = {"Authorization": f"Bearer {login.json()['accessToken']}"}
    keys = f"/v1/projects/{owner['projectId']}/api-keys"
    made = http.post(keys, headers=session, json={"name": "temp", "type": "secret", "access": "read"})
    assert made.status_code == 201, made.text
    temp = {"Authorization": f"Bearer {made.json()['key']}"}
    indices = f"/v1/projects/{owner['projectId']}/indices"
    assert {r.status_code for r in _fresh(server, "GET", indices, headers=temp)} == {200}  # cached in both
    assert http.delete(f"{keys}/{made.json()['id']}", headers=session).status_code == 204
    assert {r.status_code for r in _fresh(server, "GET", indices, headers=temp)} == {401}

    stranger = f"nobody-{secrets.token_hex(4)}@shop.example"  # 10 failed sign-ins per address a minute
    codes = [r.status_code for r in _fresh(server, "POST", "/v1/auth/login", json={"email": stranger, "password": "x"})]
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}, codes


@pytest.fixture
def actor_served() -> Iterator[tuple[Server, dict[str, str], str]]:
    """Two serving processes searching on the shard actors (``SHOPSEARCH_RAY_NEAR_REPLICAS=false``, the
    default when joining a cluster) and an index of 40 lamps: the server, a secret key's headers and
    the index's URL. Made in the test's setup, beside other tests (only the call keeps the machine)."""
    env = {"SHOPSEARCH_RAY_ADDRESS": "local", "SHOPSEARCH_RAY_NEAR_REPLICAS": "false"}
    with running_server(workers=2, extra_env=env) as server:
        tenant = make_tenant(server.database_url)
        secret = {**tenant.headers, "Cache-Control": "no-cache"}
        with httpx.Client(base_url=server.base, headers=secret, timeout=60) as http:
            created = http.post(f"/v1/projects/{tenant.project_id}/indices",
                                json={"name": "shop", "shards": 2, "mapping": MAPPING})
            assert created.status_code == 201, created.text
            index_url = f"/v1/projects/{tenant.project_id}/indices/{created.json()['id']}"
            docs = [{"id": f"p{n}", "name": f"lamp model {n}", "brand": "Acme"} for n in range(40)]
            upload = http.post(index_url + "/documents", json=docs)
            _wait(http, tenant.project_id, upload.json()["taskId"])
        yield server, secret, index_url


@pytest.mark.exclusive  # bounds how long searches wait (under the retry window)
def test_without_near_replicas_both_processes_reach_the_recreated_actors(
        actor_served: tuple[Server, dict[str, str], str]) -> None:
    """Every actor of the index is killed for good: the first process to search re-creates them;
    the other must call the new actors, not the dead ones (it kept doing that: 503 after 45 s)."""
    server, secret, index_url = actor_served
    index_id = index_url.rsplit("/", 1)[1]
    worker_env = _ray_worker_env(server)
    assert worker_env and worker_env["SHOPSEARCH_RAY_NEAR_REPLICAS"] == "false"
    lamp = {"q": "lamp", "perPage": 1}
    assert {r.json()["total"] for r in _fresh(server, "POST", index_url + "/search", json=lamp, headers=secret)} == {40}
    assert _shard_actors(worker_env, index_id, "kill") == 2

    def search(_: int) -> tuple[int, float]:
        started = time.monotonic()
        with httpx.Client(base_url=server.base, timeout=60) as fresh:
            response = fresh.post(index_url + "/search", json=lamp, headers=secret)
        return response.status_code, time.monotonic() - started

    with ThreadPoolExecutor(CONNECTIONS) as pool:  # at once, on new connections: both processes
        answered = list(pool.map(search, range(CONNECTIONS)))
    assert {status for status, _ in answered} == {200}, answered
    assert max(took for _, took in answered) < 10, answered  # not the retry window (15 s), thrice
