"""The operator CLI through Typer's test runner, on both backends: plans, unknown ids, waiting on a
task no runner picks up, version, help with exit codes, shell completion.

``status`` is in test_status.py; ``demo`` and ``serve`` in tests/demo; ``worker`` (it runs until a
signal) as a real process in test_processes.py; ``tenants``/``tasks``/``index`` basics in
tests/org/test_tenants_cli.py and tests/task/test_cli.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import cli.tasks
from cli.main import COMMANDS as LISTED
from cli.main import app as cli_app
from cli.main import load_command
from control_plane.db import utcnow
from control_plane.org.models import Organization
from control_plane.task.models import Task
from shared.ids import new_id
from shared.settings import get_settings
from tests.factories import runtime_of
from tests.index.helpers import create_index, make_tenant

runner = CliRunner()


@pytest.fixture
def run(settings):  # type: ignore[no-untyped-def]
    """``shopsearch ARGS`` in this process, on the backend's database (and Redis)."""
    env = {"SHOPSEARCH_DATABASE_URL": settings.resolved_database_url, "SHOPSEARCH_DATA_DIR": str(settings.data_dir)}
    if settings.redis_url:
        env.update(SHOPSEARCH_REDIS_URL=settings.redis_url, SHOPSEARCH_REDIS_PREFIX=settings.redis_prefix)

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        get_settings.cache_clear()
        try:
            return runner.invoke(cli_app, list(args), env=env)
        finally:
            get_settings.cache_clear()

    return invoke


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        out.append((*path, name))
        if hasattr(command, "commands"):  # a group (Typer builds its own click classes)
            out += _commands(command, (*path, name))
    return out


COMMANDS = _commands(typer.main.get_command(cli_app))  # type: ignore[arg-type]


