"""Task routes (spec 4.4, CONTRACT §4)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Query
from pydantic.config import JsonDict

from control_plane.access.labels import ProjectRead
from control_plane.deps import SessionDep
from control_plane.task import service
from control_plane.task.schemas import TaskList, TaskOut
from control_plane.wire import Cursor, Limit, api_router

router = api_router(tags=["tasks"])


def _split(values: list[str] | None) -> list[str] | None:
    """Repeated and comma-separated values alike (``?status=a&status=b`` or ``?status=a,b``); an
    empty one is no value of the list (400), as the document's pattern says."""
    if not values:
        return None
    return [v.strip() for value in values for v in value.split(",")]


def _one_or_more(values: tuple[str, ...]) -> JsonDict:
    """The values of a filter, one or several joined by commas."""
    one = "(" + "|".join(re.escape(value) for value in values) + ")"
    return {"items": {"type": "string", "pattern": f"^{one}(,{one})*$"}}


@router.get("/projects/{project_id}/tasks", summary="List tasks (newest first)")
def list_tasks(
    access: ProjectRead,
    db: SessionDep,
    status: Annotated[list[str] | None, Query(description="enqueued, processing, succeeded, failed, canceled",
                                             json_schema_extra=_one_or_more(service.TASK_STATUSES))] = None,
    type: Annotated[list[str] | None, Query(description="Task types, e.g. documents.upsert",
                                           json_schema_extra=_one_or_more(service.TASK_TYPES))] = None,
    index_id: Annotated[str | None, Query(alias="indexId")] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> TaskList:
    rows, next_cursor = service.list_tasks(
        db, access.project_id, status=_split(status), type=_split(type), index_id=index_id,
        index_scope=access.index_scope, limit=limit, cursor=cursor,
    )
    return TaskList(items=[TaskOut.model_validate(t) for t in rows], next_cursor=next_cursor)


@router.get("/projects/{project_id}/tasks/{task_id}", summary="Get a task")
def get_task(task_id: str, access: ProjectRead, db: SessionDep) -> TaskOut:
    return TaskOut.model_validate(service.get_task(db, access.project_id, task_id, access.index_scope))
