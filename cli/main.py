"""The ``shopsearch`` command: one Typer app, one module per command group."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path

import typer

from cli import db, index, projects, status, support, tasks, tenants, worker
from cli.demo import demo
from cli.output import EXIT_CODES_HELP
from cli.serve import serve
from shared.settings import get_settings


def _version() -> str:
    try:
        return package_version("shopsearch")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"shopsearch {_version()}")
        raise typer.Exit()


app = typer.Typer(
    help="shopsearch: hosted search for online shops. New here? Run `shopsearch demo`.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    rich_markup_mode="rich",
)


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print the version and exit."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="The service's data directory "
                                         "(default: SHOPSEARCH_DATA_DIR, else ./.shopsearch)"),
) -> None:
    """shopsearch: hosted search for online shops. New here? Run `shopsearch demo`."""
    if data_dir is not None:
        os.environ["SHOPSEARCH_DATA_DIR"] = str(data_dir)
        get_settings.cache_clear()


app.command("serve")(serve)
app.command("worker")(worker.worker)
app.command("status")(status.status)
app.command("demo")(demo)
app.add_typer(db.app, name="db")
app.add_typer(tenants.app, name="tenants")
app.add_typer(support.app, name="support")
app.add_typer(index.app, name="index")
app.add_typer(projects.app, name="projects")
app.add_typer(tasks.app, name="tasks")

if __name__ == "__main__":
    app()
