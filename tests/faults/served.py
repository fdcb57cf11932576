"""``shopsearch serve`` as a process group the fault tests can SIGKILL and start again on the same data
directory and database (SQLite, or a scratch PostgreSQL database with Redis), optionally run without
the capabilities that let root ignore file modes (so a directory made read-only refuses its writes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, create_engine, text

from benchmarks.common import ROOT, Tenant, free_port, make_tenant, scratch_pg_database
from tests.conftest import REDIS_URL, _ensure_services
from tests.fixtures.server import drop_redis_prefix

#: root ignores file modes through these two capabilities: the server runs without them
NO_OVERRIDE = ["setpriv", "--inh-caps=-dac_override,-fowner", "--bounding-set=-dac_override,-fowner", "--"]
MAPPING: dict[str, Any] = {"idField": "id", "fields": {
    "name": {"type": "text", "searchable": True},
    "version": {"type": "integer", "filterable": True, "sortable": True},
    "group": {"type": "keyword", "filterable": True},
}}


@dataclass
class Served:
    env: dict[str, str]
    data_dir: Path
    database_url: str
    workers: int
    prefix: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    _engine: Engine | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"serve-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        command = [*self.prefix, sys.executable, "-m", "cli.main", "serve", "--port", str(self.port),
                   "--workers", str(self.workers)]
        with self.log.open("wb") as out:  # its own process group: a kill takes the helpers too
            self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def wait_ready(self, timeout: float = 60) -> float:
        """Wait until ``/ready`` answers 200; the monotonic time it did."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/ready", timeout=1).status_code == 200:
                    return time.monotonic()
            assert self.process is not None and self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]
            time.sleep(0.05)

    def kill9(self) -> None:
        """SIGKILL every process of the server (serving processes, persistence helpers)."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.process = None

    def sql(self, query: str, **params: Any) -> list[Any]:
        """Run one statement in its own transaction. The engine is kept (disposed when the server is
        done with), so a test polling a task's row sees it every few milliseconds, not every few tens."""
        if self._engine is None:
            self._engine = create_engine(self.database_url, pool_pre_ping=True)
        with self._engine.begin() as db:
            result = db.execute(text(query), params)
            return list(result.all()) if result.returns_rows else []

    def close(self) -> None:
        self.stop()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


@contextlib.contextmanager
def served(tmp_path: Path, backend: str, *, workers: int = 1, prefix: list[str] | None = None,
           extra_env: dict[str, str] | None = None) -> Iterator[Served]:
    """A started server (``/ready``); stopped, and its scratch database dropped, afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    data_dir = tmp_path / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    env.update(SHOPSEARCH_DATA_DIR=str(data_dir), SHOPSEARCH_LOG_LEVEL="WARNING",
               SHOPSEARCH_SECRET_KEY=secrets.token_urlsafe(32), **(extra_env or {}))
    cleanup = contextlib.ExitStack()
    if backend == "postgres":
        _ensure_services()
        name = cleanup.enter_context(scratch_pg_database("shopsearch_faults"))
        env["SHOPSEARCH_DATABASE_URL"] = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        env["SHOPSEARCH_REDIS_URL"] = REDIS_URL
        env["SHOPSEARCH_REDIS_PREFIX"] = f"faults:{secrets.token_hex(4)}:"
        cleanup.callback(drop_redis_prefix, env["SHOPSEARCH_REDIS_PREFIX"])
    database_url = env.get("SHOPSEARCH_DATABASE_URL") or f"sqlite:///{data_dir / 'shopsearch.db'}"
    server = Served(env, data_dir, database_url, workers, prefix or [])
    try:
        server.start()
        server.wait_ready()
        yield server
    finally:
        server.close()
        cleanup.close()


def wait_task(http: httpx.Client, project_id: str, task_id: str, timeout: float = 60,
              poll: float = 0.02) -> dict[str, Any]:
    """The task once it ended (whatever its status)."""
    deadline = time.monotonic() + timeout
    while True:
        response = http.get(f"/v1/projects/{project_id}/tasks/{task_id}")
        if response.status_code == 200 and response.json()["status"] in ("succeeded", "failed", "canceled"):
            return response.json()  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"task {task_id} not finished: {response.status_code} {response.text}"
        time.sleep(poll)


def shop(server: Served, *, shards: int = 2) -> tuple[Tenant, httpx.Client, str]:
    """A tenant, a client with its secret key (answers never from the cache), and a new index's URL."""
    tenant = make_tenant(server.database_url)
    http = httpx.Client(base_url=server.base, headers={**tenant.headers, "Cache-Control": "no-cache"}, timeout=60)
    created = http.post(f"/v1/projects/{tenant.project_id}/indices",
                        json={"name": "shop", "shards": shards, "mapping": MAPPING})
    assert created.status_code == 201, created.text
    return tenant, http, f"/v1/projects/{tenant.project_id}/indices/{created.json()['id']}"
