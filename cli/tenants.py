"""``shopsearch tenants``: create and inspect tenants (operators; direct database access)."""

from __future__ import annotations

from enum import StrEnum

import typer
from rich.console import Group
from rich.text import Text
from sqlalchemy.orm import Session

from cli.database import transaction
from cli.output import JsonOption, emit, failures, notice, table
from control_plane.state import Epochs, open_state
from control_plane.tenants import service as tenant_service
from shared.plans import DEFAULT_PLAN, PLAN_NAMES
from shared.settings import get_settings

app = typer.Typer(help="Create and inspect tenants (operators).", no_args_is_help=True)


class KeyAccess(StrEnum):
    full = "full"
    read = "read"


Plan = StrEnum("Plan", {name: name for name in PLAN_NAMES})  # type: ignore[misc]  # choices and completion


def _set_plan(db: Session, org_id: str, plan: str) -> list[str]:
    """Change an organization's plan (as its owner could); the ids of its indices, whose epochs move."""
    return tenant_service.change_plan(db, org_id, "owner", plan)[1]


def _move_epochs(index_ids: list[str]) -> None:
    """Searches resolve their plan's quota once per index epoch: retire the epochs where the servers
    share them (Redis, or the state file of ``serve --workers``); a single ``serve`` process without
    Redis keeps its epochs in memory and sees the new plan with the index's next change or restart."""
    if not index_ids:
        return
    epochs = Epochs(open_state(get_settings(), join_file=True))
    for index_id in index_ids:
        epochs.bump(index_id)


@app.command("create")
def create(
    email: str = typer.Option(..., "--email", help="Email of the new user (the organization's owner)"),
    password: str = typer.Option(..., "--password", help="Password, at least 10 characters"),
    org: str = typer.Option(..., "--org", help="Organization name"),
    project: str = typer.Option(..., "--project", help="Project name"),
    verified: bool = typer.Option(False, "--verified", help="Mark the email as confirmed"),
    with_key: KeyAccess | None = typer.Option(None, "--with-key", help="Also create a secret key: full or read"),
    plan: Plan = typer.Option(DEFAULT_PLAN, "--plan", help="The organization's plan"),
    as_json: JsonOption = False,
) -> None:
    """Create a user, an organization they own, a project and optionally a secret key (on a new
    data directory, its database is made first)."""
    with failures(), transaction(create=True) as db:
        created = tenant_service.create_tenant(
            db,
            email=email,
            password=password,
            org_name=org,
            project_name=project,
            verified=verified,
            key_access=with_key.value if with_key else None,
        ).as_dict()
        _set_plan(db, created["orgId"], plan.value)
        created = {**created, "plan": plan.value}
    fields = table("field", "value", rows=((name, str(value)) for name, value in created.items()),
                   ids=("value",), title="Tenant created", show_header=False)
    warning = [Text("The key is shown only now; store it safely.", style="yellow")] if "key" in created else []
    emit(created, as_json=as_json, human=Group(fields, *warning))


@app.command("list")
def list_tenants(as_json: JsonOption = False) -> None:
    """List every organization with its owners and counts."""
    with failures(), transaction() as db:
        rows = tenant_service.list_tenants(db)
    human = table(
        "ID", "Name", "Plan", "Owners", "Members", "Projects", "Created",
        rows=([row["id"], row["name"], row["plan"], ", ".join(row["owners"]), str(row["memberCount"]),
               str(row["projectCount"]), row["createdAt"][:10]] for row in rows),
        ids=("ID",), keep=("Plan",), title="Organizations",
    )
    emit(rows, as_json=as_json, human=human)


@app.command("show")
def show(org_id: str = typer.Argument(..., help="Organization id"), as_json: JsonOption = False) -> None:
    """Show an organization: members, projects and their key counts."""
    with failures(), transaction() as db:
        data = tenant_service.show_tenant(db, org_id)
    heading = Text.assemble((data["name"], "bold"), f" ({data['id']}), plan {data['plan']}, created {data['createdAt']}")
    members = table(
        "User ID", "Email", "Name", "Role", "Since",
        rows=([m["userId"], m["email"], m["name"] or "", m["role"], m["createdAt"]] for m in data["members"]),
        ids=("User ID",), title="Members",
    )
    projects = table(
        "Project ID", "Name", "Active keys", "Created",
        rows=([p["id"], p["name"], str(p["keyCount"]), p["createdAt"]] for p in data["projects"]),
        ids=("Project ID",), title="Projects",
    )
    emit(data, as_json=as_json, human=Group(heading, members, projects))


@app.command("plan")
def plan_command(
    org_id: str = typer.Argument(..., help="Organization id (org_…)"),
    plan: Plan = typer.Argument(..., help="The new plan"),
    as_json: JsonOption = False,
) -> None:
    """Change an organization's plan (its quotas: indices, documents, searches per second)."""
    with failures():
        with transaction() as db:
            index_ids = _set_plan(db, org_id, plan.value)
        _move_epochs(index_ids)
    emit({"id": org_id, "plan": plan.value}, as_json=as_json, human=f"{org_id} plan {plan.value}")
    if not as_json and index_ids:
        notice(f"{len(index_ids)} index(es) now search under the {plan.value} plan's quotas")
