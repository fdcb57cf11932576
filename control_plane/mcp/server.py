"""``/mcp``: the Model Context Protocol for AI agents (spec 4.11, CONTRACT §7), on the official SDK.

Streamable HTTP, stateless, JSON answers: each POST is one exchange, so any API instance answers any
call. The caller authenticates with ``Authorization: Bearer <secret key>`` (401 without a valid
one, 403 for a public key or a cabinet session); the key's project, index scope and access (read or
full) then bound every tool, as on the REST routes (:mod:`.tools`). A read key is not offered the
write tools. A tool's failure is a tool error (``isError``), never a broken exchange: arguments of
the wrong shape are refused by the SDK's validation of the tool's signature; what the services
refuse (unknown ids, too little access, invalid filters) reads ``<API error code>: <message>``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import httpx
from anyio import to_thread
from fastapi import Request
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import Tool, ToolAnnotations
from pydantic import Field
from starlette.types import Receive, Scope, Send

from control_plane.access.caller import Principal
from control_plane.access.labels import request_principal
from control_plane.deps import client_ip
from control_plane.errors import error_response
from control_plane.mcp import tools
from control_plane.outages import unavailable, unavailable_part
from control_plane.runtime import Runtime
from shared.errors import ServiceError, forbidden, validation
from shared.jsonvalue import json_problem

T = TypeVar("T")
WRITE_TOOLS = frozenset({"upload_documents", "delete_documents"})
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
MAX_ARGUMENT_DEPTH = 10_000  # as REST bodies (control_plane.wire)

IndexId = Annotated[str, Field(min_length=1, max_length=40, description="The index id (idx_…), from list_indices")]


@dataclass(frozen=True)
class Caller:
    principal: Principal
    ip: str

    @property
    def full(self) -> bool:
        return self.principal.key is not None and self.principal.key.access == "full"


_caller: ContextVar[Caller | None] = ContextVar("mcp_caller", default=None)


def _current() -> Caller:
    caller = _caller.get()
    if caller is None:  # only reachable when the server is called without the endpoint
        raise ToolError("UNAUTHENTICATED: a secret key is needed")
    return caller


def _tool_error(exc: ServiceError) -> ToolError:
    text = f"{exc.code.value}: {exc.message}"
    if exc.details:
        text += " " + "; ".join(f"{d.get('path', '')}: {d.get('message', '')}" for d in exc.details)
    return ToolError(text)


async def _run(fn: Callable[..., T], *args: Any) -> T:
    try:
        return await to_thread.run_sync(fn, *args)
    except ServiceError as exc:
        raise _tool_error(exc) from None
    except Exception as exc:
        part = unavailable_part(exc)  # the database or Redis is unreachable: say so, as the routes do
        if part is None:
            raise
        raise _tool_error(unavailable(part)) from None


def _unavailable(exc: Exception) -> ServiceError:
    part = unavailable_part(exc)
    if part is None:
        raise exc
    return unavailable(part)


class ShopsearchMCP(MCPServer):
    """The tools a caller may use: a read key is not offered the write tools."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """The JSON checks of every REST body first: an integer outside 64 bits, NaN or an infinity
        (``1e999``) is refused naming its path, before any tool counts or runs anything."""
        problem = json_problem(arguments, MAX_ARGUMENT_DEPTH)
        if problem is not None:
            raise _tool_error(validation("The arguments hold a number that cannot be stored", [problem]))
        return await super().call_tool(name, arguments, context)

    async def list_tools(self) -> list[Tool]:
        listed = await super().list_tools()
        caller = _caller.get()
        if caller is None or caller.full:
            return listed
        return [tool for tool in listed if tool.name not in WRITE_TOOLS]


def build_server(runtime: Runtime) -> ShopsearchMCP:
    server = ShopsearchMCP(
        name="shopsearch",
        instructions="Search a shop's product indices: list_indices first, then search, suggest, get_document, "
        "get_task; with a full-access key also upload_documents and delete_documents (they answer a "
        "taskId to poll with get_task).",
    )

    @server.tool(annotations=READ_ONLY)
    async def list_indices(
        limit: Annotated[int, Field(ge=1, le=tools.MAX_LIST)] = 20,
        cursor: Annotated[str | None, Field(max_length=500)] = None,
    ) -> dict[str, Any]:
        """The indices this key may see: {"items": [...], "nextCursor": ...}."""
        caller = _current()
        return await _run(tools.list_indices, runtime, caller.principal, limit, cursor)

    @server.tool(annotations=READ_ONLY)
    async def search(
        index_id: IndexId,
        q: Annotated[str, Field(description="The shopper's query; empty lists everything")] = "",
        filters: Annotated[dict[str, Any] | None, Field(
            description='Filter expression, e.g. {"brand": "Apple", "price": {"lt": 500}, "or": [...]}')] = None,
        facets: Annotated[list[str] | None, Field(description="Fields to count values of")] = None,
        sort: Annotated[str | None, Field(description="A sort option key of the profile")] = None,
        page: int = 1,
        per_page: int | None = None,
        profile_key: Annotated[str | None, Field(description="A saved search profile of the index")] = None,
        near: Annotated[dict[str, float] | None, Field(
            description='{"lat": ..., "lng": ...}: the point a sort option FIELD:near orders by distance from')] = None,
        similar_to: Annotated[str | None, Field(
            description="A document id: rank by its vector, leaving it out of the hits (q must be empty)")] = None,
    ) -> dict[str, Any]:
        """Search an index as the REST search route does: hits, total, facets, paging."""
        caller = _current()
        arguments = {"q": q, "filters": filters, "facets": facets, "sort": sort, "page": page,
                     "perPage": per_page, "profileKey": profile_key, "near": near,
                     "similarTo": similar_to}
        try:
            body = tools.search_request(arguments)
            return await tools.search(runtime, caller.principal, index_id, body, caller.ip)
        except ServiceError as exc:
            raise _tool_error(exc) from None
        except Exception as exc:
            raise _tool_error(_unavailable(exc)) from None

    @server.tool(annotations=READ_ONLY)
    async def suggest(
        index_id: IndexId,
        q: Annotated[str, Field(description="What the shopper has typed so far")],
        limit: Annotated[int | None, Field(description="At most this many suggestions (1-20)")] = None,
    ) -> dict[str, Any]:
        """Autocomplete suggestions for what a shopper types (and products, when the index's settings add them)."""
        caller = _current()
        try:
            body = tools.suggest_request(q, limit)
            return await tools.suggest(runtime, caller.principal, index_id, body, caller.ip)
        except ServiceError as exc:
            raise _tool_error(exc) from None
        except Exception as exc:
            raise _tool_error(_unavailable(exc)) from None

    @server.tool(annotations=READ_ONLY)
    async def get_document(
        index_id: IndexId,
        document_id: Annotated[str, Field(min_length=1, max_length=512)],
    ) -> dict[str, Any]:
        """One stored document, as uploaded."""
        caller = _current()
        return await _run(tools.get_document, runtime, caller.principal, index_id, document_id)

    @server.tool(annotations=READ_ONLY)
    async def get_task(task_id: Annotated[str, Field(min_length=1, max_length=40)]) -> dict[str, Any]:
        """A task (upload, delete, reindex …): its status, progress and error."""
        caller = _current()
        return await _run(tools.get_task, runtime, caller.principal, task_id)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    async def upload_documents(
        index_id: IndexId,
        documents: Annotated[list[Any], Field(min_length=1, description="At most 1000 documents, each with its id field")],
    ) -> dict[str, Any]:
        """Add or replace documents (full-access key); answers {"taskId"} to poll with get_task."""
        caller = _current()
        return await _run(tools.upload_documents, runtime, caller.principal, index_id, documents)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    async def delete_documents(
        index_id: IndexId,
        ids: Annotated[list[Any], Field(min_length=1, description="Ids of the documents to delete")],
    ) -> dict[str, Any]:
        """Delete documents by id (full-access key); answers {"taskId"} to poll with get_task."""
        caller = _current()
        return await _run(tools.delete_documents, runtime, caller.principal, index_id, ids)

    return server


class MCPEndpoint:
    """The ASGI app at ``/mcp``: authenticates, then hands the exchange to the SDK's transport.

    Stateless exchanges need no session kept between requests, so each request runs in a session
    manager of its own (its task group lives as long as the request): nothing to start with the app.
    """

    def __init__(self, runtime: Runtime, server: ShopsearchMCP) -> None:
        self.runtime = runtime
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            principal = await request_principal(self.runtime, request)
            if principal.kind != "secret_key" or principal.key is None:
                raise forbidden("MCP needs a secret key")
        except Exception as exc:
            error = exc if isinstance(exc, ServiceError) else _unavailable(exc)
            await error_response(error)(scope, receive, send)
            return
        token = _caller.set(Caller(principal, client_ip(request)))
        try:
            await self._exchange(scope, receive, send)
        finally:
            _caller.reset(token)

    async def _exchange(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the SDK's low-level server: what its own streamable_http_app hands its session manager
        manager = StreamableHTTPSessionManager(app=self.server._lowlevel_server, stateless=True, json_response=True)
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    async def answers(self) -> bool:
        """The status route's check: a ``tools/list`` exchange through the SDK's HTTP transport
        (in-process, past the key check) answers the tools."""
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self._exchange), base_url="http://status") as client:
            response = await client.post("/mcp", json=message, headers=headers)
        return response.status_code == 200 and bool(response.json().get("result", {}).get("tools"))
