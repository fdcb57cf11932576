"""The one place the CLI prints: ``--json``, tables whose ids are never cut, one error exit.

Answers go to stdout (JSON, a table or a line); notices, progress bars and errors go to stderr, so
``--json`` output pipes cleanly. Exit codes: see ``EXIT_CODES_HELP`` (shown by ``--help``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import click
import typer
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperOption

from shared.errors import ServiceError
from shared.settings import get_settings

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_DEGRADED, EXIT_DOWN = 0, 1, 2, 3, 4
EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 failure (one line `error: ...` on stderr: an unknown id, a task that did "
    "not succeed, a server that does not answer); 2 usage error (unknown option, missing argument); "
    "`status` only: 3 degraded, 4 down."
)

JsonOption = Annotated[
    bool, typer.Option("--json", help='Print JSON (a list as {"items": [...]}, as the API answers)')
]

# Exits already decided (``fail``, Typer's and Click's own): they pass through ``failures`` untouched.
_EXITS = (typer.Exit, typer.Abort, click.exceptions.Exit, click.ClickException, click.Abort)

def _flags_without_a_type() -> None:
    """Typer's help shows a flag as ``--version <bool>``, as if it took a value: show flags bare."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_flags_without_a_type()

_stdout = Console()
_stderr = Console(stderr=True)


def emit(value: Any, *, as_json: bool, human: RenderableType | None = None) -> None:
    """Print an answer: JSON (a list wrapped as ``{"items": [...]}``), else ``human``.

    ``human`` is a rich renderable (a ``table``), or a string printed as one plain line (no markup,
    no wrapping, so scripts can read it); by default ``value`` itself.
    """
    if as_json:
        typer.echo(json.dumps({"items": value} if isinstance(value, list) else value, indent=2))
        return
    shown = value if human is None else human
    if isinstance(shown, str):
        typer.echo(shown)
    else:
        _stdout.print(shown)


def table(
    *headers: str, rows: Iterable[Sequence[RenderableType]], ids: Collection[str] = (), title: str | None = None,
    show_header: bool = True, keep: Collection[str] = (),
) -> Table:
    """A table that never cuts a value: columns wrap their values at spaces (a long word folds,
    never ``…``); the columns named in ``ids`` never wrap. When the console is too narrow for all
    columns at their headers' width, the last columns not in ``ids`` or ``keep`` (states, say) are
    left out, the caption says which, and ``--json`` still has everything."""
    kept_rows = [list(row) for row in rows]
    columns = list(headers)
    dropped: list[str] = []
    while True:
        out = _build(columns, kept_rows, headers, ids, title, show_header)
        if dropped:
            out.caption = f"left out for the width: {', '.join(reversed(dropped))} (--json shows every field)"
        fits = Measurement.get(_stdout, _stdout.options, out).minimum <= _stdout.width
        optional = [c for c in columns if c not in ids and c not in keep]
        if fits or not optional:
            return out
        dropped.append(optional[-1])
        columns.remove(optional[-1])


def _build(columns: list[str], rows: list[list[RenderableType]], headers: Sequence[str], ids: Collection[str],
           title: str | None, show_header: bool) -> Table:
    out = Table(title=title, show_header=show_header)
    for header in columns:
        if header in ids:
            out.add_column(header, no_wrap=True, overflow="fold")
        else:
            out.add_column(header, overflow="fold", min_width=len(header))
    at = [headers.index(c) for c in columns]
    for row in rows:
        out.add_row(*(row[i] for i in at))
    return out


def notice(message: str) -> None:
    """A line for the operator on stderr (rich markup), never part of the answer."""
    _stderr.print(message)


def progress() -> Progress:
    """A progress bar on stderr for long work: description, bar, percentage, time elapsed."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(), console=_stderr, transient=False,
    )


def fail(message: str, code: int = 1) -> NoReturn:
    """The one error exit: ``error: message`` on stderr, then exit ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _describe(exc: ServiceError) -> str:
    """A service error's message with its field details, on one line."""
    if not exc.details:
        return exc.message
    return exc.message + " (" + "; ".join(f"{d['path']}: {d['message']}" for d in exc.details) + ")"


@contextmanager
def failures() -> Iterator[None]:
    """Any failure in the block ends the command with ``fail``: an operator gets one line, not a traceback."""
    try:
        yield
    except _EXITS:
        raise  # already an exit (``fail`` or Typer's own): keep its code
    except ServiceError as exc:
        fail(_describe(exc))
    except Exception as exc:  # noqa: BLE001 - see the docstring
        fail(f"{type(exc).__name__}: {exc}")


LOCAL_URL = "http://127.0.0.1:8000"


def service_url(url: str | None) -> str:
    """The API's base URL: ``--url``, else ``SHOPSEARCH_PUBLIC_URL``, else the local ``serve`` default."""
    if url:
        return url.rstrip("/")
    return (get_settings().public_url or LOCAL_URL).rstrip("/")


UrlOption = Annotated[
    str | None,
    typer.Option("--url", help=f"The API's base URL (default: SHOPSEARCH_PUBLIC_URL, else {LOCAL_URL})"),
]
