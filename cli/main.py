"""The ``shopsearch`` command: one Typer app, one module per command group."""

from __future__ import annotations

import typer

from cli import db, index, support, tasks, tenants, worker
from cli.serve import serve

app = typer.Typer(help="shopsearch: hosted search for online shops.", no_args_is_help=True)
app.command("serve")(serve)
app.add_typer(db.app, name="db")
app.add_typer(tenants.app, name="tenants")
app.add_typer(support.app, name="support")
app.command("worker")(worker.worker)
app.add_typer(index.app, name="index")
app.add_typer(tasks.app, name="tasks")

if __name__ == "__main__":
    app()
