"""Fuzz every operation of a real ``shopsearch serve`` with schemathesis, inside a loopback-only
network namespace (so a fuzzed feed URL plus ``feed/sync`` can reach no other host).

Run by ``tests/fuzz/test_openapi_fuzz.py`` as
``unshare -n sh -c 'ip link set lo up && exec python -m tests.fuzz.runner --backend sqlite --report R'``.
It refuses to run where any network interface other than ``lo`` exists. On ``postgres`` the
server uses the machine's PostgreSQL through its Unix socket (a fresh database) and a private
``redis-server`` on the namespace's loopback.

Passes: ``session`` (a signed-in owner; the storefront with a public key and an allowed Origin),
``secret`` (a full-access secret key) and ``anonymous`` (no credentials). Exit status 0 when every
pass found no failure and the server logged no unhandled error; the JSON report has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PG_SOCKET_DIR = os.environ.get("SHOPSEARCH_FUZZ_PG_SOCKET", "/var/run/postgresql")
ORIGIN = "https://shop.example"
PASSWORD = "fuzz-password-0123"
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "ignored_auth",
]


def loopback_only() -> bool:
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {seconds}s")


class Backend:
    """The server's environment; on postgres also a fresh database and a private Redis."""

    def __init__(self, kind: str, work: Path) -> None:
        self.kind = kind
        self.work = work
        self.redis: subprocess.Popen[bytes] | None = None
        self.database: str | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
        env.update(
            SHOPSEARCH_DATA_DIR=str(self.work / "data"),
            SHOPSEARCH_SECRET_KEY=secrets.token_urlsafe(32),
            SHOPSEARCH_LOG_LEVEL="WARNING",
        )
        if self.kind == "postgres":
            import psycopg

            self.database = f"shopsearch_fuzz_{secrets.token_hex(4)}"
            with psycopg.connect(host=PG_SOCKET_DIR, user="postgres", dbname="postgres", autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.database}"')
            redis_port = free_port()
            self.redis = subprocess.Popen(
                ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            env.update(
                SHOPSEARCH_DATABASE_URL=f"postgresql+psycopg://postgres@/{self.database}?host={PG_SOCKET_DIR}",
                SHOPSEARCH_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
            )
        return env

    def close(self) -> None:
        if self.redis is not None:
            self.redis.terminate()
            self.redis.wait(10)
        if self.database is not None:
            import psycopg

            with psycopg.connect(host=PG_SOCKET_DIR, user="postgres", dbname="postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def create_tenant(env: dict[str, str]) -> dict[str, Any]:
    subprocess.run([str(BIN / "shopsearch"), "db", "upgrade"], env=env, check=True, capture_output=True)
    out = subprocess.run(
        [str(BIN / "shopsearch"), "tenants", "create", "--email", "owner@fuzz.example", "--password", PASSWORD,
         "--org", "Fuzz", "--project", "Fuzz", "--verified", "--with-key", "full", "--json"],
        env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def seed_tenant(base: str, tenant: dict[str, Any]) -> dict[str, str]:
    """Sign in, and give the project what the fuzzer should reach: a public key, an index with
    documents, and a saved profile (its handle is the storefront's ``profile_key``)."""
    with httpx.Client(base_url=base, timeout=30) as http:
        login = http.post("/v1/auth/login", json={"email": tenant["email"], "password": PASSWORD})
        login.raise_for_status()
        session = {"Authorization": f"Bearer {login.json()['accessToken']}"}
        project = tenant["projectId"]
        public = http.post(f"/v1/projects/{project}/api-keys", headers=session,
                           json={"type": "public", "name": "shop", "allowedOrigins": [ORIGIN]})
        public.raise_for_status()
        mapping = {"idField": "id", "fields": {
            "title": {"type": "text", "searchable": True},
            "brand": {"type": "keyword", "filterable": True, "facetable": True},
            "price": {"type": "float", "filterable": True, "sortable": True},
        }}
        index = http.post(f"/v1/projects/{project}/indices", headers=session,
                          json={"name": "products", "mapping": mapping})
        index.raise_for_status()
        index_id = index.json()["id"]
        docs = [{"id": str(i), "title": f"phone model {i}", "brand": "Acme", "price": 10.0 * i} for i in range(1, 6)]
        http.post(f"/v1/projects/{project}/indices/{index_id}/documents", headers=session, json=docs).raise_for_status()
        profile = http.post(f"/v1/projects/{project}/indices/{index_id}/profiles", headers=session,
                            json={"name": "default", "queryFields": {"title": {"weight": 1}}})
        profile.raise_for_status()
        return {
            "session": login.json()["accessToken"],
            "public": public.json()["key"],
            "secret": tenant["key"],
            "org_id": tenant["orgId"],
            "project_id": project,
            "index_id": index_id,
            "profile_key": profile.json()["profileKey"],
        }


def config_toml(name: str, creds: dict[str, str], examples: int, seed: int) -> str:
    auth = {
        "session": f'[auth.openapi.sessionToken]\nbearer = "{creds["session"]}"\n'
        f'[auth.openapi.publicKey]\nbearer = "{creds["public"]}"\n',
        "secret": f'[auth.openapi.secretKey]\nbearer = "{creds["secret"]}"\n',
        "anonymous": "",
    }[name]
    return f"""
seed = {seed}
[checks]
enabled = false
{chr(10).join(f"{check}.enabled = true" for check in CHECKS)}
[generation]
max-examples = {examples}
no-shrink = true
[phases]
examples.enabled = false
coverage.enabled = false
stateful.enabled = false
[headers]
Origin = "{ORIGIN}"
[parameters]
"path.org_id" = "{creds['org_id']}"
"path.project_id" = "{creds['project_id']}"
"path.index_id" = "{creds['index_id']}"
"path.profile_key" = "{creds['profile_key']}"
{auth}"""


SUMMARY = re.compile(r"(\d+) generated")
SELECTED = re.compile(r"Selected:\s+(\d+)/")
TESTED = re.compile(r"Tested:\s+(\d+)")


def run_pass(name: str, base: str, creds: dict[str, str], work: Path, examples: int, seed: int) -> dict[str, Any]:
    config = work / f"{name}.toml"
    config.write_text(config_toml(name, creds, examples, seed))
    started = time.monotonic()
    proc = subprocess.run(
        [str(BIN / "schemathesis"), "--no-color", "--config-file", str(config), "run", f"{base}/openapi.json",
         "--workers", "2", "--request-timeout", "30"],
        capture_output=True, text=True, cwd=work,
    )
    output = proc.stdout + proc.stderr
    (work / f"{name}.log").write_text(output)
    generated = SUMMARY.search(output)
    selected, tested = SELECTED.search(output), TESTED.search(output)
    return {
        "pass": name,
        "exit": proc.returncode,
        "operations": int(selected.group(1)) if selected else None,
        "tested": int(tested.group(1)) if tested else None,
        "test_cases": int(generated.group(1)) if generated else None,
        "seconds": round(time.monotonic() - started, 1),
        "failures": output[output.find("FAILURES"):][:20000] if proc.returncode else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--seed", type=int, default=20240801)
    parser.add_argument("--passes", default="session:10,secret:10,anonymous:3",
                        help="NAME:EXAMPLES (examples per operation) for each pass, comma-separated")
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args()
    if not loopback_only():
        print("refusing to fuzz: interfaces other than lo exist (run under `unshare -n`)", file=sys.stderr)
        return 3
    work = Path(tempfile.mkdtemp(prefix="shopsearch-fuzz-"))
    backend = Backend(args.backend, work)
    server: subprocess.Popen[bytes] | None = None
    report: dict[str, Any] = {"backend": args.backend, "seed": args.seed, "work": str(work), "passes": []}
    try:
        env = backend.env()
        tenant = create_tenant(env)
        port = free_port()
        server_log = work / "server.log"
        with server_log.open("wb") as log:
            server = subprocess.Popen([str(BIN / "shopsearch"), "serve", "--port", str(port)],
                                      env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/health")
        creds = seed_tenant(base, tenant)
        for spec in args.passes.split(","):
            name, _, examples = spec.partition(":")
            report["passes"].append(run_pass(name, base, creds, work, int(examples or 15), args.seed))
        text = server_log.read_text(errors="replace")
        report["server_errors"] = [line for line in text.splitlines() if "unhandled error on" in line]
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
        backend.close()
        args.report.write_text(json.dumps(report, indent=1))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    ok = bool(report["passes"]) and all(p["exit"] == 0 for p in report["passes"]) and not report["server_errors"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
