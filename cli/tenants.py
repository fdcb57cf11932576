"""``shopsearch tenants``: create and inspect tenants (operators; direct database access)."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session

from cli.database import transaction
from control_plane.org import tenants as tenant_service
from shared.errors import ServiceError

app = typer.Typer(help="Create and inspect tenants (operators).", no_args_is_help=True)
console = Console()

T = TypeVar("T")


class KeyAccess(StrEnum):
    full = "full"
    read = "read"


def _run(work: Callable[[Session], T]) -> T:
    """Runs ``work`` in one transaction; a failure prints a clear message and exits with 1."""
    try:
        with transaction() as db:
            return work(db)
    except ServiceError as exc:
        message = exc.message
        if exc.details:
            message += " (" + "; ".join(f"{d['path']}: {d['message']}" for d in exc.details) + ")"
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(1) from exc
    except Exception as exc:  # noqa: BLE001 - an operator gets one line, not a traceback
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from exc


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


@app.command("create")
def create(
    email: str = typer.Option(..., "--email", help="Email of the new user (the organization's owner)"),
    password: str = typer.Option(..., "--password", help="Password, at least 10 characters"),
    org: str = typer.Option(..., "--org", help="Organization name"),
    project: str = typer.Option(..., "--project", help="Project name"),
    verified: bool = typer.Option(False, "--verified", help="Mark the email as confirmed"),
    with_key: KeyAccess | None = typer.Option(None, "--with-key", help="Also create a secret key: full or read"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Create a user, an organization they own, a project and optionally a secret key."""
    created = _run(
        lambda db: tenant_service.create_tenant(
            db,
            email=email,
            password=password,
            org_name=org,
            project_name=project,
            verified=verified,
            key_access=with_key.value if with_key else None,
        )
    )
    if as_json:
        _print_json(created.as_dict())
        return
    table = Table(title="Tenant created", show_header=False)
    for name, value in created.as_dict().items():
        table.add_row(name, str(value))
    console.print(table)
    if created.key:
        console.print("[yellow]The key is shown only now; store it safely.[/yellow]")


@app.command("list")
def list_tenants(as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """List every organization with its owners and counts."""
    rows = _run(tenant_service.list_tenants)
    if as_json:
        _print_json({"items": rows})
        return
    table = Table(title="Organizations")
    table.add_column("ID", no_wrap=True)
    for column in ("Name", "Plan", "Owners", "Members", "Projects", "Created"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["id"], row["name"], row["plan"], ", ".join(row["owners"]), str(row["memberCount"]),
            str(row["projectCount"]), row["createdAt"][:10],
        )
    console.print(table)


@app.command("show")
def show(
    org_id: str = typer.Argument(..., help="Organization id"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON"),
) -> None:
    """Show an organization: members, projects and their key counts."""
    data = _run(lambda db: tenant_service.show_tenant(db, org_id))
    if as_json:
        _print_json(data)
        return
    console.print(f"[bold]{data['name']}[/bold] ({data['id']}), plan {data['plan']}, created {data['createdAt']}")
    members = Table(title="Members")
    for column in ("User ID", "Email", "Name", "Role", "Since"):
        members.add_column(column)
    for m in data["members"]:
        members.add_row(m["userId"], m["email"], m["name"] or "", m["role"], m["createdAt"])
    console.print(members)
    projects = Table(title="Projects")
    for column in ("Project ID", "Name", "Active keys", "Created"):
        projects.add_column(column)
    for p in data["projects"]:
        projects.add_row(p["id"], p["name"], str(p["keyCount"]), p["createdAt"])
    console.print(projects)
