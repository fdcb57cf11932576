"""``shopsearch db``: database operations."""

from __future__ import annotations

import typer

from cli.output import emit, failures
from control_plane.migrate import upgrade as run_upgrade
from shared.settings import get_settings

app = typer.Typer(help="Database operations.", no_args_is_help=True)


@app.command("upgrade")
def upgrade(revision: str = typer.Argument("head", help="Target revision")) -> None:
    """Apply the Alembic migrations."""
    with failures():
        settings = get_settings()
        run_upgrade(settings, revision)
    emit(f"database at {revision}: {settings.resolved_database_url.split('@')[-1]}", as_json=False)
