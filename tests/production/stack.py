"""The production topology on one machine, every piece a real process the test controls.

* PostgreSQL: a scratch database on the machine's server, reached through a :class:`TcpProxy`;
* Redis: the machine's server through another proxy, under a key prefix of this run only;
* Ray: ``ray start --head --block`` on 127.0.0.1 with its own ports and temp dir, in a session of
  its own, stopped by signalling that process group (never ``ray stop``, which would stop every
  Ray on the machine); optionally worker nodes, ``ray start --address=… --block`` each in a process
  group of its own (:class:`RayNode`: one more can join later, one can be killed as a machine is
  lost), and a driver the test asks where the shard actors are (:class:`RayProbe`);
* API processes: ``shopsearch serve --workers 1`` each (in-process task runner off);
* task runners: ``shopsearch worker``.

The machine's own PostgreSQL and Redis are never stopped: faults are cut at the proxies.
"""

from __future__ import annotations

import contextlib
import json
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
from typing import Any

import httpx

from tests.conftest import REDIS_URL, _ensure_services
from tests.fixtures.ports import free_port
from tests.fixtures.server import ROOT, drop_redis_prefix, scratch_pg_database
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
class RayNode:
    """A worker node of the stack's cluster (``ray start --address=… --block``: the raylet, its
    object store and every worker process it starts - the shard actors placed on it - in one
    process group). ``kill9`` is the machine lost."""

    name: str
    node_manager_port: int  # what tells this node apart in ``ray.nodes()`` (all share 127.0.0.1)
    process: subprocess.Popen[bytes]
    log: Path

    def kill9(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


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
    ray_temp: Path = Path()
    ray_nodes: list[RayNode] = field(default_factory=list)  # worker nodes (every one ever started)

    def procs(self) -> list[Proc]:
        return [*self.apis, *self.runners]

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.tail(2000)}" for p in self.procs())

    def add_ray_node(self, name: str, num_cpus: int = 1) -> RayNode:
        """Start one more worker node (stopped with the stack); returns once it runs."""
        node = _launch_ray_node(self.tmp, self.ray_temp, self.ray_address, name, num_cpus)
        self.ray_nodes.append(node)
        _wait_ray(node.log, node.process)
        return node


