"""``shopsearch tasks``: list and wait for tasks (operators; direct database access)."""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from sqlalchemy.orm import Session, sessionmaker

from cli.database import operator_sessions
from cli.output import JsonOption, emit, fail, failures, progress, table
from control_plane.task import service
from control_plane.task.repository import find_task_any_project
from control_plane.task.schemas import TaskOut

app = typer.Typer(help="List and wait for tasks (operators).", no_args_is_help=True)


@app.command("list")
def list_tasks(
    project_id: str = typer.Argument(..., help="Project id (prj_…)"),
    status: list[str] = typer.Option(None, "--status", help="Filter by status (repeatable)"),
    type_: list[str] = typer.Option(None, "--type", help="Filter by type (repeatable)"),
    index_id: str = typer.Option(None, "--index", help="Only this index's tasks"),
    limit: int = typer.Option(50, min=1, max=1000),
    as_json: JsonOption = False,
) -> None:
    """The project's tasks, newest first."""
    with failures(), operator_sessions() as sessions, sessions() as db:
        rows, _ = service.list_tasks(db, project_id, status=status or None, type=type_ or None,
                                     index_id=index_id, limit=limit)
        views = [TaskOut.model_validate(t).model_dump(by_alias=True) for t in rows]
    human = table(
        "taskId", "indexId", "type", "status", "createdAt", "finishedAt", "details",
        rows=([v["taskId"], v["indexId"], v["type"], v["status"], v["createdAt"] or "", v["finishedAt"] or "",
               json.dumps(v["details"])] for v in views),
        ids=("taskId", "indexId"),
    )
    emit(views, as_json=as_json, human=human)


def wait_for(sessions: sessionmaker[Session], task_id: str, timeout: float, label: str | None = None) -> dict[str, Any]:
    """Poll a task with a progress bar until it ends; exits 1 unless it succeeded."""
    deadline = time.monotonic() + timeout
    with progress() as bar_set:
        bar = bar_set.add_task(label or task_id, total=1.0)
        while True:
            with sessions() as db:
                task = find_task_any_project(db, task_id)
                if task is None:
                    fail(f"task {task_id} not found")
                view = TaskOut.model_validate(task).model_dump(by_alias=True)
            final = view["status"] in service.FINAL_STATUSES
            done = 1.0 if final else float(view["details"].get("progress") or 0.0)
            bar_set.update(bar, completed=done, description=f"{label or task_id} [{view['status']}]")
            if final:
                break
            if time.monotonic() > deadline:
                fail(f"task {task_id} still {view['status']} after {timeout:.0f}s")
            time.sleep(0.2)
    if view["status"] != "succeeded":
        error = view.get("error") or {}
        fail(f"task {task_id} {view['status']}: {error.get('message', '')}")
    return view


@app.command("wait")
def wait(
    task_id: str = typer.Argument(..., help="Task id (tsk_…)"),
    timeout: float = typer.Option(3600.0, help="Give up after this many seconds"),
    as_json: JsonOption = False,
) -> None:
    """Wait until a task ends (exit code 1 unless it succeeded); prints the final task."""
    with failures(), operator_sessions() as sessions:
        view = wait_for(sessions, task_id, timeout)
    emit(view, as_json=as_json, human=f"{task_id} {view['status']}")
