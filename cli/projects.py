"""``shopsearch projects``: the project ids other operator commands take (``tasks list``, ``index``)."""

from __future__ import annotations

import typer

from cli.database import transaction
from cli.output import JsonOption, emit, failures, table
from control_plane.tenants import service as tenant_service

app = typer.Typer(help="List projects (operators).", no_args_is_help=True)


@app.command("list")
def list_projects(
    org_id: str = typer.Option(None, "--org", help="Only this organization's projects (org_…)"),
    as_json: JsonOption = False,
) -> None:
    """Every project, oldest first, with its organization."""
    with failures(), transaction() as db:
        rows = tenant_service.list_projects(db, org_id)
    human = table(
        "Project ID", "Org ID", "Name", "Created",
        rows=([row["id"], row["orgId"], row["name"], row["createdAt"][:10]] for row in rows),
        ids=("Project ID", "Org ID"), title="Projects",
    )
    emit(rows, as_json=as_json, human=human)
