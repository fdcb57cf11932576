"""``shopsearch support``: provider support tools."""

import typer

app = typer.Typer(help="Support tools (operators).", no_args_is_help=True)
