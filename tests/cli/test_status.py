"""``shopsearch status``: GET /v1/status over HTTP, as a table or ``--json``, exit code by state."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from cli.main import app as cli_app
from tests.cli.stub_status import status_body, status_server

runner = CliRunner()


@pytest.fixture(scope="module")
def stub():  # type: ignore[no-untyped-def]
    with status_server() as (url, answer):
        yield url, answer


def test_operational_as_a_table_and_as_json(stub):
    url, answer = stub
    answer.update(status=200, body=status_body())
    shown = runner.invoke(cli_app, ["status", "--url", url + "/"])
    assert shown.exit_code == 0, shown.output
    assert "overall: operational" in shown.stdout and "2026-11-24T08:00:00Z" in shown.stdout
    for name in ("search", "indexing", "dashboard", "mcp"):
        assert name in shown.stdout
    as_json = runner.invoke(cli_app, ["status", "--url", url, "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == status_body()  # the API's body, untouched
    assert answer["paths"][-1] == "/v1/status"


@pytest.mark.parametrize(("indexing", "search", "code"), [("degraded", "operational", 3), ("degraded", "down", 4)])
def test_degraded_and_down_exit_3_and_4(stub, indexing, search, code):
    url, answer = stub
    answer.update(status=200, body=status_body(indexing=indexing, search=search))
    shown = runner.invoke(cli_app, ["status", "--url", url])
    assert shown.exit_code == code
    assert f"overall: {answer['body']['status']}" in shown.stdout and "degraded" in shown.stdout
    as_json = runner.invoke(cli_app, ["status", "--url", url, "--json"])
    assert as_json.exit_code == code and json.loads(as_json.stdout)["status"] == answer["body"]["status"]


def test_rate_limited_and_odd_answers_exit_1_with_one_line(stub):
    url, answer = stub
    answer.update(status=429, body={"error": {"code": "RATE_LIMITED", "message": "slow down"}})
    limited = runner.invoke(cli_app, ["status", "--url", url, "--json"])
    assert limited.exit_code == 1 and limited.stdout == ""
    assert limited.stderr.startswith("error:") and "429" in limited.stderr
    answer.update(status=200, body={"unexpected": True})
    odd = runner.invoke(cli_app, ["status", "--url", url])
    assert odd.exit_code == 1 and "did not answer a status body" in odd.stderr


def test_no_server_exits_1_and_says_where_it_looked():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    result = runner.invoke(cli_app, ["status", "--url", f"http://127.0.0.1:{port}", "--timeout", "2"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no answer from") and f"127.0.0.1:{port}" in result.stderr
