"""Every shell block of README.md, run as written, in order, in one shell (issue 36 item 7).

The blocks run in a fresh temporary directory (so ``./.shopsearch`` is a fresh data directory and
whatever a block writes lands there), on a free port instead of 8000: the README sets ``PORT`` once
(``export PORT=8000``) and every other block uses ``$PORT``, so that value is the only change. Its
``./dev serve`` is what ``./dev serve`` runs once the virtualenv exists: the venv's ``shopsearch
serve`` (``.venv`` is a link to the checkout's), with its log sent to a file. Everything runs in a
network namespace holding only loopback (``unshare -n``), so no block can reach another host.

A block is left out only when the line before it says why (``<!-- not run: … -->``); the test lists
those and requires exactly them to be left out. A block followed by a ```json block (the sample
answer the README shows) must print a JSON value of the same shape: the same keys at every level,
values of the same JSON types (a string holding ``…`` stands for any string).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import ROOT, free_port

pytestmark = pytest.mark.long  # a real server and the demo catalog: collected first (tests/parallel.py)

README = ROOT / "README.md"
SHELLS = ("sh", "bash", "shell")
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
FENCE = re.compile(r"^```(\w*)\s*$")
SERVE = "./dev serve"


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    end: int  # 0-based index of the closing fence
    lang: str
    code: str
    not_run: str | None  # the reason given in the marker before it
    sample: Any = None  # the ```json block right after it, parsed


def blocks(text: str) -> list[Block]:
    lines = text.split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = lines.index("```", i + 1)
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        marker = NOT_RUN.match(previous.strip())
        block = Block(i + 1, end, match.group(1), "\n".join(lines[i + 1:end]) + "\n",
                      marker.group(1) if marker else None)
        if block.lang == "json" and found and found[-1].lang in SHELLS and \
                not any(line.strip() for line in lines[found[-1].end + 1:i]):
            found[-1].sample = json.loads(block.code)  # a sample answer: right after its block
        found.append(block)
        i = end + 1
    return found


def same_shape(sample: Any, real: Any, path: str = "$") -> list[str]:
    """Where ``real`` differs in shape from ``sample`` (keys, list lengths, JSON types)."""
    if isinstance(sample, dict):
        if not isinstance(real, dict):
            return [f"{path}: an object in the README, {type(real).__name__} in fact"]
        if set(sample) != set(real):
            return [f"{path}: keys {sorted(sample)} in the README, {sorted(real)} in fact"]
        return [d for key in sample for d in same_shape(sample[key], real[key], f"{path}.{key}")]
    if isinstance(sample, list):
        if not isinstance(real, list) or len(real) != len(sample):
            return [f"{path}: {len(sample)} items in the README, {real!r} in fact"]
        return [d for i, (s, r) in enumerate(zip(sample, real, strict=True)) for d in same_shape(s, r, f"{path}[{i}]")]
    if isinstance(sample, str):
        return [] if isinstance(real, str) else [f"{path}: a string in the README, {real!r} in fact"]
    if isinstance(sample, bool) or sample is None:
        return [] if real is sample or (isinstance(sample, bool) and isinstance(real, bool)) else \
            [f"{path}: {sample!r} in the README, {real!r} in fact"]
    if isinstance(sample, int | float):
        return [] if isinstance(real, int | float) and not isinstance(real, bool) else \
            [f"{path}: a number in the README, {real!r} in fact"]
    raise AssertionError(f"{path}: unexpected sample value {sample!r}")


def json_values(output: str) -> list[Any]:
    """The JSON objects a block printed (one a line, or pretty-printed from a ``{`` at a line's start)."""
    decoder = json.JSONDecoder()
    values = []
    for match in re.finditer(r"^\{", output, re.M):
        try:
            value, _ = decoder.raw_decode(output, match.start())
        except json.JSONDecodeError:
            continue
        values.append(value)
    return values


def test_blocks_are_found_and_only_the_marked_ones_are_left_out():
    found = [b for b in blocks(README.read_text()) if b.lang in SHELLS]
    left_out = [(b.line, b.not_run) for b in found if b.not_run]
    print("left out:", left_out)
    assert [b.not_run for b in found if b.not_run] == [
        "serves in the foreground, and runs the whole test suite (which runs this README)"]
    [marked] = [b for b in found if b.not_run]
    assert "./dev test" in marked.code  # the one that would run this test again
    assert len([b for b in found if not b.not_run]) >= 4
    assert sum(b.sample is not None for b in found) >= 3
    unmarked_markers = [line for line in README.read_text().splitlines() if "not run" in line and not NOT_RUN.match(line)]
    assert not unmarked_markers  # a misspelt marker would leave its block to run (and fail) silently


def test_one_port_variable():
    runnable = [b for b in blocks(README.read_text()) if b.lang in SHELLS and not b.not_run]
    script = "".join(b.code for b in runnable)
    assert script.count("export PORT=8000") == 1 and runnable[0].code.startswith("export PORT=8000")
    assert "8000" not in script.replace("export PORT=8000", ""), "every block uses $PORT"


def test_shapes_compare_keys_and_types():
    assert same_shape({"a": [{"b": "x_…"}], "n": 1.5}, {"a": [{"b": "x_1"}], "n": 2}) == []
    assert same_shape({"a": 1}, {"a": 1, "b": 2})  # a key the README leaves out
    assert same_shape({"a": [1]}, {"a": []}) and same_shape({"a": "s"}, {"a": 1}) and same_shape(None, {})


def test_every_block_runs_as_written_on_another_port(tmp_path: Path):
    assert shutil.which("curl"), "the README's blocks use curl (./dev test installs it)"
    assert shutil.which("unshare"), "unshare (util-linux) keeps the blocks on loopback"
    runnable = [b for b in blocks(README.read_text()) if b.lang in SHELLS and not b.not_run]
    port = free_port()
    assert port != 8000
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    parts = ["set -euo pipefail\n"]
    for n, block in enumerate(runnable):
        code = block.code.replace("export PORT=8000", f"export PORT={port}", 1)
        code = re.sub(r"^\./dev serve (.*?) &", r".venv/bin/shopsearch serve \1 >serve.log 2>&1 &", code, flags=re.M)
        parts.append(f"echo '@@block {n}'\n{code}echo '@@end {n}'\n")
    script = tmp_path / "readme.sh"
    script.write_text("".join(parts))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOPSEARCH_")}
    process = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && exec bash readme.sh"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the server the README started in the background
            os.killpg(process.pid, signal.SIGTERM)  # (a background job of a script ignores SIGINT)
        _wait_group(process.pid)
    log = (tmp_path / "serve.log").read_text() if (tmp_path / "serve.log").exists() else ""
    outputs = dict(re.findall(r"^@@block (\d+)\n(.*?)^@@end \1$", stdout, re.S | re.M))
    ran = len(outputs)
    assert process.returncode == 0 and ran == len(runnable), (
        f"block at README line {runnable[min(ran, len(runnable) - 1)].line} failed\n"
        f"stdout:\n{stdout[-4000:]}\nstderr:\n{stderr[-4000:]}\nserver log:\n{log[-3000:]}")

    for n, block in enumerate(runnable):
        if block.sample is None:
            continue
        printed = json_values(outputs[str(n)])
        assert printed, f"README line {block.line}: a sample answer is shown, nothing was printed"
        assert same_shape(block.sample, printed[-1]) == [], (block.line, printed[-1])

    everything = "".join(outputs.values())
    base = f"http://127.0.0.1:{port}"
    assert f"{base}/demo#key=ss_pk_" in stdout + stderr  # the demo's page, on this port
    answers = [v for v in json_values(everything) if "hits" in v]
    secret, storefront = answers[-2:]
    assert [h["document"]["name"] for h in secret["hits"]] == ["Apple iPhone 7 128GB"]  # "iphnoe 7": a typo
    assert [h["id"] for h in storefront["hits"]] == ["1"]
    assert storefront["facets"] == {"brand": [{"value": "Apple", "count": 1}]}
    assert re.search(r"tsk_\S+ succeeded", everything)


def _wait_group(pgid: int) -> None:
    """Until every process of the group has stopped (SIGKILL after 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return
        time.sleep(0.2)
