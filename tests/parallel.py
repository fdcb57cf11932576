"""A pytest plugin for running the suite in pytest-xdist workers (`./dev test` runs 2).

``long``: a module of tests taking tens of seconds each (real server processes, a Ray cluster, a
fuzzer). They are collected first, and handed out two at a time (``SCHEDULE_CHUNK``), so that both
workers start on them and finish together, instead of one worker running the last long test while
the other has nothing left. ``exclusive`` tests are collected last, by themselves (not their
modules' other tests).

``exclusive``: a test whose assertions bound a latency (a probe answering within 0.25 s while a
hostile search runs, a sign-in burst holding nobody up) must not share the machine's 2 cores with
another test's servers, so its call waits until every other worker is between tests and keeps them
out until it ends. Its setup and teardown (starting and stopping its servers: a third of the
exclusive tests' time) run beside other tests, as any test's do. Two ``flock``ed files in the run's
shared temp directory:

* the room: every test holds it shared around its setup, call and teardown; a marked test holds it
  exclusively around its call;
* the turnstile: a test passes it on its way in; a marked test holds it from its call's first wait
  to its end, so ordinary tests cannot keep slipping into the room ahead of it.

Without xdist (one process) ``exclusive`` does nothing.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from typing import TextIO

import pytest

#: tests handed to an xdist worker at a time (``--maxschedchunk``): xdist's own first hand is a quarter
#: of a worker's share, in collection order, so one worker got every long test and the other, done
#: with the short ones, reached the exclusive tests while the first still had long ones queued, and
#: each marked test waited for one of them. Measured on 2026-11-29: the marked tests' calls (waits
#: included) fell from ~300 s to ~150 s, the run's wall time stayed within the day's drift (the long
#: tests now share the cores with each other instead of with short ones).
SCHEDULE_CHUNK = 2


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exclusive: bounds a latency; runs while no other xdist worker runs a test")
    config.addinivalue_line("markers", "long: tens of seconds per test; collected first")
    if getattr(config.option, "maxschedchunk", "absent") is None:  # xdist, not set on the command line
        config.option.maxschedchunk = SCHEDULE_CHUNK


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # stable: the long modules first, the ``exclusive`` tests last, each group in its own order. A
    # marked test waits for the test the other worker is running to end, idle meanwhile: among the
    # first tests that meant a fuzzer's two minutes. Its module's other tests stay where they were:
    # when marked tests took their whole modules to the end, their unmarked long tests (a sign-in
    # load, a Ray cluster's) were what the marked ones waited for; a module fixture is set up once
    # more for its marked test instead (a server's start: ~5 s, beside the other worker's tests).
    items.sort(key=lambda item: (item.get_closest_marker("exclusive") is not None,
                                 item.get_closest_marker("long") is None))


_ROOM = pytest.StashKey[tuple[TextIO, TextIO]]()  # (turnstile, room) of the test running in this worker


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    shared = item.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    with open(shared / "turnstile.lock", "a+") as turnstile, open(shared / "room.lock", "a+") as room:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        item.stash[_ROOM] = (turnstile, room)
        try:
            yield
        finally:
            del item.stash[_ROOM]
            fcntl.flock(room, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    held = item.stash.get(_ROOM, None)
    if held is None or item.get_closest_marker("exclusive") is None:
        yield
        return
    turnstile, room = held
    # leave the room before queueing at the turnstile: another marked test holding the turnstile
    # waits for every shared hold to go
    fcntl.flock(room, fcntl.LOCK_UN)
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(room, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(room, fcntl.LOCK_SH)  # back to shared for the teardown
        fcntl.flock(turnstile, fcntl.LOCK_UN)
