"""The JavaScript client's own tests (``node --test`` in ``clients/js``) against a real ``shopsearch
serve`` holding a storefront (:mod:`tests.clients.shop`), on both backends. The node suite reads
the shop from ``SHOPSEARCH_TEST_SHOP``; here every one of its tests must run and pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.shop import make_shop
from tests.fixtures.server import ROOT, running_server

pytestmark = pytest.mark.long

CLIENT = ROOT / "clients" / "js"
NODE = shutil.which("node")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shop(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    postgres = request.param == "postgres"
    with running_server(postgres=postgres, redis=postgres, workers=1) as server:
        yield make_shop(server)


def test_node_suite_against_a_real_server(shop):
    assert NODE, "node is not installed (Node.js 18+ runs the client's tests)"
    built = CLIENT / "dist" / "shopsearch.mjs"
    assert built.exists() and (CLIENT / "node_modules").exists(), (
        "the client is not built: ./dev test runs scripts/build-js.sh test (npm ci, npm run build)")
    env = {**os.environ, "SHOPSEARCH_TEST_SHOP": json.dumps(shop)}
    files = sorted(str(p.relative_to(CLIENT)) for p in (CLIENT / "test").glob("*.test.mjs"))
    result = subprocess.run([NODE, "--test", "--test-reporter=tap", "--test-concurrency=1", *files], cwd=CLIENT,
                            env=env, capture_output=True, text=True, timeout=600)
    tail = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, tail
    counts = {name: int(n) for name, n in re.findall(r"^# (tests|pass|fail|skipped|cancelled|todo) (\d+)$",
                                                      result.stdout, re.M)}
    assert counts["tests"] >= 20 and counts["pass"] == counts["tests"], counts
    assert counts["skipped"] == counts["fail"] == counts["cancelled"] == counts["todo"] == 0, tail
