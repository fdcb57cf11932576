"""The ``shopsearch`` command: one Typer app, one module per command group, each imported when its
command runs (``--version`` and ``--help`` load none of them; ``tenants`` does not load the API's app,
``serve``'s supervisor not the app its workers build)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, MutableMapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path

import typer
import typer.core
from typer._click import Command

from cli.output import EXIT_CODES_HELP
from shared.settings import get_settings

# name → (module, attribute): a command function or a command group's Typer app, in help order
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("cli.serve", "serve"),
    "worker": ("cli.worker", "worker"),
    "status": ("cli.status", "status"),
    "demo": ("cli.demo", "demo"),
    "db": ("cli.db", "app"),
    "tenants": ("cli.tenants", "app"),
    "support": ("cli.support", "app"),
    "index": ("cli.index", "app"),
    "projects": ("cli.projects", "app"),
    "tasks": ("cli.tasks", "app"),
}


def load_command(name: str) -> Command:
    """The click command for ``name``, its module imported now."""
    module, attribute = COMMANDS[name]
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


class LazyGroup(typer.core.TyperGroup):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.commands = _LazyCommands()  # type: ignore[assignment]


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
