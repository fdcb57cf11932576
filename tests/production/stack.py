"""The production topology on one machine, every piece a real process the test controls.

* PostgreSQL: a scratch database on the machine's server, reached through a :class:`TcpProxy`;
* Redis: the machine's server through another proxy, under a key prefix of this run only;
* Ray: ``ray start --head --block`` on 127.0.0.1 with its own ports and temp dir, in a session of
  its own, stopped by signalling that process group (never ``ray stop``, which would stop every
  Ray on the machine);
* API processes: ``shopsearch serve --workers 1`` each (in-process task runner off);
* task runners: ``shopsearch worker``.

The machine's own PostgreSQL and Redis are never stopped: faults are cut at the proxies.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis

from tests.conftest import REDIS_URL, _ensure_services
from tests.fixtures.ports import free_port
from tests.fixtures.server import ROOT, scratch_pg_database
from tests.fixtures.tenants import Tenant, make_tenant
from tests.tcp_proxy import TcpProxy

ORIGIN = "https://shop.example"
RAY = str(Path(sys.executable).with_name("ray"))
# Ray resolves 127.0.0.1 to the machine's outward address unless told this is not a cluster host.
# Token authentication off: once any local ray.init() has written ~/.ray/auth_token (earlier tests
# do), `ray start` turns token mode on and processes joining by address are refused; this scratch
# cluster listens on loopback only.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_DISABLE_IMPORT_WARNING": "1", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "RAY_AUTH_MODE": "disabled"}


def base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SHOPSEARCH_", "RAY_"))}


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the process group the process leads, then SIGKILL what is left of it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # children the leader left behind (Ray's daemons)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)


@dataclass
class Proc:
    """One service process (its own process group), restartable with the same command and environment."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill9(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None:
            _stop_group(self.process, grace=15)

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


@dataclass
class Api(Proc):
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + "/ready", timeout=2).status_code == 200:
                    return
            assert self.alive(), f"{self.name} exited:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{self.name} not ready:\n{self.tail()}"
            time.sleep(0.2)


@dataclass
class Stack:
    tmp: Path
    database_url: str  # direct, for the test's own checks
    db: TcpProxy
    redis: TcpProxy
    redis_prefix: str
    ray_address: str
    ray_head: subprocess.Popen[bytes]
    apis: list[Api]
    runners: list[Proc]
    tenant: Tenant
    extra: dict[str, object] = field(default_factory=dict)

    def procs(self) -> list[Proc]:
        return [*self.apis, *self.runners]

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.tail(2000)}" for p in self.procs())


def _launch_ray(tmp: Path, temp_dir: Path) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    ports = {flag: str(free_port()) for flag in (
        "--ray-client-server-port", "--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")}
    argv = [RAY, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
            "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp_dir}", "--disable-usage-stats",
            *[f"{k}={v}" for k, v in ports.items()]]
    with (tmp / "ray.log").open("wb") as out:
        head = subprocess.Popen(argv, env={**base_env(), **RAY_ENV}, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return f"127.0.0.1:{port}", head


def _wait_ray(tmp: Path, head: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while b"Ray runtime started" not in (tmp / "ray.log").read_bytes():
        assert head.poll() is None and time.monotonic() < deadline, (tmp / "ray.log").read_text()[-3000:]
        time.sleep(0.2)


def _kill_group(process: subprocess.Popen[bytes], temp_dir: Path) -> None:
    """Ray's head drains for up to 30 s on SIGTERM; a scratch cluster has nothing to keep."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)
    shutil.rmtree(temp_dir, ignore_errors=True)


@contextlib.contextmanager
def production_stack(tmp: Path, *, apis: int = 2, runners: int = 2, lease_seconds: float = 5,
                     proxied: bool = True) -> Iterator[Stack]:
    """Everything up and ready; torn down (processes, Ray, database, Redis keys) on exit.
    ``proxied=False`` (benchmarks): the processes reach PostgreSQL and Redis directly, and the
    proxies stay idle."""
    _ensure_services()
    cleanup = contextlib.ExitStack()
    try:
        ray_temp = Path("/tmp") / f"ss-ray-{secrets.token_hex(3)}"  # Ray's socket paths must stay short
        address, head = _launch_ray(tmp, ray_temp)  # it starts while the database is made and migrated
        cleanup.callback(_kill_group, head, ray_temp)
        name = cleanup.enter_context(scratch_pg_database("shopsearch_prod"))
        direct = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        prefix = f"prod:{secrets.token_hex(4)}:"
        db_proxy = TcpProxy(5432).start()
        cleanup.callback(db_proxy.close)
        redis_port = int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])
        redis_proxy = TcpProxy(redis_port).start()
        cleanup.callback(redis_proxy.close)
        cleanup.callback(_drop_redis_keys, prefix)
        env = {**base_env(), **RAY_ENV,
               "SHOPSEARCH_DATA_DIR": str(tmp / "data"),
               "SHOPSEARCH_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:{db_proxy.port if proxied else 5432}/{name}",
               "SHOPSEARCH_DATABASE_CONNECT_TIMEOUT": "2",
               "SHOPSEARCH_REDIS_URL": f"redis://127.0.0.1:{redis_proxy.port if proxied else redis_port}/0",
               "SHOPSEARCH_REDIS_PREFIX": prefix,
               "SHOPSEARCH_RAY_ADDRESS": address,
               "SHOPSEARCH_SECRET_KEY": secrets.token_urlsafe(32),
               "SHOPSEARCH_LOG_LEVEL": "WARNING"}
        cli = [sys.executable, "-m", "cli.main"]
        subprocess.run([*cli, "db", "upgrade"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
        _wait_ray(tmp, head)
        api_procs = []
        for i in range(apis):
            port = free_port()
            api = Api(f"api{i}", [*cli, "serve", "--port", str(port), "--workers", "1"],
                      {**env, "SHOPSEARCH_RUN_TASK_RUNNER": "false"}, tmp / f"api{i}.log", port=port)
            cleanup.callback(api.stop)
            api_procs.append(api.start())
        runner_procs = []
        for i in range(runners):
            runner = Proc(f"runner{i}", [*cli, "worker", "--lease-seconds", str(lease_seconds)], env,
                          tmp / f"runner{i}.log")
            cleanup.callback(runner.stop)
            runner_procs.append(runner.start())
        for api in api_procs:
            api.wait_ready()
        tenant = make_tenant(direct, public_origins=[ORIGIN])
        cleanup.callback(db_proxy.restore)  # before the processes stop, should the test end mid-cut
        cleanup.callback(redis_proxy.restore)
        yield Stack(tmp, direct, db_proxy, redis_proxy, prefix, address, head, api_procs, runner_procs, tenant)
    finally:
        cleanup.close()


def _drop_redis_keys(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)
