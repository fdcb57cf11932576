"""A stand-in for ``GET /v1/status`` (spec 4.12's body) on 127.0.0.1: the CLI's side of the route."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def status_body(indexing: str = "operational", search: str = "operational") -> dict[str, Any]:
    states = {"search": search, "indexing": indexing, "dashboard": "operational", "mcp": "operational"}
    order = ["operational", "degraded", "down"]
    return {
        "status": max(states.values(), key=order.index),
        "services": [{"name": name, "state": state} for name, state in states.items()],
        "checkedAt": "2026-11-24T08:00:00Z",
    }


@contextmanager
def status_server() -> Iterator[tuple[str, dict[str, Any]]]:
    """A server answering what ``answer`` holds: ``status`` (HTTP status) and ``body``; its URL."""
    answer: dict[str, Any] = {"status": 200, "body": status_body(), "paths": []}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            answer["paths"].append(self.path)
            payload = json.dumps(answer["body"]).encode()
            self.send_response(answer["status"] if self.path == "/v1/status" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answer
    finally:
        server.shutdown()
        server.server_close()
