"""``shopsearch index``: operator commands on indices (direct database access)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from sqlalchemy import select

from cli.tasks import fail, sessions, wait_for
from control_plane.index import service
from control_plane.index.models import Index
from shared.errors import ServiceError

app = typer.Typer(help="Operate on indices (operators).", no_args_is_help=True)
console = Console()


@app.command("reindex")
def reindex(
    project_id: str = typer.Argument(..., help="Project id (prj_…)"),
    index_id: str = typer.Argument(..., help="Index id (idx_…)"),
    wait: bool = typer.Option(False, "--wait", help="Wait with a progress bar until the reindex ends"),
    timeout: float = typer.Option(3600.0, help="With --wait: give up after this many seconds"),
    as_json: bool = typer.Option(False, "--json", help="JSON output"),
) -> None:
    """Rebuild every shard of an index from the stored documents (runs as a task)."""
    try:
        with sessions().begin() as db:
            index = db.scalar(select(Index).where(Index.id == index_id, Index.project_id == project_id))
            if index is None:
                fail(f"index {index_id} not found in project {project_id}")
                raise AssertionError
            task_id = service.reindex(db, index).id
    except ServiceError as exc:
        fail(exc.message)
        return
    if not wait:
        typer.echo(json.dumps({"taskId": task_id}) if as_json else task_id)
        return
    view = wait_for(task_id, timeout, label=f"reindex {index_id}")
    typer.echo(json.dumps(view, indent=2) if as_json else f"{task_id} {view['status']}")
