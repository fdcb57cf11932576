"""``/mcp`` on the app, with the MCP SDK loaded at the first exchange instead of at startup.

The SDK and its protocol types are a fifth of the app's import time (~0.7 s of ~3.5 s per serving
process, on every start of every process); most processes never see an agent. The first exchange
(or the status page's check) imports :mod:`control_plane.mcp.server` in a worker thread, so the
event loop keeps answering meanwhile, and builds the endpoint once.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from control_plane.runtime import Runtime

if TYPE_CHECKING:
    from control_plane.mcp.server import MCPEndpoint


class LazyMCPEndpoint:
    """The ASGI app at ``/mcp``: the SDK's endpoint, built at the first call."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._endpoint: MCPEndpoint | None = None
        self._loading = threading.Lock()  # not an asyncio lock: tests drive one app from several loops

    async def endpoint(self) -> MCPEndpoint:
        endpoint = self._endpoint
        return endpoint if endpoint is not None else await asyncio.to_thread(self._build)

    def _build(self) -> MCPEndpoint:
        from control_plane.mcp import server  # lazy: see the module's docstring

        with self._loading:
            endpoint = self._endpoint
            if endpoint is None:
                endpoint = self._endpoint = server.MCPEndpoint(self.runtime, server.build_server(self.runtime))
            return endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (await self.endpoint())(scope, receive, send)

    async def answers(self) -> bool:
        """The status route's check (:meth:`control_plane.mcp.server.MCPEndpoint.answers`)."""
        return await (await self.endpoint()).answers()


def install_mcp(app: FastAPI) -> None:
    runtime: Runtime = app.state.runtime
    endpoint = LazyMCPEndpoint(runtime)
    runtime.mcp_check = endpoint.answers  # the status route's check
    # POST only: a stateless server has no stream to open with GET and no session to DELETE (405)
    app.router.routes.append(Route("/mcp", endpoint, methods=["POST"], include_in_schema=False))
