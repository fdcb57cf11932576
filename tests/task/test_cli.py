import json

from typer.testing import CliRunner

import cli.database
from cli.main import app as cli_app
from tests.index.helpers import create_index, make_tenant, products, upload


def test_tasks_and_reindex_commands(app, client, monkeypatch):
    monkeypatch.setattr(cli.database, "get_settings", lambda: app.state.runtime.settings)
    tenant = make_tenant(app)
    index = create_index(client, tenant)
    task = upload(client, tenant, index["id"], products(5))
    runner = CliRunner()
    listed = runner.invoke(cli_app, ["tasks", "list", tenant.project_id, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [t["taskId"] for t in json.loads(listed.output)["items"]] == [task["taskId"]]
    filtered = runner.invoke(cli_app, ["tasks", "list", tenant.project_id, "--status", "failed", "--json"])
    assert json.loads(filtered.output) == {"items": []}
    table = runner.invoke(cli_app, ["tasks", "list", tenant.project_id])
    assert table.exit_code == 0 and "taskId" in table.output
    waited = runner.invoke(cli_app, ["tasks", "wait", task["taskId"]])
    assert waited.exit_code == 0 and "succeeded" in waited.output
    waited = runner.invoke(cli_app, ["tasks", "wait", task["taskId"], "--json"])
    assert waited.exit_code == 0 and json.loads(waited.stdout)["status"] == "succeeded"
    assert runner.invoke(cli_app, ["tasks", "wait", "tsk_missing"]).exit_code == 1
    reindexed = runner.invoke(cli_app, ["index", "reindex", tenant.project_id, index["id"], "--wait", "--json"])
    assert reindexed.exit_code == 0, reindexed.output
    assert '"status": "succeeded"' in reindexed.output
    missing = runner.invoke(cli_app, ["index", "reindex", tenant.project_id, "idx_missing"])
    assert missing.exit_code == 1 and missing.stderr.startswith("error:") and missing.stdout == ""
    elsewhere = runner.invoke(cli_app, ["index", "reindex", make_tenant(app).project_id, index["id"]])
    assert elsewhere.exit_code == 1  # an index is found in its own project only
    queued = runner.invoke(cli_app, ["index", "reindex", tenant.project_id, index["id"], "--json"])
    assert queued.exit_code == 0, queued.output
    assert json.loads(queued.stdout)["taskId"].startswith("tsk_")
