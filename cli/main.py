"""The ``shopsearch`` command: one Typer app, one module per command group, each imported when its
command runs (``--version`` and ``--help`` load none of them; ``tenants`` does not load the API's app,
``serve``'s supervisor not the app its workers build)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import cast

import typer
import typer.core
from typer._click import Command, Context, HelpFormatter
from typer._click.shell_completion import CompletionItem

from cli.output import EXIT_CODES_HELP
from shared.settings import get_settings

# name → (module, attribute, short help): a command function or a command group's Typer app, in help
# order; the short help lists the commands without importing them (tests/cli/test_commands.py checks
# it against each command's own)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "serve": ("cli.serve", "serve", "Run the API. Applies database migrations first; Ctrl-C stops it cleanly."),
    "worker": ("cli.worker", "worker", "Run a task runner until Ctrl-C (or SIGTERM)."),
    "status": ("cli.status", "status",
               "The state of search, indexing, dashboard and MCP (GET /v1/status): a table, or --json."),
    "demo": ("cli.demo", "demo",
             "Set up a demo shop with the Best Buy catalog and print its keys, a curl and the demo page's URL."),
    "db": ("cli.db", "app", "Database operations."),
    "tenants": ("cli.tenants", "app", "Create and inspect tenants (operators)."),
    "support": ("cli.support", "app", "Support tools (operators)."),
    "index": ("cli.index", "app", "Operate on indices (operators)."),
    "projects": ("cli.projects", "app", "List projects (operators)."),
    "tasks": ("cli.tasks", "app", "List and wait for tasks (operators)."),
}


def load_command(name: str) -> Command:
    """The click command for ``name``, its module imported now."""
    module, attribute, _ = COMMANDS[name]
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):  # a group, even of one command (as ``add_typer`` makes it)
        command: Command = typer.main.get_group(target)
    else:  # a single command: a Typer of one builds just it
        single = typer.Typer(rich_markup_mode="rich")
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class _LazyCommands(MutableMapping[str, Command]):
    """A group's commands by name, each loaded at its first lookup (listing the names loads none)."""

    def __init__(self) -> None:
        self._loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._loaded if name not in COMMANDS)

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._loaded))

    def loaded(self, name: str) -> bool:
        return name in self._loaded


class LazyGroup(typer.core.TyperGroup):
    """The top-level group: listing its commands (``--help``, completing a command's name) shows
    their short help without importing them (all of them took 4 s of CPU before the help showed)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.commands = _LazyCommands()  # type: ignore[assignment]
        self._listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # the names (Typer's own reads every command)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        commands = cast(_LazyCommands, self.commands)
        if self._listing and cmd_name in COMMANDS and not commands.loaded(cmd_name):
            return typer.core.TyperCommand(cmd_name, help=COMMANDS[cmd_name][2])  # a stand-in: its name and help
        return super().get_command(ctx, cmd_name)

    @contextmanager
    def _list_only(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        with self._list_only():
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: Context, incomplete: str) -> list[CompletionItem]:
        # the names of commands (a named command's own words are completed by that command)
        with self._list_only():
            return super().shell_complete(ctx, incomplete)


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
    cls=LazyGroup,
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


if __name__ == "__main__":
    app()
