"""A real ``shopsearch serve`` whose PostgreSQL and Redis connections pass through proxies the test cuts.

The machine's own PostgreSQL and Redis keep running; only the proxies in between are cut.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from benchmarks.common import scratch_pg_database
from tests.conftest import REDIS_URL, ROOT, _ensure_services
from tests.tcp_proxy import TcpProxy

ORIGIN = "https://shop.example"
PASSWORD = "outage test password"
MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {"name": {"type": "text", "searchable": True}, "brand": {"type": "keyword", "facetable": True}},
}


@dataclass
class Stack:
    base: str
    db: TcpProxy
    redis: TcpProxy
    project_id: str
    secret: str
    public: str
    email: str
    redis_prefix: str
    log: Path
    headers: dict[str, str] = field(default_factory=dict)

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={**self.headers, **headers}, timeout=15)

    def index_url(self, index_id: str, tail: str = "") -> str:
        return f"/v1/projects/{self.project_id}/indices/{index_id}{tail}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _make_shop(database_url: str) -> tuple[str, str, str, str]:
    """A verified user owning an enterprise organization, a project, a full secret key and a public key."""
    from control_plane.api_key.models import ApiKey
    from control_plane.auth.models import User
    from control_plane.db import make_engine, make_sessionmaker, utcnow
    from control_plane.org.service import create_organization
    from control_plane.project.models import Project
    from control_plane.security import hash_password, hash_token, new_api_key
    from shared.ids import new_id

    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine).begin() as db:
            email = f"outage-{secrets.token_hex(4)}@example.com"
            user = User(id=new_id("usr"), email=email, name="outage", password_hash=hash_password(PASSWORD),
                        email_verified_at=utcnow())
            db.add(user)
            db.flush()
            org = create_organization(db, "outage", user.id, plan="enterprise")
            project = Project(id=new_id("prj"), org_id=org.id, name="outage")
            db.add(project)
            db.flush()
            keys = []
            for kind, origins in (("secret", []), ("public", [ORIGIN])):
                raw = new_api_key(kind)
                db.add(ApiKey(id=new_id("key"), project_id=project.id, type=kind, name=kind, access="full",
                              allowed_origins=origins, prefix=raw[:12], key_hash=hash_token(raw)))
                keys.append(raw)
            return project.id, keys[0], keys[1], email
    finally:
        engine.dispose()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    _ensure_services()
    cleanup = contextlib.ExitStack()
    name = cleanup.enter_context(scratch_pg_database("shopsearch_outage"))
    prefix = f"outage:{secrets.token_hex(4)}:"
    db_proxy = TcpProxy(5432).start()
    redis_proxy = TcpProxy(int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(
        SHOPSEARCH_DATA_DIR=str(tmp_path / "data"),
        SHOPSEARCH_DATABASE_URL=f"postgresql+psycopg://postgres@127.0.0.1:{db_proxy.port}/{name}",
        SHOPSEARCH_DATABASE_CONNECT_TIMEOUT="2",
        SHOPSEARCH_REDIS_URL=f"redis://127.0.0.1:{redis_proxy.port}/0",
        SHOPSEARCH_REDIS_PREFIX=prefix,
        SHOPSEARCH_SECRET_KEY=secrets.token_urlsafe(32),
        SHOPSEARCH_LOG_LEVEL="WARNING",
    )
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port)], cwd=ROOT,
                                   env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/ready", timeout=1).status_code == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        project_id, secret, public, email = _make_shop(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}")
        yield Stack(base, db_proxy, redis_proxy, project_id, secret, public, email, prefix, log,
                    {"Authorization": f"Bearer {secret}"})
    finally:
        db_proxy.restore()
        redis_proxy.restore()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        db_proxy.close()
        redis_proxy.close()
        cleanup.close()
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = http.get(f"/v1/projects/{project_id}/tasks/{task_id}")
        if response.status_code == 200 and response.json()["status"] in ("succeeded", "failed", "canceled"):
            return response.json()  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"task {task_id} not finished: {response.status_code} {response.text}"
        time.sleep(0.1)


def create_index(http: httpx.Client, stack: Stack, name: str) -> str:
    response = http.post(f"/v1/projects/{stack.project_id}/indices", json={"name": name, "mapping": MAPPING})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def upload(http: httpx.Client, stack: Stack, index_id: str, docs: list[dict[str, Any]]) -> str:
    """Upload and wait until the documents are searchable; returns the task's id."""
    response = http.post(stack.index_url(index_id, "/documents"), json=docs)
    assert response.status_code == 202, response.text
    task_id = str(response.json()["taskId"])
    assert wait_task(http, stack.project_id, task_id)["status"] == "succeeded"
    return task_id


def assert_unavailable(response: httpx.Response, part: str) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == "UNAVAILABLE"
    assert [d["path"] for d in error["details"]] == [part]
