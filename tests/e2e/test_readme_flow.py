"""The README's "Try it" block, run as written by bash against a real ``shopsearch serve`` (embedded
default, a fresh data dir): tenant from the CLI with a ``.test`` address, index, upload, secret
search, sign-in, public key, profile, storefront search. Only the port and the CLI's path differ.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import ROOT, running_server

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

README = ROOT / "README.md"


def try_it_block() -> str:
    text = README.read_text()
    section = text[text.index("### Try it\n"):]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, "README has no bash block under 'Try it'"
    return match.group(1)


def _cli() -> str:
    installed = Path(sys.executable).parent / "shopsearch"
    return str(installed) if installed.exists() else f"{sys.executable} -m cli.main"


def _answers(stdout: str) -> list[dict[str, Any]]:
    """The search answers the block printed (JSON objects with ``hits``), in order."""
    found = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            value = json.loads(line)
            if "hits" in value:
                found.append(value)
    return found


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README's flow uses curl")
def test_the_readme_flow_goes_all_the_way():
    block = try_it_block()
    assert block.startswith("./dev serve &")
    with running_server() as server:
        script = block.split("\n", 1)[1]  # the server is already running
        script = script.replace("http://127.0.0.1:8000", server.base).replace(".venv/bin/shopsearch", _cli())
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
        env["SHOPSEARCH_DATA_DIR"] = str(server.data_dir)
        result = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert re.search(r"tsk_\S+ succeeded", result.stdout)
    secret, storefront = _answers(result.stdout)
    assert [h["document"]["name"] for h in secret["hits"]] == ["Apple iPhone 7 128GB"]  # "iphnoe 7"
    assert [h["id"] for h in storefront["hits"]] == ["1"]
    assert storefront["facets"] == {"brand": [{"value": "Apple", "count": 1}]}
