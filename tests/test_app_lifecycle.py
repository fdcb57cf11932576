"""The app under test is started once per backend: a test's own client neither starts it again nor
stops it (tests/fixtures/app.py), so production code keeps no count of how often it was entered."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import runtime_of
from tests.fixtures.app import StartedAppClient


def test_a_tests_own_client_does_not_restart_the_app(app):
    runtime = runtime_of(app)
    shards, runner = runtime.shards, runtime.task_runner
    assert shards is not None and runner is not None
    for make in (TestClient, StartedAppClient):
        with make(app) as client:
            assert client.get("/ready").status_code == 200
        assert (runtime.shards, runtime.task_runner) == (shards, runner)  # neither replaced nor stopped
    with TestClient(app) as client:
        assert client.get("/ready").status_code == 200  # still served after the clients left
