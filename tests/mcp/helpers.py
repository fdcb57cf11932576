"""A running app served over HTTP on 127.0.0.1, and MCP calls through the official SDK's client."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fixtures.server import serve_in_thread

serving = serve_in_thread  # ``app`` (already started) served by uvicorn on a free port: its base URL


def mcp_client(base_url: str, key: str | None, statuses: list[int] | None = None) -> Client:
    """The SDK's client; ``statuses`` (when given) gets every HTTP status it was answered (the SDK
    raises one error for any refusal, a 401 and a 500 alike)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    http = httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]})
    return Client(streamable_http_client(base_url + "/mcp", http_client=http))


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
