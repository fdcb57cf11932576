"""A real ``shopsearch serve`` (benchmarks.common.running_server) and a shop on it, for the client tests."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import _ensure_services
from tests.fixtures.server import Server, running_server
from tests.fixtures.tenants import make_tenant

ORIGIN = "https://shop.example"
MAPPING: dict[str, Any] = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True, "suggest": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
    },
}
FEED = [{"sku": f"f{i}", "title": f"Feed kettle {i}", "price": 10.0 + i} for i in range(3)]


@dataclass
class Shop:
    server: Server
    project_id: str
    key: str
    public_key: str

    @property
    def base(self) -> str:
        return self.server.base


def serve(backend: str, **env: str) -> Any:
    """``shopsearch serve`` on SQLite (embedded default) or PostgreSQL + Redis."""
    if backend == "postgres":
        _ensure_services()
    return running_server(postgres=backend == "postgres", redis=backend == "postgres", extra_env=env)


def free_plan_shop(server: Server) -> dict[str, Any]:
    """A tenant on the free plan (10 searches a second) from ``shopsearch tenants create``."""
    output = server.cli("tenants", "create", "--email", f"free-{secrets.token_hex(4)}@shop.test", "--password",
                        "a long password", "--org", "free", "--project", "free", "--verified", "--plan", "free",
                        "--with-key", "full", "--json")
    return json.loads(output)  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shop(request: pytest.FixtureRequest, feed_url: str) -> Iterator[Shop]:
    with serve(request.param, SHOPSEARCH_FEED_ALLOW_PRIVATE_HOSTS="true") as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        assert tenant.public_key is not None
        yield Shop(server, tenant.project_id, tenant.key, tenant.public_key)


class _Feed(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        data = json.dumps(FEED).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def feed_url() -> Iterator[str]:
    """A product feed on 127.0.0.1 (the server under test may fetch loopback feeds)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Feed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/feed.json"
    server.shutdown()
