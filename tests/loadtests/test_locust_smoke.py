"""The Locust scenarios, headless, against a real ``shopsearch serve`` on 127.0.0.1: bounded, zero failures.

The tenant is made the documented way (``python -m loadtests.setup_tenant``: ``shopsearch tenants
create``, a public key from a signed-in session, the storefront profile, autocomplete rebuilt), then
``loadtests/locustfile.py`` runs every scenario (search, filtered and prefix search, suggest, click
and conversion events with the answers' queryIds, document uploads and deletes with the secret key,
task reads) for a few seconds. Every request must succeed (each scenario checks status and answer
shape) and each scenario must have run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.coverage import unmeasured
from tests.fixtures.server import ROOT, Server, running_server

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

RUN_SECONDS = 10
USERS = 6  # 5 shoppers and a merchant (each user class gets one before weights apply)
SCENARIOS = {"search", "search (filtered)", "search (prefix)", "suggest", "events", "documents (upload)",
             "documents (delete)", "task"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    both = request.param == "postgres"
    with running_server(postgres=both, redis=both, workers=1) as running:
        yield running


def _server_env(server: Server) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(SHOPSEARCH_DATA_DIR=str(server.data_dir), SHOPSEARCH_DATABASE_URL=server.database_url)
    return env


def run_locust(server: Server, tenant_file: Path) -> tuple[int, list[dict[str, Any]], str]:
    env = unmeasured({k: v for k, v in os.environ.items() if not k.startswith(("SHOPSEARCH_", "LOCUST_"))})
    env["LOADTEST_TENANT"] = str(tenant_file)
    command = [sys.executable, "-m", "locust", "-f", "loadtests/locustfile.py", "--headless",
               "-u", str(USERS), "-r", str(USERS), "-t", f"{RUN_SECONDS}s", "--stop-timeout", "5",
               "--json", "--only-summary", "--loglevel", "WARNING"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_SECONDS + 60)
    stats = json.loads(result.stdout) if result.stdout.strip().startswith("[") else []
    return result.returncode, stats, result.stderr[-3000:]


def test_every_scenario_runs_without_a_failure(server: Server, tmp_path: Path) -> None:
    assert server.base.startswith("http://127.0.0.1:")
    # as documented: the setup script in the server's environment, then locust with the file it wrote
    # (its --host defaults to the server the tenant was made on)
    tenant_file = tmp_path / "tenant.json"
    made = subprocess.run([sys.executable, "-m", "loadtests.setup_tenant", "--host", server.base, "--products",
                           "1000", "--out", str(tenant_file)], cwd=ROOT, env=_server_env(server),
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    assert json.loads(tenant_file.read_text())["host"] == server.base

    code, stats, log = run_locust(server, tenant_file)

    assert stats, log
    by_name = {row["name"]: row for row in stats}
    failures = {name: row["num_failures"] for name, row in by_name.items() if row["num_failures"]}
    assert not failures, (failures, log)
    assert code == 0, log
    ran = {name for name, row in by_name.items() if row["num_requests"] > 0}
    assert ran >= SCENARIOS, (SCENARIOS - ran, log)
    # real traffic: far more searches than one per scenario
    assert by_name["search"]["num_requests"] >= 20, by_name["search"]
