"""The demo shop, once per package: ``shopsearch demo`` as a real process on a fresh data directory
(no server: the API runs inside the command), then a real ``shopsearch serve`` on that directory;
and headless Chromium for its page.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.ports import free_port
from tests.fixtures.server import ROOT, clean_env, cli_command, serve_process


def demo_env(data_dir: Path) -> dict[str, str]:
    return clean_env(SHOPSEARCH_DATA_DIR=str(data_dir), SHOPSEARCH_LOG_LEVEL="WARNING")


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The first run (a real process on a fresh data directory), then the server it points at."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"  # does not exist yet
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    shop = f"http://localhost:{free_port()}"  # README "Add search to a shop page": a page's own origin
    first = subprocess.run([*cli_command(), "demo", "--url", base, "--origin", shop, "--json"], cwd=ROOT,
                           env=demo_env(data_dir),
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    with serve_process(demo_env(data_dir), port=port, args=("--workers", "1")):
        yield {"base": base, "data_dir": data_dir, "first": json.loads(first.stdout), "stderr": first.stderr,
               "shopOrigin": shop}


def open_page(browser, width: int = 1200, height: int = 900):  # type: ignore[no-untyped-def]
    """A page in its own context; tests talk to this machine only (the catalog's images live on a CDN:
    their requests are refused, as a CDN that is down). ``page.problems`` collects script errors and
    refused requests other than images."""
    context = browser.new_context(viewport={"width": width, "height": height})
    problems: list[str] = []

    def route(request_route):  # type: ignore[no-untyped-def]
        url = request_route.request.url
        if url.startswith(("http://127.0.0.1", "http://localhost")):
            request_route.continue_()
            return
        if request_route.request.resource_type != "image":
            problems.append(f"request to {url}")
        request_route.abort()

    context.route("**/*", route)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    opened.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    opened.on("console", lambda m: problems.append(f"console: {m.text}")
              if m.type == "error" and "Failed to load resource" not in m.text else None)
    opened.problems = problems
    return context, opened


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context, opened = open_page(browser)
    yield opened
    context.close()
    assert not opened.problems, opened.problems
