"""Fuzz every operation of a real ``shopsearch serve`` with schemathesis, inside a loopback-only
network namespace (so a fuzzed feed URL plus ``feed/sync`` can reach no other host).

Run by ``tests/fuzz/test_openapi_fuzz.py`` as
``unshare -n sh -c 'ip link set lo up && exec python -m tests.fuzz.runner --backend sqlite --report R'``.
It refuses to run where any network interface other than ``lo`` exists. On ``postgres`` the
server uses the machine's PostgreSQL through its Unix socket (a fresh database) and a private
``redis-server`` on the namespace's loopback.

Passes: ``session`` (a signed-in owner; the storefront with a public key and an allowed Origin),
``secret`` (a full-access secret key) and ``anonymous`` (no credentials). Every check, positive and
negative data, the coverage, fuzzing and stateful phases; the coverage phase runs each operation in
the pass that reaches it furthest (:func:`reached_by`). Exit status 0 when every pass found no
failure and the server logged no unhandled error; the JSON report has the figures.
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
import traceback
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures.coverage import unmeasured
from tests.fixtures.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PG_SOCKET_DIR = os.environ.get("SHOPSEARCH_FUZZ_PG_SOCKET", "/var/run/postgresql")
ORIGIN = "https://shop.example"
PASSWORD = "fuzz-password-0123"


def loopback_only() -> bool:
    return [name for _, name in socket.if_nameindex()] == ["lo"]


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
    documents, and a saved profile (its handle is the storefront's ``profile_key``). Each route that
    deletes one of these works on a spare instead (a second index, session, key and profile), so a
    fuzzed delete cannot take from the rest of the run what it tests with."""
    with httpx.Client(base_url=base, timeout=120) as http:
        def login() -> httpx.Response:
            answer = http.post("/v1/auth/login", json={"email": tenant["email"], "password": PASSWORD})
            answer.raise_for_status()
            return answer

        signed_in = login()
        spare_session = login().json()["accessToken"]
        session = {"Authorization": f"Bearer {signed_in.json()['accessToken']}"}
        families = http.get("/v1/auth/sessions", headers={"Authorization": f"Bearer {spare_session}"})
        spare_family = next(f["familyId"] for f in families.json()["items"] if f["current"])
        project = tenant["projectId"]
        keys = f"/v1/projects/{project}/api-keys"
        public = http.post(keys, headers=session, json={"type": "public", "name": "shop", "allowedOrigins": [ORIGIN]})
        public.raise_for_status()
        spare_key = http.post(keys, headers=session, json={"type": "secret", "name": "spare", "access": "read"})
        spare_key.raise_for_status()
        mapping = {"idField": "id", "fields": {
            "title": {"type": "text", "searchable": True, "suggest": True},
            "brand": {"type": "keyword", "filterable": True, "facetable": True},
            "price": {"type": "float", "filterable": True, "sortable": True},
        }}
        indices = f"/v1/projects/{project}/indices"
        index = http.post(indices, headers=session, json={"name": "products", "mapping": mapping})
        index.raise_for_status()
        index_id = index.json()["id"]
        spare_index = http.post(indices, headers=session, json={"name": "spare", "mapping": mapping})
        spare_index.raise_for_status()
        docs = [{"id": str(i), "title": f"phone model {i}", "brand": "Acme", "price": 10.0 * i} for i in range(1, 6)]
        http.post(f"{indices}/{index_id}/documents", headers=session, json=docs).raise_for_status()
        profiles = f"{indices}/{index_id}/profiles"
        profile = http.post(profiles, headers=session, json={"name": "default", "queryFields": {"title": {"weight": 1}}})
        profile.raise_for_status()
        spare_profile = http.post(profiles, headers=session, json={"name": "spare", "queryFields": {"title": {"weight": 1}}})
        spare_profile.raise_for_status()
        suggest = http.get(f"{indices}/{index_id}/suggestions/config", headers=session)
        suggest.raise_for_status()
        return {
            "session": signed_in.json()["accessToken"],
            "public": public.json()["key"],
            "secret": tenant["key"],
            "org_id": tenant["orgId"],
            "user_id": tenant["userId"],
            "project_id": project,
            "index_id": index_id,
            "profile_key": profile.json()["profileKey"],
            "suggest_key": suggest.json()["suggestKey"],
            "spare_family": spare_family,
            "spare_key": spare_key.json()["id"],
            "spare_index": spare_index.json()["id"],
            "spare_profile": spare_profile.json()["id"],
        }


# Routes that delete what the passes test with: each is given a spare to delete (see seed_tenant).
SPARES = {
    "DELETE /v1/auth/sessions/{family_id}": ("family_id", "spare_family"),
    "DELETE /v1/projects/{project_id}/api-keys/{key_id}": ("key_id", "spare_key"),
    "DELETE /v1/projects/{project_id}/indices/{index_id}": ("index_id", "spare_index"),
    "DELETE /v1/projects/{project_id}/indices/{index_id}/profiles/{profile_id}": ("profile_id", "spare_profile"),
}


# schemathesis' default answers to schema-valid and to schema-invalid requests, with this service's
# documented ones: 400 for a rule the document lists beyond the schema (hooks.py holds each such 400
# to the inputs it lists), 413 for more documents or events than a request may hold (CONTRACT §0).
POSITIVE = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
NEGATIVE = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
HOOKS = Path(__file__).with_name("hooks.py")


def _operations(openapi: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{method.upper()} {path}", operation) for path, item in openapi["paths"].items()
            for method, operation in item.items()]


