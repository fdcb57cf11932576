"""A pytest plugin: under pytest-xdist, tests marked ``exclusive`` run while no other worker runs one.

`./dev test` runs the suite in 2 workers. A test whose assertions bound a latency (a probe answering
within 0.25 s while a hostile search runs, a sign-in burst holding nobody up) must not share the
machine's 2 cores with another test's servers, so it waits until every other worker is between tests
and keeps them out until it ends. Two ``flock``ed files in the run's shared temp directory:

* the room: every test holds it around its setup, call and teardown - shared, or exclusive when
  marked;
* the turnstile: a test passes it on its way in; a marked test holds it from its first wait to its
  end, so ordinary tests cannot keep slipping into the room ahead of it.

Without xdist (one process) it does nothing.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exclusive: bounds a latency; runs while no other xdist worker runs a test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    shared = item.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    exclusive = item.get_closest_marker("exclusive") is not None
    with open(shared / "turnstile.lock", "a+") as turnstile, open(shared / "room.lock", "a+") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
