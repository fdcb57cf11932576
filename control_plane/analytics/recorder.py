"""Recording searches and suggests: a consumer of the search event buffer.

``control_plane.search.events.SearchEvents`` hands batches to its consumers on a background thread
(every 0.5 s); this one aggregates each batch in memory and adds the counts to the database in one
transaction. Each serving process records the events of its own buffer once, including the last
ones when it stops (``SearchEvents.stop`` drains to the consumers). A failed write keeps the counts
for the next batch (bounded), so a short database outage loses nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from control_plane.analytics import store
from control_plane.analytics.maintenance import remember_retention
from control_plane.runtime import Runtime
from control_plane.search.service import search_runtime

log = logging.getLogger("shopsearch.analytics")

MAX_PENDING_ROWS = 200_000


class Recorder:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._lock = threading.Lock()
        self._pending = store.Aggregate()
        self.written = 0  # events whose counts reached the database

    def __call__(self, batch: list[dict[str, Any]]) -> None:
        with self._lock:
            aggregate = store.Aggregate()
            aggregate.add_search_events(batch)
            self._pending.merge(aggregate)
            if not self._pending:
                return
            try:
                with self.runtime.sessions.begin() as db:
                    store.write(db, self._pending)
            except Exception:
                if len(self._pending) > MAX_PENDING_ROWS:
                    log.exception("analytics: dropping %d unwritten rows", len(self._pending))
                    self._pending = store.Aggregate()
                else:
                    log.warning("analytics: write failed, kept for the next batch", exc_info=True)
                return
            self._pending = store.Aggregate()
            self.written += len(batch)


def recorder(runtime: Runtime) -> Recorder | None:
    return runtime.extras.get("analytics")


def start_analytics(runtime: Runtime) -> None:
    """Subscribe the recorder to the process's search events (a startup hook)."""
    if recorder(runtime) is None:
        runtime.extras["analytics"] = rec = Recorder(runtime)
        search_runtime(runtime).events.subscribe(rec)
    remember_retention(runtime)


def flush_analytics(runtime: Runtime, timeout: float = 10.0) -> None:
    """Write every event emitted so far (tests, benchmarks): drain the buffer, then wait for a
    batch the background thread may have taken meanwhile."""
    events = search_runtime(runtime).events
    target = events.emitted
    events.drain()
    deadline = time.monotonic() + timeout
    while events.delivered < target and time.monotonic() < deadline:
        time.sleep(0.005)
