"""``shopsearch demo`` on a fresh data directory (a real process, no server: the API runs inside the
command), then a real ``shopsearch serve`` on that directory: the printed curl, a second run against
the running server (the tenant, index and profile reused). The page itself: test_demo_page.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy import create_engine, func, select
from typer.testing import CliRunner

from cli.demo import MAPPING, _fits, model_of
from cli.main import app as cli_app
from control_plane.api_key.models import ApiKey
from control_plane.serving.follower import take_primary
from shared.settings import get_settings
from tests.demo.conftest import demo_env as _env
from tests.fixtures.ports import free_port
from tests.fixtures.server import ROOT

CATALOG_SIZE = len(json.loads((ROOT / "shared/datasets/bestbuy/products.json").read_text()))


def test_first_run_sets_up_the_demo_shop(demo):
    first, base = demo["first"], demo["base"]
    assert first["plan"] == "enterprise"  # the largest plan
    assert first["email"] == "demo@shopsearch.test" and len(first["password"]) >= 10
    assert first["orgId"].startswith("org_") and first["projectId"].startswith("prj_")
    assert first["indexId"].startswith("idx_") and first["profileKey"].startswith("pk_")
    assert first["secretKey"].startswith("ss_sk_") and first["publicKey"].startswith("ss_pk_")
    assert (first["reused"], first["catalogLoaded"], first["serverRunning"]) == (False, True, False)
    assert first["documents"] == CATALOG_SIZE
    assert first["suggestKey"].startswith("sk_")
    assert first["pageUrl"] == (f"{base}/demo#key={first['publicKey']}&profile={first['profileKey']}"
                                f"&suggest={first['suggestKey']}")
    assert f"loading {CATALOG_SIZE} Best Buy products" in demo["stderr"] and "100%" in demo["stderr"]

    index = httpx.get(f"{base}/v1/projects/{first['projectId']}/indices/{first['indexId']}",
                      headers={"Authorization": f"Bearer {first['secretKey']}"}).json()
    assert index["documentCount"] == CATALOG_SIZE and index["name"] == "bestbuy"


def test_the_printed_curl_finds_iphones_with_facets(demo):
    assert shutil.which("curl"), "the printed command is a curl: ./dev test installs it (scripts/ensure-tools.sh)"
    result = subprocess.run(["bash", "-c", demo["first"]["curl"]], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    names = [hit["document"]["name"] for hit in answer["hits"]]
    assert names and all(name.startswith("Apple - iPhone") for name in names[:5]), names  # phones before cases
    models = [model_of(name) for name in names]
    assert len(set(models)) == len(models), models  # one hit per model: colours are not eight places
    assert {"brand", "hierarchicalCategories", "price"} <= set(answer["facets"])
    assert [n["path"] for n in answer["facets"]["hierarchicalCategories"]] == ["Cell Phones"]  # a tree
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
    assert page == (f"{demo['base']}/demo#key={public_key}&profile={first['profileKey']}"
                    f"&suggest={first['suggestKey']}")
    assert "loading" not in result.stderr  # the index already holds the catalog
    demo["page"] = page

    listed = CliRunner().invoke(cli_app, ["tenants", "list", "--json"], env=_env(demo["data_dir"]))
    get_settings.cache_clear()
    assert [o["name"] for o in json.loads(listed.stdout)["items"]] == ["Demo shop"]  # one demo tenant


def test_an_older_demo_index_is_replaced_not_reused():
    """An index an older demo made (no category paths, no model) does not fit: ``ensure_index``
    replaces it; one with the demo's mapping (and the server's defaults added) fits."""
    assert _fits({"idField": "id", "fields": {name: {**spec, "retrievable": True} for name, spec in MAPPING["fields"].items()}})
    older = {name: spec for name, spec in MAPPING["fields"].items() if name not in ("model", "hierarchicalCategories")}
    assert not _fits({"idField": "id", "fields": older})
    assert not _fits({"idField": "id", "fields": {**MAPPING["fields"], "brand": {"type": "keyword", "searchable": True}}})
    assert model_of("Apple - iPhone 7 128GB - Black (Verizon)") == "Apple - iPhone 7 128GB"
    assert model_of("Samsung - Wall Charger") == "Samsung - Wall Charger"


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


def test_no_second_owner_of_the_shard_files(demo):
    """With no server answering at --url but one holding the data directory (``serve --workers``),
    the demo refuses before writing anything instead of running a second API on the same files."""
    def key_count() -> int:
        engine = create_engine(f"sqlite:///{demo['data_dir'] / 'shopsearch.db'}")
        try:
            with engine.connect() as db:
                return int(db.scalar(select(func.count()).select_from(ApiKey)
                                     .where(ApiKey.project_id == demo["first"]["projectId"])) or 0)
        finally:
            engine.dispose()

    before = key_count()  # two a run, however many runs the module's other tests made
    assert before >= 2 and before % 2 == 0, before
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
    assert key_count() == before  # the refused run made none


def test_a_shop_page_reads_when_to_retry(demo):
    """A refused storefront answer's Retry-After is readable by the page's script (CORS exposes it)."""
    url = demo.get("page") or demo["first"]["pageUrl"]
    key = parse_qs(urlsplit(url).fragment)["key"][0]
    answer = httpx.post(f"{demo['base']}/v1/multi-search", json={"queries": [{"profileKey": "pk_x", "q": ""}]},
                        headers={"Authorization": f"Bearer {key}", "Origin": demo["shopOrigin"]})
    assert answer.headers["access-control-allow-origin"] == demo["shopOrigin"]
    assert "retry-after" in answer.headers["access-control-expose-headers"].lower()
