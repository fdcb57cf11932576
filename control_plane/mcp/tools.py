"""What the MCP tools do, for one secret key: the same services and access rules as the REST routes.

Every function takes the caller's :class:`~control_plane.access.Principal` (a secret key) and goes
through :func:`~control_plane.access.project_access` with the key's own project: an index outside
the key's scope is "not found", a write with a read key is "forbidden". Failures are the services'
:class:`~shared.errors.ServiceError`\\ s; :mod:`.server` turns them into tool errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy.orm import Session

from control_plane.access.caller import Principal
from control_plane.access.tenancy import project_access
from control_plane.db import session_scope
from control_plane.document import service as documents
from control_plane.door import service as door
from control_plane.errors import validation_details
from control_plane.index import service as indices
from control_plane.index.schemas import IndexOut
from control_plane.runtime import Runtime
from control_plane.search.profile_query import SearchRequest
from control_plane.suggestion.schemas import SuggestRequest
from control_plane.task import service as tasks
from control_plane.task.schemas import TaskOut
from shared.errors import ErrorCode, ServiceError, validation

MAX_LIST = 100


def _project(principal: Principal) -> str:
    assert principal.key is not None
    return principal.key.project_id


@contextlib.contextmanager
def _transaction(runtime: Runtime) -> Iterator[Session]:
    """One transaction per tool call, committed before the answer (hooks after the commit run)."""
    yield from session_scope(runtime.sessions)


def list_indices(runtime: Runtime, principal: Principal, limit: int, cursor: str | None) -> dict[str, Any]:
    if not 1 <= limit <= MAX_LIST:
        raise validation(f"limit must be between 1 and {MAX_LIST}", [{"path": "limit", "message": "out of range"}])
    with _transaction(runtime) as db:
        access = project_access(db, principal, _project(principal), write=False)
        rows, next_cursor = indices.list_indices(db, access, limit, cursor)
        items = [IndexOut.model_validate(row).model_dump(mode="json", by_alias=True) for row in rows]
    return {"items": items, "nextCursor": next_cursor}


def search_request(arguments: dict[str, Any]) -> SearchRequest:
    try:
        return SearchRequest.model_validate({k: v for k, v in arguments.items() if v is not None})
    except ValidationError as exc:
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "The search is not valid",
                           validation_details([dict(e) for e in exc.errors()])) from exc


async def search(runtime: Runtime, principal: Principal, index_id: str, body: SearchRequest,
                 client_ip: str) -> dict[str, Any]:
    """The secret route's search, through the same door (saved profile, inline one or defaults)."""
    answer = await door.index_search(runtime, door.Caller.of(principal, client_ip), _project(principal), index_id,
                                     body, source="mcp")
    return orjson.loads(answer)  # type: ignore[no-any-return]


def suggest_request(q: str, limit: int | None) -> SuggestRequest:
    try:
        return SuggestRequest.model_validate({"q": q, "limit": limit})
    except ValidationError as exc:
        raise ServiceError(ErrorCode.VALIDATION_ERROR, "The suggest request is not valid",
                           validation_details([dict(e) for e in exc.errors()])) from exc


async def suggest(runtime: Runtime, principal: Principal, index_id: str, body: SuggestRequest,
                  client_ip: str) -> dict[str, Any]:
    """The suggest-by-index route's answer (suggestions, and products when configured)."""
    answer = await door.index_suggest(runtime, door.Caller.of(principal, client_ip), _project(principal), index_id,
                                      body, source="mcp")
    return orjson.loads(answer)  # type: ignore[no-any-return]


def get_document(runtime: Runtime, principal: Principal, index_id: str, document_id: str) -> dict[str, Any]:
    with _transaction(runtime) as db:
        access = project_access(db, principal, _project(principal), write=False)
        index = indices.get_index(db, access, index_id)
        return documents.get_document(db, index, document_id)


def get_task(runtime: Runtime, principal: Principal, task_id: str) -> dict[str, Any]:
    with _transaction(runtime) as db:
        access = project_access(db, principal, _project(principal), write=False)
        task = tasks.get_task(db, access.project_id, task_id, access.index_scope)
        return TaskOut.model_validate(task).model_dump(mode="json", by_alias=True)


def upload_documents(runtime: Runtime, principal: Principal, index_id: str, items: list[Any]) -> dict[str, Any]:
    with _transaction(runtime) as db:
        access = project_access(db, principal, _project(principal), write=True)
        index = indices.get_index(db, access, index_id)
        task = documents.upload_documents(db, index, items, max_bytes=runtime.settings.max_document_bytes)
        return {"taskId": task.id}


def delete_documents(runtime: Runtime, principal: Principal, index_id: str, ids: list[Any]) -> dict[str, Any]:
    with _transaction(runtime) as db:
        access = project_access(db, principal, _project(principal), write=True)
        index = indices.get_index(db, access, index_id)
        task = documents.delete_documents(db, index, ids)
        return {"taskId": task.id}
