"""Task routes (spec 4.4, CONTRACT §4)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from control_plane.access import ProjectRead
from control_plane.deps import SessionDep
from control_plane.task import service
from control_plane.wire import Cursor, Limit

router = APIRouter(tags=["tasks"])


class TaskError(BaseModel):
    code: str
    message: str


class TaskOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    project_id: str = Field(alias="projectId")
    index_id: str = Field(alias="indexId")
    type: str
    status: str
    created_at: str = Field(alias="createdAt")
    started_at: str | None = Field(alias="startedAt")
    finished_at: str | None = Field(alias="finishedAt")
    details: dict[str, Any]
    error: TaskError | None


class TaskList(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    items: list[TaskOut]
    next_cursor: str | None = Field(alias="nextCursor")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return out or None


@router.get("/projects/{project_id}/tasks", summary="List tasks (newest first)", response_model=TaskList)
def list_tasks(
    access: ProjectRead,
    db: SessionDep,
    status: Annotated[list[str] | None, Query(description="enqueued, processing, succeeded, failed, canceled")] = None,
    type: Annotated[list[str] | None, Query(description="Task types, e.g. documents.upsert")] = None,
    index_id: Annotated[str | None, Query(alias="indexId")] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> Any:
    rows, next_cursor = service.list_tasks(
        db, access.project_id, status=_split(status), type=_split(type), index_id=index_id,
        index_scope=access.index_scope, limit=limit, cursor=cursor,
    )
    return {"items": [service.task_view(t) for t in rows], "nextCursor": next_cursor}


@router.get("/projects/{project_id}/tasks/{task_id}", summary="Get a task", response_model=TaskOut)
def get_task(task_id: str, access: ProjectRead, db: SessionDep) -> Any:
    return service.task_view(service.get_task(db, access.project_id, task_id, access.index_scope))
