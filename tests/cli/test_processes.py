"""The CLI as real processes (the installed ``shopsearch`` entry point) on a fresh embedded data
directory, one per kind of behaviour: migrating a fresh directory, JSON on stdout, an unknown id, a
task no runner picks up, shell completion, status's exit code, the worker's signal handling.

``serve`` and ``demo`` run as processes in tests/demo; Typer's runner covers the details in
test_commands.py and test_status.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, insert

from control_plane.db import utcnow
from control_plane.task.models import Task
from shared.ids import new_id
from tests.cli.stub_status import status_body, status_server
from tests.fixtures.server import ROOT

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)


def _cli() -> list[str]:
    installed = Path(sys.executable).parent / "shopsearch"
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "cli.main"]


@pytest.fixture(scope="module")
def shopsearch(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(SHOPSEARCH_DATA_DIR=str(tmp_path_factory.mktemp("cli") / "data"), SHOPSEARCH_LOG_LEVEL="WARNING")

    def run(*args: str, code: int = 0, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*_cli(), *args], cwd=ROOT, env={**env, **(extra_env or {})},
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == code, (args, result.stdout, result.stderr)
        return result

    run.env = env  # type: ignore[attr-defined]
    return run


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def test_operator_commands_as_processes(shopsearch):
    """A process costs ~3 s of imports: one per kind of behaviour (the rest runs through Typer's runner;
    ``--version`` and ``tenants plan`` there too)."""
    # a fresh directory: migrated first; the plan and the key come back as JSON on stdout
    created = _json(shopsearch("tenants", "create", "--email", "proc@example.com", "--password", "a-long-password",
                               "--org", "Proc", "--project", "P", "--plan", "starter", "--with-key", "read", "--json"))
    assert created["plan"] == "starter" and created["key"].startswith("ss_sk_")
    failed = shopsearch("tasks", "wait", "tsk_nope", code=1)  # an unknown id: one line on stderr, exit 1
    assert failed.stdout == "" and failed.stderr == "error: task tsk_nope not found\n"
    # no server, so no task runner: waiting on an enqueued task says so
    task_id = new_id("tsk")
    engine = create_engine(f"sqlite:///{Path(shopsearch.env['SHOPSEARCH_DATA_DIR']) / 'shopsearch.db'}")
    try:
        with engine.begin() as db:
            db.execute(insert(Task).values(id=task_id, project_id=created["projectId"], index_id=new_id("idx"),
                                           type="reindex", status="enqueued", payload={}, details={},
                                           cancel_requested=False, attempts=0, created_at=utcnow()))
    finally:
        engine.dispose()
    stalled = shopsearch("tasks", "wait", task_id, "--stall-after", "0.5", "--timeout", "1.5", code=1)
    said = " ".join(stalled.stderr.split())
    assert "is still enqueued after" in said and "no task runner is running" in said, said
    completed = shopsearch(extra_env={"_SHOPSEARCH_COMPLETE": "complete_bash", "COMP_WORDS": "shopsearch st",
                                      "COMP_CWORD": "1"})
    assert completed.stdout.split() == ["status"]


def test_status_as_a_process(shopsearch):
    with status_server() as (url, answer):
        answer["body"] = status_body(search="down")
        down = shopsearch("status", "--url", url, "--json", code=4)  # the state's exit code, the body as JSON
        assert json.loads(down.stdout) == status_body(search="down")


def test_worker_starts_and_stops_on_a_signal(shopsearch):
    process = subprocess.Popen([*_cli(), "worker", "--concurrency", "1"], cwd=ROOT, env=shopsearch.env,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        lines = []
        for line in process.stderr:
            lines.append(line)
            if "task runner" in line and "started" in line:
                break
        assert any("started" in line for line in lines), lines
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
