"""``shopsearch tasks``: list and wait for tasks (operators; direct database access)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import typer
from sqlalchemy.orm import Session, sessionmaker

from cli.database import operator_sessions
from cli.output import JsonOption, emit, fail, failures, progress, table
from control_plane.db import utcnow
from control_plane.project import service as projects
from control_plane.task import service
from control_plane.task.heartbeats import LIVE_SECONDS, live_runners
from control_plane.task.schemas import TaskOut

# A task still enqueued this long: say whether any task runner is at work (the in-process runner of
# ``serve`` claims a task within a fraction of a second when it is free).
STALL_SECONDS = 10.0
StallOption = typer.Option(STALL_SECONDS, "--stall-after", min=0.5,
                           help="Say so when the task is still enqueued after this many seconds")

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
        if not projects.exists(db, project_id):
            fail(f"project {project_id} not found")
        rows, _ = service.list_tasks(db, project_id, status=status or None, type=type_ or None,
                                     index_id=index_id, limit=limit)
        views = [TaskOut.model_validate(t).model_dump(by_alias=True) for t in rows]
    human = table(
        "taskId", "status", "type", "indexId", "details", "createdAt", "finishedAt",
        rows=([v["taskId"], v["status"], v["type"], v["indexId"], _details(v["details"]), v["createdAt"] or "",
               v["finishedAt"] or ""] for v in views),
        ids=("taskId",), keep=("status",),
    )
    emit(views, as_json=as_json, human=human)


def _details(details: dict[str, Any] | None) -> str:
    """A task's counts as words (``received 1000, indexed 1000``); nested parts as compact JSON."""
    parts = []
    for key, value in (details or {}).items():
        shown = value if isinstance(value, str | int | float | bool) or value is None else json.dumps(value)
        parts.append(f"{key} {shown}")
    return ", ".join(parts)


def _aware(at: datetime) -> datetime:
    """SQLite hands back naive datetimes (stored as UTC)."""
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def stall_message(db: Session, task_id: str, waited: float) -> str:
    """Why a task may still be enqueued: no runner alive (heartbeats), every one busy, or none taking it."""
    live, busy = live_runners(db), service.busy_runners(db)
    head = f"[yellow]task {task_id} is still enqueued after {waited:.0f}s"
    if not live:
        return (f"{head} and no task runner is running (none sent a heartbeat in the last "
                f"{LIVE_SECONDS:.0f}s): start `shopsearch serve` on this database (with "
                f"SHOPSEARCH_RUN_TASK_RUNNER=true) or a `shopsearch worker`. Still waiting …[/]")
    if busy >= live:
        return f"{head}: {live} task runner(s) alive, all busy with other tasks; it starts when one is free[/]"
    return (f"{head}: {live} task runner(s) alive, {busy} busy, none has taken it yet (a task waits for "
            f"earlier tasks of its index; a runner may be paused or unable to reach the shards)[/]")


def wait_for(sessions: sessionmaker[Session], task_id: str, timeout: float, label: str | None = None,
             stall_after: float = STALL_SECONDS) -> dict[str, Any]:
    """Poll a task with a progress bar until it ends; exits 1 unless it succeeded. Says so once when
    the task stays enqueued past ``stall_after`` seconds (no task runner picking tasks up)."""
    started = time.monotonic()
    deadline = started + timeout
    stalled_said = False
    with sessions() as db:
        if service.find_task_any_project(db, task_id) is None:  # before the bar: an unknown id is one line
            fail(f"task {task_id} not found")
    with progress() as bar_set:
        bar = bar_set.add_task(label or task_id, total=1.0)
        while True:
            with sessions() as db:
                task = service.find_task_any_project(db, task_id)
                if task is None:
                    fail(f"task {task_id} not found")
                view = TaskOut.model_validate(task).model_dump(by_alias=True)
                waited = max(time.monotonic() - started, (utcnow() - _aware(task.created_at)).total_seconds())
                if view["status"] == "enqueued" and waited > stall_after and not stalled_said:
                    stalled_said = True
                    bar_set.console.print(stall_message(db, task_id, waited), soft_wrap=True)
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
    stall_after: float = StallOption,
    as_json: JsonOption = False,
) -> None:
    """Wait until a task ends (exit code 1 unless it succeeded); prints the final task.

    When the task is still enqueued after --stall-after seconds, says whether any task runner is at work.
    """
    with failures(), operator_sessions() as sessions:
        view = wait_for(sessions, task_id, timeout, stall_after=stall_after)
    emit(view, as_json=as_json, human=f"{task_id} {view['status']}")
