"""The load-test commands the READMEs document parse with the real parsers, and their locustfiles load.

Locust is never imported here (it monkey-patches the interpreter with gevent): each documented
``locust`` command runs as ``locust … --list``, which parses every option, imports the locustfiles
and lists their users without sending a request.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from loadtests import setup_tenant
from tests.fixtures.coverage import unmeasured
from tests.fixtures.server import ROOT

DOCS = [ROOT / "loadtests" / "README.md", ROOT / "docs" / "benchmarks.md"]


def documented() -> list[tuple[str, list[str]]]:
    """``python -m loadtests.setup_tenant …`` and ``locust …`` lines of the bash blocks."""
    found = []
    for path in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if "locust" not in line and "loadtests.setup_tenant" not in line:
                    continue
                words = shlex.split(line, comments=True)
                words = [w for w in words if "=" not in w or w.startswith("-")]  # drop VAR=value prefixes
                for i, word in enumerate(words):
                    if word.endswith("python") and words[i + 1:i + 3] == ["-m", "loadtests.setup_tenant"]:
                        found.append((str(path.relative_to(ROOT)), ["setup_tenant", *words[i + 3:]]))
                    elif word.endswith("locust"):
                        found.append((str(path.relative_to(ROOT)), ["locust", *words[i + 1:]]))
    return found


RUNS = documented()


def check(argv: list[str]) -> None:
    program, *args = argv
    if program == "setup_tenant":
        setup_tenant.parser().parse_args(args)
        return
    env = unmeasured({k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "LOADTEST_"))})
    result = subprocess.run([sys.executable, "-m", "locust", *args, "--list"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    listed = set(result.stdout.split())
    assert {"Shopper", "Merchant"} & listed, result.stdout


def test_the_readmes_document_both_steps() -> None:
    programs = {(where, argv[0]) for where, argv in RUNS}
    assert {(str(path.relative_to(ROOT)), program) for path in DOCS for program in ("setup_tenant", "locust")} <= programs


@pytest.mark.parametrize(("where", "argv"), RUNS, ids=[f"{w}: {' '.join(a)[:70]}" for w, a in RUNS])
def test_documented_command_parses(where: str, argv: list[str]) -> None:
    check(argv)


@pytest.mark.parametrize("argv", [
    ["setup_tenant", "--prodcts", "10"], ["locust", "-f", "loadtests/locustfile.py", "--hedless", "-t", "1s"],
    ["locust", "-f", "loadtests/nowhere.py", "--headless", "-t", "1s"],
])
def test_the_check_refuses_a_wrong_command(argv: list[str]) -> None:
    with pytest.raises((SystemExit, AssertionError)):  # argparse exits; a failed locust run asserts
        check(argv)
