"""The status states move when Redis, the database or the task runner stops, and back when it starts.

An API instance of its own (shards and task runner in-process) on a scratch PostgreSQL database,
with PostgreSQL and Redis reached through TCP proxies the test cuts; the machine's own servers keep
running. The shared answer lives 0.3 s here instead of 15 s, so each change shows up quickly.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from control_plane.app import create_app
from control_plane.migrate import upgrade
from control_plane.status import service
from tests.conftest import REDIS_URL, _ensure_services, make_settings
from tests.factories import runtime_of
from tests.fixtures.server import scratch_pg_database
from tests.index.helpers import create_index, make_tenant, products, upload
from tests.mcp.helpers import call_tool, serving
from tests.tcp_proxy import TcpProxy

CACHE_SECONDS = 0.3


@pytest.fixture(scope="module")
def stack(tmp_path_factory, mailbox) -> Iterator[tuple[TestClient, TcpProxy, TcpProxy, dict[str, str]]]:
    _ensure_services()
    with scratch_pg_database("shopsearch_status") as name, TcpProxy(5432) as db_proxy, \
            TcpProxy(int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])) as redis_proxy:
        prefix = f"sstest:{secrets.token_hex(4)}:"
        settings = make_settings(
            "postgres", tmp_path_factory.mktemp("status-outage"), mailbox,
            f"postgresql+psycopg://postgres@127.0.0.1:{db_proxy.port}/{name}",
            redis_url=f"redis://127.0.0.1:{redis_proxy.port}/0", redis_prefix=prefix,
        )
        upgrade(settings)
        app = create_app(settings)
        try:
            with TestClient(app) as client, serving(app) as base_url:
                tenant = make_tenant(app)  # an index for the search probe to query
                index_id = create_index(client, tenant)["id"]
                upload(client, tenant, index_id, products(5))
                yield client, db_proxy, redis_proxy, {"base": base_url, "key": tenant.key, "index": index_id}
        finally:
            direct = redis.Redis.from_url(REDIS_URL)
            for key in direct.scan_iter(f"{prefix}*"):
                direct.delete(key)


@pytest.fixture(autouse=True)
def short_cache(monkeypatch) -> None:
    monkeypatch.setattr(service, "CACHE_SECONDS", CACHE_SECONDS)


def _states(answer: dict[str, Any]) -> dict[str, str]:
    return {"status": answer["status"], **{s["name"]: s["state"] for s in answer["services"]}}


def _wait_for(client: TestClient, expected: dict[str, str], timeout: float = 30.0) -> dict[str, str]:
    """Ask until the answer holds ``expected``; every answer is 200 and fresh."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get("/v1/status")
        assert response.status_code == 200
        answer = response.json()
        checked = datetime.fromisoformat(answer["checkedAt"].replace("Z", "+00:00"))
        assert (datetime.now(UTC) - checked).total_seconds() <= CACHE_SECONDS + 1.0  # + the round trip
        states = _states(answer)
        if all(states[k] == v for k, v in expected.items()):
            return states
        assert time.monotonic() < deadline, f"still {states}, waiting for {expected}"
        time.sleep(0.1)


ALL_OPERATIONAL = {"status": "operational", "search": "operational", "indexing": "operational",
                   "dashboard": "operational", "mcp": "operational"}


def test_redis_stopped_degrades_and_recovers(stack):
    client, _db, redis_proxy, _mcp = stack
    _wait_for(client, ALL_OPERATIONAL)
    assert runtime_of(client.app).status.probe_target[1]  # type: ignore[index] is not None  # the probe queries the index
    redis_proxy.cut()
    try:
        # no answer cache for search, sign-in checks fall back to the database: slower, still working
        states = _wait_for(client, {"status": "degraded", "search": "degraded", "dashboard": "degraded"})
        assert states["indexing"] == states["mcp"] == "operational"
    finally:
        redis_proxy.restore()
    _wait_for(client, ALL_OPERATIONAL)  # Redis is tried again within 8 s


def test_database_stopped_is_down_and_recovers(stack):
    client, db_proxy, _redis, mcp = stack
    _wait_for(client, ALL_OPERATIONAL)
    assert not asyncio.run(call_tool(mcp["base"], mcp["key"], "list_indices", {}))[0]  # the key is known now
    db_proxy.cut()
    try:
        states = _wait_for(client, {"status": "down", "dashboard": "down", "indexing": "down"})
        # search keeps answering from the shards (the probe's index is remembered); MCP's tools need the database
        assert states["search"] == "operational" and states["mcp"] == "degraded"
        error, text = asyncio.run(call_tool(mcp["base"], mcp["key"], "get_document",
                                            {"index_id": mcp["index"], "document_id": "p1"}))
        assert error and text.startswith("UNAVAILABLE"), text
    finally:
        db_proxy.restore()
    _wait_for(client, ALL_OPERATIONAL)
    error, document = asyncio.run(call_tool(mcp["base"], mcp["key"], "get_document",
                                            {"index_id": mcp["index"], "document_id": "p1"}))
    assert not error and document["id"] == "p1"


def test_task_runner_stopped_is_down_and_recovers(stack):
    client, _db, _redis, _mcp = stack
    runner = runtime_of(client.app).task_runner
    _wait_for(client, ALL_OPERATIONAL)
    runner.stop()
    try:
        states = _wait_for(client, {"status": "down", "indexing": "down"})
        assert states["search"] == states["dashboard"] == states["mcp"] == "operational"
    finally:
        runner.start()
    _wait_for(client, ALL_OPERATIONAL)
