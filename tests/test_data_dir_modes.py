"""The data directory is 0700 and its database files 0600, like the signing key (issue 9, item 9).

SQLite creates its ``-wal`` and ``-shm`` files with the database file's mode, so the database file
is created 0600 before anything opens it. The tests run with a permissive umask (022), under which
the files used to come out world-readable (0644).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from control_plane.app import build_runtime
from control_plane.migrate import upgrade
from shared.settings import Settings
from tests.fixtures.server import running_server

DB_FILES = ("shopsearch.db", "shopsearch.db-wal", "shopsearch.db-shm")


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _assert_private(data_dir: Path) -> None:
    assert _mode(data_dir) == 0o700
    for name in (*DB_FILES, "secret_key"):
        assert (data_dir / name).exists(), name
        assert _mode(data_dir / name) == 0o600, name


def test_embedded_default_files_are_owner_only(tmp_path, permissive_umask):
    settings = Settings(data_dir=tmp_path / "fresh" / "data")
    upgrade(settings)
    runtime = build_runtime(settings)
    try:
        with runtime.engine.connect() as held:  # a connection held open keeps -wal and -shm in place
            held.execute(text("SELECT 1"))
            with runtime.sessions.begin() as db:
                db.execute(text("CREATE TABLE probe (x INTEGER)"))
            settings.signing_key()
            _assert_private(settings.data_dir)
    finally:
        runtime.close()


def test_files_left_readable_by_an_older_version_are_tightened(tmp_path, permissive_umask):
    settings = Settings(data_dir=tmp_path / "data")
    upgrade(settings)
    settings.data_dir.chmod(0o755)
    (settings.data_dir / "shopsearch.db").chmod(0o644)
    older = sqlite3.connect(settings.data_dir / "shopsearch.db")  # leaves -wal and -shm 0644 while open
    older.execute("PRAGMA journal_mode=WAL")
    older.execute("CREATE TABLE probe (x INTEGER)")
    older.commit()
    runtime = build_runtime(settings)
    try:
        assert _mode(settings.data_dir) == 0o700
        for name in DB_FILES:
            assert _mode(settings.data_dir / name) == 0o600, name
    finally:
        runtime.close()
        older.close()


def test_a_started_server_keeps_its_files_private(tmp_path, permissive_umask):
    data_dir = tmp_path / "served" / "data"
    with running_server(extra_env={"SHOPSEARCH_DATA_DIR": str(data_dir)}) as server:
        email, password = "modes@shop.example", "a long enough password"
        assert httpx.post(server.base + "/v1/auth/register", json={"email": email, "password": password}).status_code == 201
        login = httpx.post(server.base + "/v1/auth/login", json={"email": email, "password": password})
        assert login.status_code == 200, login.text
        _assert_private(data_dir)
