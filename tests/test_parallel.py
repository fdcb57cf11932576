"""The `exclusive` mark under pytest-xdist (tests.parallel.py): a marked test shares its time with
no other test, while ordinary tests do run side by side."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INNER = '''
import time, os
from pathlib import Path
import pytest

LOG = Path(os.environ["ROOM_LOG"])

def _span(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with LOG.open("a") as f:
        f.write(f"{name} {start} {time.monotonic()}\\n")

@pytest.mark.parametrize("k", range(12))
def test_ordinary(k):
    _span(f"ordinary{k}", 0.15)

@pytest.mark.exclusive
@pytest.mark.parametrize("k", range(2))
def test_marked(k):
    _span(f"exclusive{k}", 0.4)
'''


def test_a_marked_test_runs_alone_and_the_others_in_parallel(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER))
    log = tmp_path / "spans.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.parallel", "-p", "no:cacheprovider", "-n", "2",
         "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path / "test_inner.py")],
        cwd=ROOT, env={**os.environ, "ROOM_LOG": str(log), "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    spans = [(name, float(a), float(b)) for name, a, b in (line.split() for line in log.read_text().splitlines())]
    assert len(spans) == 14

    def overlap(x: tuple[str, float, float], y: tuple[str, float, float]) -> bool:
        return x[1] < y[2] and y[1] < x[2]

    marked = [s for s in spans if s[0].startswith("exclusive")]
    ordinary = [s for s in spans if s[0].startswith("ordinary")]
    assert [(m[0], o[0]) for m in marked for o in spans if o is not m and overlap(m, o)] == []
    # the ordinary ones did share the time (2 workers): the mark is what kept the others out
    assert any(overlap(a, b) for i, a in enumerate(ordinary) for b in ordinary[i + 1:])


def test_long_modules_come_first_and_exclusive_tests_last_in_their_order() -> None:
    from tests.parallel import pytest_collection_modifyitems

    class Item:
        def __init__(self, name: str, module: str, *marks: str) -> None:
            self.name, self.nodeid, self.marks = name, f"{module}::{name}", marks

        def get_closest_marker(self, name: str) -> object | None:
            return object() if name in self.marks else None

    items = [Item("a", "m1"), Item("x1", "mx"), Item("x2", "mx", "exclusive"), Item("b", "m2", "long"),
             Item("c", "m1"), Item("d", "m3", "long"), Item("x3", "mx"), Item("e", "m4"),
             Item("y", "m5", "long", "exclusive")]
    pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.name for i in items] == ["b", "d", "a", "x1", "c", "x3", "e", "y", "x2"]


SPREAD = '''
import os, time
from pathlib import Path
import pytest

LOG = Path(os.environ["ROOM_LOG"])

@pytest.mark.long
@pytest.mark.parametrize("k", range(4))
def test_long(k):
    time.sleep(0.3)
    with LOG.open("a") as f:
        f.write(f"long{k} {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.mark.parametrize("k", range(40))
def test_short(k):
    pass
'''


def test_long_tests_are_shared_by_both_workers(tmp_path: Path) -> None:
    """xdist's first hand would give one worker the first quarter of its share: every long test."""
    (tmp_path / "test_spread.py").write_text(textwrap.dedent(SPREAD))
    log = tmp_path / "workers.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.parallel", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-n", "2", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path / "test_spread.py")],
        cwd=ROOT, env={**os.environ, "ROOM_LOG": str(log), "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = [line.split()[1] for line in log.read_text().splitlines()]
    assert len(workers) == 4 and set(workers) == {"gw0", "gw1"}, workers
