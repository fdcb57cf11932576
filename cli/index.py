"""``shopsearch index``: operator commands on indices (direct database access)."""

from __future__ import annotations

import typer

from cli.database import operator_sessions
from cli.output import JsonOption, emit, failures
from cli.tasks import StallOption, wait_for
from control_plane.tenants import service as tenants

app = typer.Typer(help="Operate on indices (operators).", no_args_is_help=True)


@app.command("reindex")
def reindex(
    project_id: str = typer.Argument(..., help="Project id (prj_…)"),
    index_id: str = typer.Argument(..., help="Index id (idx_…)"),
    wait: bool = typer.Option(False, "--wait", help="Wait with a progress bar until the reindex ends"),
    timeout: float = typer.Option(3600.0, help="With --wait: give up after this many seconds"),
    stall_after: float = StallOption,
    as_json: JsonOption = False,
) -> None:
    """Rebuild every shard of an index from the stored documents (runs as a task)."""
    with failures(), operator_sessions() as sessions:
        with sessions.begin() as db:
            task_id = tenants.reindex(db, project_id, index_id).id
        if not wait:
            emit({"taskId": task_id}, as_json=as_json, human=task_id)
            return
        view = wait_for(sessions, task_id, timeout, label=f"reindex {index_id}", stall_after=stall_after)
    emit(view, as_json=as_json, human=f"{task_id} {view['status']}")