def checked_beyond_schema(openapi: dict[str, Any]) -> list[str]:
    """The operations whose 400 answer lists rules beyond their schema."""
    return [name for name, operation in _operations(openapi)
            if operation["responses"].get("400", {}).get("x-checked-beyond-schema")]


# Which pass's credentials reach an operation furthest, best first.
REACH = {
    "secret": lambda schemes: "secretKey" in schemes,
    "session": lambda schemes: bool(schemes & {"sessionToken", "publicKey"}),
    "anonymous": lambda schemes: not schemes,
}


def reached_by(openapi: dict[str, Any], name: str, passes: list[str]) -> list[str]:
    """The operations this pass covers: schemathesis' coverage phase (a request for every boundary of
    every schema) runs once per operation over the passes of a run, in the pass that reaches it
    furthest, and once per body schema (PUT rules/{id} takes POST rules' body)."""
    reached, bodies = [], set()
    for op_name, operation in _operations(openapi):
        schemes = {scheme for requirement in operation.get("security", []) for scheme in requirement}
        owner = next((p for p in REACH if p in passes and REACH[p](schemes)), None)
        body = json.dumps(operation.get("requestBody"), sort_keys=True) if "requestBody" in operation else None
        if owner == name and op_name not in COVERED_ELSEWHERE and (body is None or body not in bodies):
            reached.append(op_name)
            bodies.add(body)
    return reached


# An operation whose body is another's, nested: `rule` is POST rules' body and the rest is POST search's
# (the coverage of those two took most of this one's 30 s); the fuzzing phase still draws for it.
COVERED_ELSEWHERE = {"POST /v1/projects/{project_id}/indices/{index_id}/rules/test"}


def config_toml(name: str, creds: dict[str, str], examples: int, seed: int, openapi: dict[str, Any],
                passes: list[str], coverage_phase: bool = True) -> str:
    beyond_schema = checked_beyond_schema(openapi)
    covered = reached_by(openapi, name, passes)
    auth = {
        "session": f'[auth.openapi.sessionToken]\nbearer = "{creds["session"]}"\n'
        f'[auth.openapi.publicKey]\nbearer = "{creds["public"]}"\n',
        "secret": f'[auth.openapi.secretKey]\nbearer = "{creds["secret"]}"\n',
        "anonymous": "",
    }[name]
    spares = "".join(
        f'[[operations]]\ninclude-name = "{operation}"\nparameters = {{ "path.{param}" = "{creds[spare]}" }}\n'
        for operation, (param, spare) in SPARES.items()
    )
    semantic = "".join(
        f'[[operations]]\ninclude-name = "{operation}"\n'
        f'checks.positive_data_acceptance.expected-statuses = {json.dumps([*POSITIVE, "400"])}\n'
        for operation in beyond_schema
    )
    others = [op_name for op_name, _ in _operations(openapi) if op_name not in covered]
    coverage = f"[[operations]]\ninclude-name = {json.dumps(others)}\nphases.coverage.enabled = false\n"
    return f"""
seed = {seed}
hooks = "{HOOKS}"
[checks]
enabled = true
positive_data_acceptance.expected-statuses = {json.dumps(POSITIVE)}
negative_data_rejection.expected-statuses = {json.dumps(NEGATIVE)}
[generation]
max-examples = {examples}
no-shrink = true
[phases]
examples.enabled = true
coverage.enabled = {str(coverage_phase).lower()}
fuzzing.enabled = true
stateful.enabled = true
[headers]
Origin = "{ORIGIN}"
[parameters]
"path.org_id" = "{creds['org_id']}"
"path.project_id" = "{creds['project_id']}"
"path.index_id" = "{creds['index_id']}"
"path.profile_key" = "{creds['profile_key']}"
"path.suggest_key" = "{creds['suggest_key']}"
"path.user_id" = "{creds['user_id']}"
{auth}
{spares}
{semantic}
{coverage}"""


SUMMARY = re.compile(r"(\d+) generated")
SELECTED = re.compile(r"Selected:\s+(\d+)/")
TESTED = re.compile(r"Tested:\s+(\d+)")


def run_pass(name: str, base: str, creds: dict[str, str], work: Path, examples: int, seed: int,
             passes: list[str], coverage_phase: bool, extra: list[str]) -> dict[str, Any]:
    config = work / f"{name}.toml"
    openapi = httpx.get(f"{base}/openapi.json", timeout=120).json()
    config.write_text(config_toml(name, creds, examples, seed, openapi, passes, coverage_phase))
    started = time.monotonic()
    proc = subprocess.run(
        [str(BIN / "schemathesis"), "--no-color", "--config-file", str(config), "run", f"{base}/openapi.json",
         "--workers", "1", "--request-timeout", "30", *extra],
        capture_output=True, text=True, cwd=work, env=unmeasured(os.environ),  # it runs no service code
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
    parser.add_argument("--no-coverage", action="store_true",
                        help="skip the coverage phase (the run's costliest: a request per boundary of each schema)")
    parser.add_argument("--schemathesis-args", default="", help="more arguments for `schemathesis run` (debugging)")
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
        wait_http(f"{base}/health", seconds=180)  # a loaded machine starts the server slowly
        creds = seed_tenant(base, tenant)
        specs = [spec.partition(":") for spec in args.passes.split(",")]
        names = [name for name, _, _ in specs]
        for name, _, examples in specs:
            report["passes"].append(run_pass(name, base, creds, work, int(examples or 15), args.seed, names,
                                             not args.no_coverage, args.schemathesis_args.split()))
        text = server_log.read_text(errors="replace")
        report["server_errors"] = [line for line in text.splitlines() if "unhandled error on" in line]
    except Exception:
        report["error"] = traceback.format_exc()[-4000:]  # setup failed: the test shows why
        raise
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
