"""``shopsearch tenants``: operator commands over tenants (filled in by the org/project work)."""

import typer

app = typer.Typer(help="Create and inspect tenants (operators).", no_args_is_help=True)
