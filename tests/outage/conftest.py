"""A real ``shopsearch serve`` whose PostgreSQL and Redis connections pass through proxies the test cuts.

The machine's own PostgreSQL and Redis keep running; only the proxies in between are cut.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REDIS_URL, _ensure_services
from tests.fixtures import tasks
from tests.fixtures.server import clean_env, drop_redis_prefix, scratch_pg_database, serve_process
from tests.fixtures.tenants import make_tenant
from tests.tcp_proxy import TcpProxy

ORIGIN = "https://shop.example"
CONNECT_TIMEOUT_S = 2  # the stack's SHOPSEARCH_DATABASE_CONNECT_TIMEOUT
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


def _make_shop(database_url: str) -> tuple[str, str, str, str]:
    """A verified user owning an enterprise organization, a project, a full secret key and a public key."""
    tenant = make_tenant(database_url, [ORIGIN], name="outage", password=PASSWORD, verified=True)
    assert tenant.public_key is not None
    return tenant.project_id, tenant.key, tenant.public_key, tenant.email



@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    _ensure_services()
    prefix = f"outage:{secrets.token_hex(4)}:"
    with contextlib.ExitStack() as cleanup:  # undone in reverse: server, proxies, database, keys
        cleanup.callback(drop_redis_prefix, prefix)
        name = cleanup.enter_context(scratch_pg_database("shopsearch_outage"))
        db_proxy = cleanup.enter_context(TcpProxy(5432))
        redis_proxy = cleanup.enter_context(TcpProxy(int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])))
        env = clean_env(
            SHOPSEARCH_DATA_DIR=str(tmp_path / "data"),
            SHOPSEARCH_DATABASE_URL=f"postgresql+psycopg://postgres@127.0.0.1:{db_proxy.port}/{name}",
            SHOPSEARCH_DATABASE_CONNECT_TIMEOUT=str(CONNECT_TIMEOUT_S),
            SHOPSEARCH_REDIS_URL=f"redis://127.0.0.1:{redis_proxy.port}/0",
            SHOPSEARCH_REDIS_PREFIX=prefix,
            SHOPSEARCH_SECRET_KEY=secrets.token_urlsafe(32),
            SHOPSEARCH_LOG_LEVEL="WARNING",
        )
        log = tmp_path / "serve.log"
        base, _process = cleanup.enter_context(serve_process(env, log=log, ready_timeout=60, grace=20))
        cleanup.callback(redis_proxy.restore)  # the server stops cleanly with its dependencies back
        cleanup.callback(db_proxy.restore)
        project_id, secret, public, email = _make_shop(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}")
        yield Stack(base, db_proxy, redis_proxy, project_id, secret, public, email, prefix, log,
                    {"Authorization": f"Bearer {secret}"})


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 30) -> dict[str, Any]:
    return tasks.wait_task(http, project_id, task_id, timeout, pause=0.1)


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
