"""The ``shopsearch`` command: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from cli import db as db_commands
from cli import serve as serve_commands

app = typer.Typer(help="shopsearch: hosted search for online shops.", no_args_is_help=True)
app.command("serve")(serve_commands.serve)
app.add_typer(db_commands.app, name="db")


def _register_optional_groups() -> None:
    """Command groups that other parts of the code base contribute."""
    from cli import index, support, tasks, tenants, worker

    app.add_typer(tenants.app, name="tenants")
    app.add_typer(support.app, name="support")
    app.command("worker")(worker.worker)
    app.add_typer(index.app, name="index")
    app.add_typer(tasks.app, name="tasks")


_register_optional_groups()

if __name__ == "__main__":
    app()
