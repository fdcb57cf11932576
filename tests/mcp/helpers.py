"""A running app served over HTTP on 127.0.0.1, and MCP calls through the official SDK's client."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` (already started: its lifespan is not run again) served by uvicorn on a free port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def mcp_client(base_url: str, key: str | None) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(base_url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=30)))


async def call_tool(base_url: str, key: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, the JSON answer or the error text)."""
    async with mcp_client(base_url, key) as client:
        result = await client.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text.removeprefix(f"Error executing tool {tool}: ")
    answer = result.structured_content if result.structured_content is not None else json.loads(text)
    if isinstance(answer, dict) and set(answer) == {"result"}:  # the SDK wraps some outputs
        return False, answer["result"]
    return False, answer