def test_every_command_is_there_and_has_help():
    assert {("status",), ("demo",), ("tenants", "plan"), ("tenants", "create"), ("tasks", "wait"),
            ("index", "reindex"), ("serve",), ("worker",), ("db", "upgrade"),
            ("support", "impersonation-code")} <= set(COMMANDS)
    for path in COMMANDS:
        result = runner.invoke(cli_app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.stdout


def test_the_command_list_shows_each_commands_own_help_without_importing_it():
    for name, (_, _, short) in LISTED.items():  # the list's text is the command's own
        command = load_command(name)
        own = (command.short_help or command.help or "").split("\n\n")[0]
        assert " ".join(own.split()) == short, name
    # a fresh interpreter: `--help` and completing a command's name import no command's module
    code = ("import sys\nfrom cli.main import app, COMMANDS\n"
            "for argv, env in (([\"--help\"], {}), ([], {\"_SHOPSEARCH_COMPLETE\": \"complete_bash\", "
            "\"COMP_WORDS\": \"shopsearch ta\", \"COMP_CWORD\": \"1\"})):\n"
            "    import os; os.environ.update(env)\n"
            "    try:\n        app(argv, prog_name=\"shopsearch\")\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m, _, _ in COMMANDS.values() if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "120"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "[]", done.stdout
    assert "tasks" in lines[-2] and "tenants" not in lines[-2]  # the completion, after the help
    assert "Operate on indices (operators)." in done.stdout


def test_version_and_exit_codes_in_help():
    version = runner.invoke(cli_app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("shopsearch ") and version.stdout.strip() != "shopsearch"
    shown = runner.invoke(cli_app, ["--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.stdout.split())
    assert "Exit codes: 0 success; 1 failure" in text and "2 usage error" in text and "3 degraded, 4 down" in text
    assert "--install-completion" in text and "--show-completion" in text


def test_shell_completion_completes_commands_and_plans():
    def complete(words: str, cword: int) -> list[str]:
        result = runner.invoke(cli_app, [], prog_name="shopsearch", env={
            "_SHOPSEARCH_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
        assert result.exit_code == 0, result.output
        return result.stdout.split()

    assert complete("shopsearch ten", 1) == ["tenants"]
    assert complete("shopsearch tenants pl", 2) == ["plan"]
    assert complete("shopsearch tenants plan org_x ", 4) == ["free", "starter", "pro", "enterprise"]
    script = runner.invoke(cli_app, ["--show-completion", "bash"], prog_name="shopsearch")
    assert script.exit_code == 0 and "_SHOPSEARCH_COMPLETE=complete_bash" in script.stdout


def _create(run, *extra: str) -> dict:  # type: ignore[no-untyped-def]
    result = run("tenants", "create", "--email", f"plan-{secrets.token_hex(5)}@example.com", "--password",
                 "a-long-password", "--org", "Plans", "--project", "P", "--with-key", "full", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _plan_in_db(app, org_id: str) -> str:  # type: ignore[no-untyped-def]
    with runtime_of(app).sessions() as db:
        org = db.get(Organization, org_id)
        assert org is not None
        return org.plan


def test_create_with_a_plan_then_change_it(app, client, run, settings):
    created = _create(run, "--plan", "pro")
    assert created["plan"] == "pro" and _plan_in_db(app, created["orgId"]) == "pro"
    assert _create(run)["plan"] == "free"  # the default
    index = client.post(f"/v1/projects/{created['projectId']}/indices", headers={"Authorization": f"Bearer {created['key']}"},
                        json={"name": "p", "mapping": {"idField": "id", "fields": {"name": {"type": "text"}}}}).json()
    before = runtime_of(app).epochs.current(index["id"])

    changed = run("tenants", "plan", created["orgId"], "enterprise", "--json")
    assert changed.exit_code == 0, changed.output
    assert json.loads(changed.stdout) == {"id": created["orgId"], "plan": "enterprise"}
    assert _plan_in_db(app, created["orgId"]) == "enterprise"
    shown = run("tenants", "show", created["orgId"], "--json")
    assert json.loads(shown.stdout)["plan"] == "enterprise"
    if settings.redis_url:  # epochs shared through Redis: the server resolves the new quota at once
        assert runtime_of(app).epochs.current(index["id"]) > before

    table = run("tenants", "plan", created["orgId"], "starter")
    assert table.exit_code == 0 and table.stdout.strip() == f"{created['orgId']} plan starter"
    assert _plan_in_db(app, created["orgId"]) == "starter"


def test_plan_refuses_unknown_orgs_and_plans(app, run):
    unknown = run("tenants", "plan", "org_does_not_exist", "pro")
    assert unknown.exit_code == 1 and unknown.stdout == ""
    assert unknown.stderr.startswith("error:") and "not found" in unknown.stderr.lower()
    created = _create(run)
    bad = run("tenants", "plan", created["orgId"], "platinum")
    assert bad.exit_code == 2 and "platinum" in bad.stderr
    assert _plan_in_db(app, created["orgId"]) == "free"  # nothing half-applied
    assert run("tenants", "create", "--email", "x@example.com", "--password", "a-long-password", "--org", "O",
               "--project", "P", "--plan", "platinum").exit_code == 2


def test_unknown_ids_exit_1_with_a_clear_message(app, client, run):
    tenant = make_tenant(app)
    for args, message in [
        (("tasks", "list", "prj_does_not_exist", "--json"), "project prj_does_not_exist not found"),
        (("tasks", "wait", "tsk_does_not_exist", "--json"), "task tsk_does_not_exist not found"),
        (("index", "reindex", tenant.project_id, "idx_does_not_exist"), "not found"),
        (("tenants", "show", "org_does_not_exist"), "not found"),
        (("support", "impersonation-code", "org_does_not_exist"), "not found"),
    ]:
        result = run(*args)
        assert result.exit_code == 1, (args, result.output)
        assert result.stdout == "" and result.stderr.startswith("error:") and message in result.stderr.lower(), args
    assert json.loads(run("tasks", "list", tenant.project_id, "--json").stdout) == {"items": []}  # known, empty


def _text(output: str) -> str:
    return " ".join(output.split())


def test_wait_says_why_a_task_stays_enqueued(app, client, run, monkeypatch):
    """Runners are seen by their heartbeats (alive) and their leases (busy); the session app's runner,
    paused, is alive but takes nothing."""
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    other = create_index(client, tenant, name="other")
    task_runner = runtime_of(app).task_runner
    with task_runner.paused():
        queued = run("index", "reindex", tenant.project_id, index["id"], "--json")
        assert queued.exit_code == 0, queued.output
        task_id = json.loads(queued.stdout)["taskId"]

        waited = run("tasks", "wait", task_id, "--stall-after", "0.5", "--timeout", "1.5")
        assert waited.exit_code == 1
        said = _text(waited.stderr)
        assert f"task {task_id} is still enqueued after" in said
        assert re.search(r"\d+ task runner\(s\) alive, 0 busy, none has taken it yet", said), said
        assert f"error: task {task_id} still enqueued after 2s" in said

        reindexed = run("index", "reindex", tenant.project_id, other["id"], "--wait", "--stall-after", "0.5",
                        "--timeout", "1.5")
        assert reindexed.exit_code == 1 and "none has taken it yet" in _text(reindexed.stderr)

        # a runner holding a live lease on another task is busy
        with runtime_of(app).sessions.begin() as db:
            busy = Task(id=new_id("tsk"), project_id=tenant.project_id, index_id=new_id("idx"), type="reindex",
                        status="processing", lease_owner="runner-elsewhere",
                        lease_expires_at=utcnow() + timedelta(seconds=60))
            db.add(busy)
        try:
            busy_wait = run("tasks", "wait", task_id, "--stall-after", "0.5", "--timeout", "1.5")
            assert busy_wait.exit_code == 1
            assert re.search(r"task runner\(s\) alive, (all|1) busy", _text(busy_wait.stderr)), busy_wait.stderr
        finally:
            with runtime_of(app).sessions.begin() as db:
                row = db.get(Task, busy.pk)
                assert row is not None
                row.status, row.lease_owner, row.lease_expires_at = "canceled", None, None

        # no heartbeat: no runner at all (the real case, a process on a fresh directory: test_processes.py)
        monkeypatch.setattr(cli.tasks, "live_runners", lambda db: 0)
        none = run("tasks", "wait", task_id, "--stall-after", "0.5", "--timeout", "1.5")
        assert none.exit_code == 1 and "no task runner is running" in _text(none.stderr)
        monkeypatch.undo()

    done = run("tasks", "wait", task_id, "--json")  # the runner is back (and claims within the default 10 s)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["status"] == "succeeded" and "still enqueued" not in done.stderr


def test_support_code_and_db_upgrade(app, run):
    created = _create(run)
    code = run("support", "impersonation-code", created["orgId"], "--json")
    assert code.exit_code == 0, code.output
    assert json.loads(code.stdout)["expiresInSeconds"] > 0
    upgraded = run("db", "upgrade")
    assert upgraded.exit_code == 0 and upgraded.stdout.startswith("database at head")
