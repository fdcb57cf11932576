"""Fixtures: every API test runs twice — on the embedded default (SQLite, in-process state) and on
the machine's real PostgreSQL + Redis (a fresh database and Redis key prefix per run).
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from control_plane.app import create_app
from control_plane.migrate import upgrade
from shared.settings import Settings
from tests.fixtures.app import StartedAppClient, started
from tests.fixtures.server import (  # noqa: F401 - re-exported
    PG_ADMIN_URL,
    REDIS_URL,
    ROOT,
    drop_redis_prefix,
    scratch_pg_database,
)
from tests.mailbox import Mailbox

# ROOT, PG_ADMIN_URL, REDIS_URL: imported from here by other test modules (one copy: tests/fixtures)
BACKENDS = ["sqlite", "postgres"]

pytest_plugins = [
    "tests.parallel",  # `exclusive` tests under pytest-xdist
    "tests.fixtures.skips",  # an unexpected skip fails the run
    "tests.fixtures.browser",  # `browser`: headless Chromium
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backend(name): runs on that backend only (not collected for the other)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.backend("postgres")``: the test's other-backend instances are deselected, not
    skipped (a skip fails the run: tests/fixtures/skips.py)."""
    kept, dropped = [], []
    for item in items:
        marker = item.get_closest_marker("backend")
        callspec = getattr(item, "callspec", None)
        if marker is not None:
            assert callspec is not None and "backend" in callspec.params, f"{item.nodeid}: marked backend but does not use it"
            (kept if callspec.params["backend"] in marker.args else dropped).append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _ensure_services() -> None:
    subprocess.run([str(ROOT / "scripts" / "ensure-services.sh")], check=True)


@pytest.fixture(scope="session")
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    box.start()
    yield box
    box.stop()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this run, dropped at the end."""
    _ensure_services()
    with scratch_pg_database("shopsearch_test") as name:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def make_settings(backend: str, tmp: Path, mailbox: Mailbox, pg_url: str | None, **overrides: object) -> Settings:
    base: dict[str, object] = {
        "data_dir": tmp,
        "smtp_host": "127.0.0.1",
        "smtp_port": mailbox.port,
        "secret_key": secrets.token_urlsafe(32),
        "log_level": "WARNING",
    }
    if backend == "postgres":
        assert pg_url is not None
        base.update(database_url=pg_url, redis_url=REDIS_URL, redis_prefix=f"sstest:{secrets.token_hex(4)}:")
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def settings(backend: str, tmp_path_factory: pytest.TempPathFactory, mailbox: Mailbox, request) -> Iterator[Settings]:
    pg_url = request.getfixturevalue("pg_database") if backend == "postgres" else None
    value = make_settings(backend, tmp_path_factory.mktemp(f"data-{backend}"), mailbox, pg_url)
    upgrade(value)
    yield value
    if value.redis_url:
        drop_redis_prefix(value.redis_prefix)


@pytest.fixture(scope="session")
def app(settings: Settings) -> Iterator[object]:
    # the lifespan (shard host, task runner) runs once per backend; a test's own `with TestClient(app)`
    # does not run it again (tests/fixtures/app.py)
    with started(create_app(settings)) as application:
        yield application


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    """A fresh client (own cookie jar) against the backend's running app (not started again)."""
    with StartedAppClient(app, raise_server_exceptions=False) as test_client:
        yield test_client

