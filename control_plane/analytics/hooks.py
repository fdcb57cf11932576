"""The recorder's part in the app's start and stop, and a flush for tests and benchmarks."""

from __future__ import annotations

import time

from control_plane.analytics.maintenance import remember_retention
from control_plane.runtime import Runtime


def start_analytics(runtime: Runtime) -> None:
    """Start writing what the recorder (subscribed to the search events when the app was built)
    counts (a startup hook)."""
    runtime.analytics.start()
    remember_retention(runtime.sessions, runtime.settings.analytics_retention_days)


def stop_analytics(runtime: Runtime) -> None:
    """Write the last counts (a shutdown hook, after ``stop_search`` drained the event buffer)."""
    runtime.analytics.stop()


def flush_analytics(runtime: Runtime, timeout: float = 10.0) -> None:
    """Write every event emitted so far (tests, benchmarks): drain the buffer, wait for a batch the
    background thread may have taken meanwhile, then write."""
    events = runtime.search.events
    target = events.emitted
    events.drain()
    deadline = time.monotonic() + timeout
    while events.delivered < target and time.monotonic() < deadline:
        time.sleep(0.005)
    runtime.analytics.flush()
