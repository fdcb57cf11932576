"""``cli/output.py``: the one module the CLI prints through (no database needed)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from cli.main import app as cli_app
from cli.output import (
    EXIT_CODES_HELP,
    EXIT_DEGRADED,
    EXIT_DOWN,
    EXIT_FAILURE,
    EXIT_USAGE,
    LOCAL_URL,
    JsonOption,
    emit,
    fail,
    failures,
    service_url,
    table,
)
from shared.errors import ErrorCode, ServiceError, validation
from shared.settings import get_settings

TASK_ID, INDEX_ID = "tsk_0123456789abcdef0123", "idx_0123456789abcdef0123"  # as shared.ids.new_id makes them


def _app(body) -> typer.Typer:  # type: ignore[no-untyped-def]
    app = typer.Typer()
    app.command()(body)
    app.command("other")(lambda: None)  # two commands: the first is a subcommand, not the root
    return app


def test_id_columns_are_never_cut_even_when_narrow():
    rendered = table("taskId", "indexId", "type", "details",
                     rows=[[TASK_ID, INDEX_ID, "documents.upsert", "x" * 200]], ids=("taskId", "indexId"))
    console = Console(width=60, record=True)
    console.print(rendered)
    text = console.export_text()
    assert TASK_ID in text and INDEX_ID in text


def test_emit_wraps_lists_in_items_and_prints_plain_lines():
    def body(as_json: JsonOption = False) -> None:
        emit([{"id": "a"}], as_json=as_json, human="a [not markup]")

    app = _app(body)
    assert json.loads(CliRunner().invoke(app, ["body", "--json"]).stdout) == {"items": [{"id": "a"}]}
    assert CliRunner().invoke(app, ["body"]).stdout == "a [not markup]\n"


def test_fail_is_one_line_on_stderr_and_exit_1():
    def body() -> None:
        fail("it broke")

    result = CliRunner().invoke(_app(body), ["body"])
    assert result.exit_code == 1
    assert result.stdout == "" and result.stderr == "error: it broke\n"


def test_failures_turn_errors_into_one_line_and_keep_exits():
    def service_error() -> None:
        with failures():
            raise validation("Bad input", [{"path": "email", "message": "not an email"}])

    def unexpected() -> None:
        with failures():
            raise OSError("disk full")

    def exits() -> None:
        with failures():
            raise typer.Exit(3)

    def not_found() -> None:
        with failures():
            raise ServiceError(ErrorCode.NOT_FOUND, "Index not found")

    runner = CliRunner()
    result = runner.invoke(_app(service_error), ["service-error"])
    assert (result.exit_code, result.stderr) == (1, "error: Bad input (email: not an email)\n")
    result = runner.invoke(_app(unexpected), ["unexpected"])
    assert (result.exit_code, result.stderr) == (1, "error: OSError: disk full\n")
    assert runner.invoke(_app(exits), ["exits"]).exit_code == 3
    assert runner.invoke(_app(not_found), ["not-found"]).stderr.startswith("error:")


def test_a_usage_error_exits_2():
    assert CliRunner().invoke(cli_app, ["tasks", "list"]).exit_code == 2  # PROJECT_ID missing
    assert CliRunner().invoke(cli_app, ["tenants", "list", "--no-such-option"]).exit_code == 2


def test_every_read_command_takes_json():
    for args in (["tenants", "list"], ["tenants", "show"], ["tasks", "list"], ["tasks", "wait"],
                 ["index", "reindex"], ["support", "impersonation-code"], ["tenants", "create"]):
        assert "--json" in CliRunner().invoke(cli_app, [*args, "--help"], env={"COLUMNS": "200"}).stdout, args


def test_service_url_prefers_the_option_then_public_url_then_local(monkeypatch):
    get_settings.cache_clear()
    monkeypatch.delenv("SHOPSEARCH_PUBLIC_URL", raising=False)
    try:
        assert service_url(None) == LOCAL_URL == "http://127.0.0.1:8000"
        monkeypatch.setenv("SHOPSEARCH_PUBLIC_URL", "https://search.example.com/")
        get_settings.cache_clear()
        assert service_url(None) == "https://search.example.com"
        assert service_url("http://127.0.0.1:9000/") == "http://127.0.0.1:9000"
    finally:
        get_settings.cache_clear()


def test_exit_codes_are_the_documented_ones():
    assert (EXIT_FAILURE, EXIT_USAGE, EXIT_DEGRADED, EXIT_DOWN) == (1, 2, 3, 4)
    for text in ("0 success", "1 failure", "2 usage error", "3 degraded, 4 down"):
        assert text in EXIT_CODES_HELP


def test_table_cells_may_be_styled_text():
    rendered = table("Service", "State", rows=[["search", Text("degraded", style="yellow")]])
    console = Console(width=40, record=True)
    console.print(rendered)
    assert "degraded" in console.export_text()
