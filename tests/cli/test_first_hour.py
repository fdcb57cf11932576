"""Operator commands as a newcomer meets them (issue 36): they use the service's data directory or
fail saying where they looked, and their tables fit 80 columns without cutting a value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.factories import make_account, make_project
from tests.index.helpers import create_index, make_tenant

ROOT = Path(__file__).resolve().parents[2]


def _shopsearch(*args: str, cwd: Path, env: dict[str, str] | None = None, columns: int = 80
                ) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    clean.update(env or {}, COLUMNS=str(columns), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=120)


def test_operator_commands_from_another_folder_fail_and_create_nothing(tmp_path):
    for args in (("tenants", "list"), ("tasks", "list", "prj_x"), ("projects", "list"), ("support",
                                                                                         "impersonation-code", "org_x")):
        result = _shopsearch(*args, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert "no shopsearch database at" in result.stderr and str(tmp_path) in result.stderr
        assert list(tmp_path.iterdir()) == [], args  # no data directory made


def test_data_dir_option_names_the_services_database(tmp_path):
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = _shopsearch("db", "upgrade", cwd=tmp_path, env={"SHOPSEARCH_DATA_DIR": str(data)})  # sets a service up
    assert made.returncode == 0, made.stderr
    listed = _shopsearch("--data-dir", str(data), "tenants", "list", "--json", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"items": []}
    assert list(elsewhere.iterdir()) == []


def _env(settings) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {"SHOPSEARCH_DATABASE_URL": settings.resolved_database_url, "SHOPSEARCH_DATA_DIR": str(settings.data_dir)}
    if settings.redis_url:
        env.update(SHOPSEARCH_REDIS_URL=settings.redis_url, SHOPSEARCH_REDIS_PREFIX=settings.redis_prefix)
    return env


def test_tables_at_80_columns_keep_every_id_whole(app, client, settings, tmp_path):
    account = make_account(app, org_name="An organization with a rather long name for a small terminal")
    project = make_project(app, account, name="a project name long enough to need wrapping somewhere")
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    upload = client.post(tenant.url(index["id"], "/documents"), json=[{"id": "a", "name": "x"}], headers=tenant.headers)
    assert upload.status_code == 202
    env = _env(settings)
    outputs = {
        "tenants list": _shopsearch("tenants", "list", cwd=tmp_path, env=env),
        "tenants show": _shopsearch("tenants", "show", account.org_id, cwd=tmp_path, env=env),
        "projects list": _shopsearch("projects", "list", "--org", account.org_id, cwd=tmp_path, env=env),
        "tasks list": _shopsearch("tasks", "list", tenant.project_id, cwd=tmp_path, env=env),
        "help": _shopsearch("--help", cwd=tmp_path, env=env),
    }
    for name, result in outputs.items():
        assert result.returncode == 0, (name, result.stderr)
        assert "…" not in result.stdout, (name, result.stdout)
        assert max(len(line) for line in result.stdout.splitlines()) <= 80, (name, result.stdout)
    assert account.org_id in outputs["tenants list"].stdout
    assert project in outputs["tenants show"].stdout and project in outputs["projects list"].stdout
    tasks = outputs["tasks list"].stdout
    assert upload.json()["taskId"] in tasks and "{" not in tasks  # details as words, not JSON
    assert "<bool>" not in outputs["help"].stdout and "--data-dir" in outputs["help"].stdout
