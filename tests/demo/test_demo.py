"""``shopsearch demo`` on a fresh data directory (a real process, no server: the API runs inside the
command), then a real ``shopsearch serve`` on that directory: the printed curl, a second run against
the running server (the tenant, index and profile reused), and the demo page in headless Chromium.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, func, select
from typer.testing import CliRunner

from benchmarks.common import ROOT, free_port
from cli.main import app as cli_app
from control_plane.api_key.models import ApiKey
from control_plane.serving.follower import take_primary
from shared.settings import get_settings

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CATALOG_SIZE = len(json.loads((ROOT / "shared/datasets/bestbuy/products.json").read_text()))


def _cli() -> list[str]:
    installed = Path(sys.executable).parent / "shopsearch"
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "cli.main"]


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    env.update(SHOPSEARCH_DATA_DIR=str(data_dir), SHOPSEARCH_LOG_LEVEL="WARNING")
    return env


@contextlib.contextmanager
def _serve(data_dir: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([*_cli(), "serve", "--port", str(port), "--workers", "1"], cwd=ROOT,
                               env=_env(data_dir))
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "shopsearch serve did not start"
            time.sleep(0.2)
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The first run (a real process on a fresh data directory), then the server it points at."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"  # does not exist yet
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    first = subprocess.run([*_cli(), "demo", "--url", base, "--json"], cwd=ROOT, env=_env(data_dir),
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    with _serve(data_dir, port):
        yield {"base": base, "data_dir": data_dir, "first": json.loads(first.stdout), "stderr": first.stderr}


def test_first_run_sets_up_the_demo_shop(demo):
    first, base = demo["first"], demo["base"]
    assert first["plan"] == "enterprise"  # the largest plan
    assert first["email"] == "demo@shopsearch.test" and len(first["password"]) >= 10
    assert first["orgId"].startswith("org_") and first["projectId"].startswith("prj_")
    assert first["indexId"].startswith("idx_") and first["profileKey"].startswith("pk_")
    assert first["secretKey"].startswith("ss_sk_") and first["publicKey"].startswith("ss_pk_")
    assert (first["reused"], first["catalogLoaded"], first["serverRunning"]) == (False, True, False)
    assert first["documents"] == CATALOG_SIZE
    assert first["pageUrl"] == f"{base}/demo#key={first['publicKey']}&profile={first['profileKey']}"
    assert f"loading {CATALOG_SIZE} Best Buy products" in demo["stderr"] and "100%" in demo["stderr"]

    index = httpx.get(f"{base}/v1/projects/{first['projectId']}/indices/{first['indexId']}",
                      headers={"Authorization": f"Bearer {first['secretKey']}"}).json()
    assert index["documentCount"] == CATALOG_SIZE and index["name"] == "bestbuy"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the printed command is a curl")
def test_the_printed_curl_finds_iphones_with_facets(demo):
    result = subprocess.run(["bash", "-c", demo["first"]["curl"]], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    names = [hit["document"]["name"] for hit in answer["hits"]]
    assert names and all("iPhone" in name for name in names[:5]), names
    assert {"brand", "categories", "price"} <= set(answer["facets"])
    assert {"value": "Apple", "count": answer["facets"]["brand"][0]["count"]} == answer["facets"]["brand"][0]
    assert [r["label"] for r in answer["facets"]["price"]][0] == "Under $50"


def test_a_second_run_reuses_the_shop_through_the_running_server(demo):
    """Run again (in this process, Typer's runner), with the server up: the same tenant, index and
    profile, the catalog not loaded again, fresh keys; the human output lists them and the page URL."""
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli_app, ["demo", "--url", demo["base"]], env=_env(demo["data_dir"]))
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    first = demo["first"]
    out = result.stdout
    for value in (first["orgId"], first["projectId"], first["indexId"], first["profileKey"]):
        assert value in out
    assert "reused" in out and "Start the service first" not in out  # the server is running
    public_key = re.search(r"ss_pk_[A-Za-z0-9_-]+", out).group(0)  # type: ignore[union-attr]
    assert public_key != first["publicKey"]  # a key's secret is shown once: a new one each run
    page = re.search(r"^http://\S+/demo#key=\S+$", out, re.M).group(0)  # type: ignore[union-attr]
    assert page == f"{demo['base']}/demo#key={public_key}&profile={first['profileKey']}"
    assert "loading" not in result.stderr  # the index already holds the catalog
    demo["page"] = page

    listed = CliRunner().invoke(cli_app, ["tenants", "list", "--json"], env=_env(demo["data_dir"]))
    get_settings.cache_clear()
    assert [o["name"] for o in json.loads(listed.stdout)["items"]] == ["Demo shop"]  # one demo tenant


def test_status_of_the_running_server(demo):
    """``shopsearch status`` against the real GET /v1/status: the spec's body, the state's exit code."""
    as_json = CliRunner().invoke(cli_app, ["status", "--url", demo["base"], "--json"])
    body = json.loads(as_json.stdout)
    assert body == httpx.get(f"{demo['base']}/v1/status").json()  # the API's answer (cached 15 s), unchanged
    assert {s["name"] for s in body["services"]} == {"search", "indexing", "dashboard", "mcp"}
    assert as_json.exit_code == {"operational": 0, "degraded": 3, "down": 4}[body["status"]]
    shown = CliRunner().invoke(cli_app, ["status", "--url", demo["base"]])
    assert shown.exit_code == as_json.exit_code and f"overall: {body['status']}" in shown.stdout
    assert body["checkedAt"] in shown.stdout


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    assert CHROMIUM, "chromium is not installed: ./dev test installs it (apt-get install chromium)"
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    # the catalog's images live on a CDN: tests talk to 127.0.0.1 only
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
                  else route.abort())
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda e: errors.append(str(e)))
    yield opened
    context.close()
    assert not errors, errors


def test_the_demo_page_searches_as_you_type_with_facets(demo, page):
    page.goto(demo.get("page") or demo["first"]["pageUrl"])
    expect(page.locator("#summary")).to_contain_text(f"{CATALOG_SIZE} products")  # the empty query: all
    page.locator("#q").press_sequentially("iphone", delay=20)
    expect(page.locator("#summary")).to_contain_text("for “iphone”")
    hits = page.locator("#results .hit h2")
    expect(hits.first).to_contain_text("iPhone")
    assert all("iPhone" in name for name in hits.all_text_contents()[:5])
    expect(page.locator("#results .hit mark").first).to_have_text("iPhone")  # the highlight

    for field in ("brand", "categories", "price"):
        expect(page.locator(f"fieldset[data-field={field}] input").first).to_be_visible()
    total = int(page.locator("#summary").text_content().split()[0])  # type: ignore[union-attr]
    apple = page.locator("fieldset[data-field=brand] label", has_text="Apple")
    apple_count = int(apple.locator(".count").text_content())  # type: ignore[arg-type]
    apple.locator("input").check()
    expect(page.locator("#summary")).to_contain_text(f"{apple_count} products for “iphone”")
    assert apple_count < total
    brands = page.locator("#results .hit .meta").all_text_contents()
    assert brands and all(b.startswith("Apple") for b in brands), brands


def test_the_page_without_keys_says_how_to_get_them(demo, page):
    page.goto(f"{demo['base']}/demo")
    expect(page.locator("#setup")).to_be_visible()
    expect(page.locator("#setup")).to_contain_text("shopsearch demo")
    assert httpx.get(f"{demo['base']}/demo/static/demo.js").status_code == 200


def test_no_second_owner_of_the_shard_files(demo):
    """With no server answering at --url but one holding the data directory (``serve --workers``),
    the demo refuses before writing anything instead of running a second API on the same files."""
    lock = take_primary(demo["data_dir"])
    assert lock is not None  # the module's server runs one process, which takes no lock
    try:
        get_settings.cache_clear()
        result = CliRunner().invoke(cli_app, ["demo", "--url", f"http://127.0.0.1:{free_port()}"],
                                    env=_env(demo["data_dir"]))
    finally:
        get_settings.cache_clear()
        lock.close()
    assert result.exit_code == 1 and "does not answer at" in result.stderr and result.stdout == ""
    engine = create_engine(f"sqlite:///{demo['data_dir'] / 'shopsearch.db'}")
    try:
        with engine.connect() as db:
            keys = db.scalar(select(func.count()).select_from(ApiKey).where(ApiKey.project_id == demo["first"]["projectId"]))
    finally:
        engine.dispose()
    assert keys == 4  # two runs, two keys each: the refused run made none