def _launch_ray(tmp: Path, temp_dir: Path, system_config: dict[str, Any] | None) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    ports = {"--ray-client-server-port": str(free_port()), **_node_ports()}
    argv = [RAY, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
            "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp_dir}", "--disable-usage-stats",
            *[f"{k}={v}" for k, v in ports.items()],
            *([f"--system-config={json.dumps(system_config)}"] if system_config else [])]
    with (tmp / "ray.log").open("wb") as out:
        head = subprocess.Popen(argv, env={**base_env(), **RAY_ENV}, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return f"127.0.0.1:{port}", head


def _node_ports() -> dict[str, str]:
    return {flag: str(free_port()) for flag in (
        "--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")}


# `ray start --address=…` as the CLI runs it, but on loopback only: with RAY_ENV the CLI refuses to
# join a cluster ("not supported on Windows and OSX"), and told it may, it resolves 127.0.0.1 (the
# head's address and this node's) to the machine's outward address. So the refusal is lifted in
# this process alone and the node's address stays 127.0.0.1; everything it starts keeps RAY_ENV.
_JOIN = ("import sys; from ray._private import ray_constants, services; ray_constants.ENABLE_RAY_CLUSTER = True; "
         "services.get_node_ip_address = lambda address=None: '127.0.0.1'; "
         "from ray.scripts.scripts import main; sys.exit(main())")


def _launch_ray_node(tmp: Path, temp_dir: Path, address: str, name: str, num_cpus: int) -> RayNode:
    ports = _node_ports()
    argv = [sys.executable, "-c", _JOIN, "start", f"--address={address}", "--block", "--node-ip-address=127.0.0.1",
            # a temp dir of its own: raylets starting at once in one dir took the same socket name
            f"--num-cpus={num_cpus}", f"--temp-dir={temp_dir / name}", "--disable-usage-stats",
            "--object-store-memory=100000000", f"--labels=shopsearch-node={name}",
            *[f"{k}={v}" for k, v in ports.items()]]
    log = tmp / f"ray-{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env={**base_env(), **RAY_ENV}, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return RayNode(name, int(ports["--node-manager-port"]), process, log)


def _wait_ray(log: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while b"Ray runtime started" not in log.read_bytes():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


def _kill_group(process: subprocess.Popen[bytes], temp_dir: Path | None) -> None:
    """Ray's head drains for up to 30 s on SIGTERM; a scratch cluster has nothing to keep."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)


@contextlib.contextmanager
def production_stack(tmp: Path, *, apis: int = 2, runners: int = 2, lease_seconds: float = 5,
                     proxied: bool = True, ray_nodes: int = 0,
                     ray_system_config: dict[str, Any] | None = None) -> Iterator[Stack]:
    """Everything up and ready; torn down (processes, Ray, database, Redis keys) on exit.
    ``proxied=False`` (benchmarks): the processes reach PostgreSQL and Redis directly, and the
    proxies stay idle. ``ray_nodes``: worker nodes beside the head (1 CPU each), joined before the
    API processes start; ``ray_system_config``: the head's ``--system-config`` (how fast it declares
    a node dead, say)."""
    _ensure_services()
    cleanup = contextlib.ExitStack()
    nodes: list[RayNode] = []
    try:
        ray_temp = Path("/tmp") / f"ss-ray-{secrets.token_hex(3)}"  # Ray's socket paths must stay short
        address, head = _launch_ray(tmp, ray_temp, ray_system_config)  # starts while the database is made
        cleanup.callback(_kill_group, head, ray_temp)
        cleanup.callback(lambda: [_kill_group(n.process, None) for n in nodes])
        name = cleanup.enter_context(scratch_pg_database("shopsearch_prod"))
        direct = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        prefix = f"prod:{secrets.token_hex(4)}:"
        db_proxy = TcpProxy(5432).start()
        cleanup.callback(db_proxy.close)
        redis_port = int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])
        redis_proxy = TcpProxy(redis_port).start()
        cleanup.callback(redis_proxy.close)
        cleanup.callback(drop_redis_prefix, prefix)
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
        _wait_ray(tmp / "ray.log", head)
        for i in range(ray_nodes):
            nodes.append(_launch_ray_node(tmp, ray_temp, address, f"w{i + 1}", 1))
        for node in nodes:
            _wait_ray(node.log, node.process)
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
        yield Stack(tmp, direct, db_proxy, redis_proxy, prefix, address, head, api_procs, runner_procs, tenant,
                    ray_temp=ray_temp, ray_nodes=nodes)
    finally:
        cleanup.close()



_PROBE = """
import json, sys, ray
ray.init(address=sys.argv[1], namespace="shopsearch", log_to_driver=False)
for line in sys.stdin:
    ask = json.loads(line)
    if ask["op"] == "nodes":
        out = [{"id": n["NodeID"], "port": n["NodeManagerPort"], "alive": n["Alive"]} for n in ray.nodes()]
    else:
        prefix = "shard:%s:g%d:" % (ask["index"], ask["generation"])
        refs = {}
        for a in ray.util.list_named_actors(all_namespaces=True):
            if a["namespace"] == "shopsearch" and a["name"].startswith(prefix):
                try:
                    refs[a["name"]] = ray.get_actor(a["name"], namespace="shopsearch").info.remote()
                except ValueError:
                    pass
        out = {}
        for name, ref in sorted(refs.items()):
            try:
                out[name] = ray.get(ref, timeout=ask["timeout"])
            except Exception as exc:
                out[name] = {"error": type(exc).__name__}
    print("@@" + json.dumps(out), flush=True)
"""


class RayProbe:
    """A driver on the stack's cluster (one process for the whole test: joining costs seconds) that
    says which nodes are alive and where each shard actor of a generation runs."""

    def __init__(self, stack: Stack) -> None:
        self.log = stack.tmp / "probe.log"
        with self.log.open("ab") as err:
            self.process = subprocess.Popen([sys.executable, "-c", _PROBE, stack.ray_address], cwd=ROOT,
                                            env={**base_env(), **RAY_ENV}, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, start_new_session=True)

    def _ask(self, **ask: Any) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((json.dumps(ask) + "\n").encode())
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, f"the probe ended:\n{self.log.read_text(errors='replace')[-3000:]}"
            if line.startswith(b"@@"):
                return json.loads(line[2:])

    def nodes(self) -> dict[int, str]:
        """``{node manager port: node id}`` of the alive nodes."""
        return {n["port"]: n["id"] for n in self._ask(op="nodes") if n["alive"]}

    def replicas(self, index_id: str, generation: int, timeout: float = 5) -> dict[tuple[int, int], dict[str, Any]]:
        """``{(shard, replica): info}`` (``nodeId``, ``appliedSeq``, ``docCount`` …; ``{"error": …}``
        for an actor that did not answer within ``timeout``) of every named actor of the generation."""
        out = {}
        for name, info in self._ask(op="replicas", index=index_id, generation=generation, timeout=timeout).items():
            shard, replica = name.rsplit(":", 2)[1:]
            out[(int(shard[1:]), int(replica[1:]))] = info
        return out

    def close(self) -> None:
        _stop_group(self.process, grace=5)
