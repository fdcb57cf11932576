"""``shopsearch tasks``: list and wait for tasks (operators; direct database access)."""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cli.database import operator_sessions
from control_plane.task import service
from control_plane.task.models import Task
from shared.errors import ServiceError

app = typer.Typer(help="List and wait for tasks (operators).", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


def sessions() -> sessionmaker[Session]:
    return operator_sessions()


def fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(1)


@app.command("list")
def list_tasks(
    project_id: str = typer.Argument(..., help="Project id (prj_…)"),
    status: list[str] = typer.Option(None, "--status", help="Filter by status (repeatable)"),
    type_: list[str] = typer.Option(None, "--type", help="Filter by type (repeatable)"),
    index_id: str = typer.Option(None, "--index", help="Only this index's tasks"),
    limit: int = typer.Option(50, min=1, max=1000),
    as_json: bool = typer.Option(False, "--json", help="JSON output"),
) -> None:
    """The project's tasks, newest first."""
    try:
        with sessions()() as db:
            rows, _ = service.list_tasks(db, project_id, status=status or None, type=type_ or None,
                                         index_id=index_id, limit=limit)
            views = [service.task_view(t) for t in rows]
    except ServiceError as exc:
        fail(exc.message)
        return
    if as_json:
        typer.echo(json.dumps(views, indent=2))
        return
    table = Table("taskId", "indexId", "type", "status", "createdAt", "finishedAt", "details")
    for v in views:
        table.add_row(v["taskId"], v["indexId"], v["type"], v["status"], v["createdAt"] or "", v["finishedAt"] or "",
                      json.dumps(v["details"]))
    console.print(table)


def wait_for(task_id: str, timeout: float, label: str | None = None) -> dict[str, Any]:
    """Poll a task with a progress bar until it ends; exits 1 unless it succeeded."""
    factory = sessions()
    deadline = time.monotonic() + timeout
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeElapsedColumn(), console=err, transient=False) as progress:
        bar = progress.add_task(label or task_id, total=1.0)
        while True:
            with factory() as db:
                task = db.scalar(select(Task).where(Task.id == task_id))
                if task is None:
                    fail(f"task {task_id} not found")
                    raise AssertionError
                view = service.task_view(task)
            done = 1.0 if view["status"] in service.FINAL_STATUSES else float(view["details"].get("progress") or 0.0)
            progress.update(bar, completed=done, description=f"{label or task_id} [{view['status']}]")
            if view["status"] in service.FINAL_STATUSES:
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
    as_json: bool = typer.Option(False, "--json", help="Print the final task as JSON"),
) -> None:
    """Wait until a task ends (exit code 1 unless it succeeded)."""
    view = wait_for(task_id, timeout)
    if as_json:
        typer.echo(json.dumps(view, indent=2))
    else:
        console.print(f"{task_id} {view['status']}")
