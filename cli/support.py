"""``shopsearch support``: provider support tools (direct database access)."""

from __future__ import annotations

import getpass

import typer

from cli.database import transaction
from cli.output import JsonOption, emit, failures, notice
from control_plane.auth.sessions import IMPERSONATION_CODE_TTL_SECONDS, issue_impersonation_code

app = typer.Typer(help="Support tools (operators).", no_args_is_help=True)


def _operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "support"


@app.command("impersonation-code")
def impersonation_code(
    org_id: str = typer.Argument(..., help="Organization whose owner support will act as"),
    by: str = typer.Option(None, "--by", help="Who is impersonating (shown to the session); default: OS user"),
    as_json: JsonOption = False,
) -> None:
    """Print a one-time code for POST /v1/auth/impersonate (valid 10 minutes)."""
    with failures(), transaction() as db:
        code = issue_impersonation_code(db, org_id, f"support:{by or _operator()}")
    emit({"code": code, "expiresInSeconds": IMPERSONATION_CODE_TTL_SECONDS}, as_json=as_json, human=code)
    if not as_json:
        notice(f"valid for {IMPERSONATION_CODE_TTL_SECONDS // 60} minutes, once")
