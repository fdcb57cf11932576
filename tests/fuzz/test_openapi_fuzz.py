"""Fuzz every OpenAPI operation of a real ``shopsearch serve`` over HTTP with schemathesis, with a
tenant's credentials and without, inside a loopback-only network namespace (tests/fuzz/runner.py):
every check, positive and negative data, the coverage, fuzzing and stateful phases.

Bounded for CI: a fixed seed, a fixed number of examples per operation and pass, no shrinking.
Fails (never skips) where ``unshare``/``ip`` are missing: the fuzzer must not reach another host.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

ROOT = Path(__file__).resolve().parents[2]
# (backend, runner arguments): the three passes on the embedded default, with every phase; one
# signed-in pass on PostgreSQL + Redis without the coverage phase (the same requests every run, and two
# thirds of the time: the random draws of the fuzzing phase find what differs between the backends).
# Every check, positive and negative data. About 2 minutes and 40 s on an idle machine (the CI budget:
# more examples per operation with --passes, e.g. `python -m tests.fuzz.runner --passes session:50`).
RUNS = [("sqlite", "--passes session:4,secret:3,anonymous:2"), ("postgres", "--passes session:3 --no-coverage")]


def test_a_loopback_only_namespace_can_be_made():
    assert shutil.which("unshare") and shutil.which("ip"), "unshare and ip (util-linux, iproute2) are needed"
    probe = "ip link set lo up && python3 -c 'import socket; print(socket.if_nameindex())'"
    out = subprocess.run(["unshare", "-n", "sh", "-c", probe], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[(1, 'lo')]"


@pytest.mark.parametrize(("backend", "arguments"), RUNS, ids=[run[0] for run in RUNS])
def test_fuzz_every_operation(backend, arguments, tmp_path):
    report_path = tmp_path / "report.json"
    passes = arguments.split("--passes ")[1].split()[0]
    runner = f"{sys.executable} -m tests.fuzz.runner --backend {backend} {arguments} --report {report_path}"
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {runner}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,  # a loaded machine takes 3x an idle one's
    )
    assert report_path.exists(), proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert "error" not in report, report["error"]
    operations = _operation_count()
    for fuzz_pass in report["passes"]:
        name = fuzz_pass["pass"]
        assert fuzz_pass["failures"] == "", f"{name}: {fuzz_pass['failures'][:6000]}"
        assert fuzz_pass["exit"] == 0, f"{name}: schemathesis exited {fuzz_pass['exit']}"
        assert fuzz_pass["operations"] == operations, f"{name}: selected {fuzz_pass['operations']} of {operations}"
        # an operation whose few drawn cases were all duplicates counts as untested by schemathesis
        assert fuzz_pass["tested"] >= operations - 2, f"{name}: tested {fuzz_pass['tested']} of {operations}"
        assert fuzz_pass["test_cases"] and fuzz_pass["test_cases"] >= operations
    assert [p["pass"] for p in report["passes"]] == [spec.partition(":")[0] for spec in passes.split(",")]
    assert report["server_errors"] == []
    assert proc.returncode == 0, proc.stderr[-3000:]


def _operation_count() -> int:
    from control_plane.app import create_app
    from shared.settings import Settings

    app = create_app(Settings(data_dir=Path("/nonexistent-fuzz-count")))
    return sum(len(item) for item in app.openapi()["paths"].values())
