"""``shopsearch status``: the service's state as ``GET /v1/status`` answers it (over HTTP)."""

from __future__ import annotations

from typing import Any

import httpx
import typer
from rich.console import Group, RenderableType
from rich.text import Text

from cli.output import EXIT_DEGRADED, EXIT_DOWN, JsonOption, UrlOption, emit, fail, service_url, table

STYLES = {"operational": "green", "degraded": "yellow", "down": "red"}
EXITS = {"degraded": EXIT_DEGRADED, "down": EXIT_DOWN}


def fetch_status(base: str, timeout: float) -> dict[str, Any]:
    """The body of ``GET /v1/status``; fails with one line when the server does not answer it."""
    try:
        response = httpx.get(f"{base}/v1/status", timeout=timeout)
    except httpx.HTTPError as exc:
        fail(f"no answer from {base} ({type(exc).__name__}: {exc}); is `shopsearch serve` running there?")
    if response.status_code == 429:
        fail(f"{base} answered 429: too many status requests from this address; try again shortly")
    if response.status_code != 200:
        fail(f"{base}/v1/status answered {response.status_code}: {response.text[:200]}")
    try:
        body = response.json()
        assert isinstance(body, dict) and isinstance(body["status"], str) and isinstance(body["services"], list)
    except (ValueError, KeyError, AssertionError):
        fail(f"{base}/v1/status did not answer a status body: {response.text[:200]}")
    return body


def status(
    url: UrlOption = None,
    timeout: float = typer.Option(10.0, help="Seconds to wait for the answer"),
    as_json: JsonOption = False,
) -> None:
    """The state of search, indexing, dashboard and MCP (GET /v1/status): a table, or --json.

    Exit code 0 when operational, 3 when degraded, 4 when down, 1 when the server does not answer.
    """
    base = service_url(url)
    body = fetch_status(base, timeout)
    overall = str(body["status"])
    rows: list[list[RenderableType]] = [
        [str(s.get("name")), Text(str(s.get("state")), style=STYLES.get(str(s.get("state")), ""))]
        for s in body["services"]]
    heading = Text.assemble("overall: ", (overall, f"bold {STYLES.get(overall, '')}".strip()),
                            f"  (checked at {body.get('checkedAt', '?')}, {base})")
    emit(body, as_json=as_json, human=Group(heading, table("Service", "State", rows=rows)))
    if overall in EXITS:
        raise typer.Exit(EXITS[overall])
