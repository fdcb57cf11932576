"""Recording searches and suggests: a consumer of the search event buffer.

``control_plane.search.events.SearchEvents`` hands batches to its consumers on a background thread
(every 0.5 s); this one aggregates them in memory, and a thread of its own adds the counts to the
database in one transaction every ``FLUSH_SECONDS`` (popular queries repeat: fewer rows per event).
Each serving process records the events of its own buffer once, including the last ones when it
stops (``control_plane.analytics.hooks.stop_analytics`` runs after ``SearchEvents.stop`` drained the buffer). A failed write
keeps the counts for the next one (bounded), so a short database outage loses nothing.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from control_plane.analytics import repository, store

log = logging.getLogger("shopsearch.analytics")

FLUSH_SECONDS = 2.0
MAX_BATCH_ROWS = 20_000  # written at once when this many rows are pending
MAX_PENDING_ROWS = 200_000  # dropped (logged) past this many while the database fails


class Recorder:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._lock = threading.Lock()
        self._pending = store.Aggregate()
        self._events = 0  # events in ``_pending``
        self.written = 0  # events whose counts reached the database
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, batch: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pending.add_search_events(batch)
            self._events += len(batch)
            full = len(self._pending) >= MAX_BATCH_ROWS
        if full:
            self.flush()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="analytics-flush", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_SECONDS):
            self.flush()

    def flush(self) -> None:
        """Write what is pending now."""
        with self._lock:
            if not self._pending:
                return
            try:
                with self.sessions.begin() as db:
                    repository.write(db, self._pending)
            except Exception:  # noqa: BLE001 - kept for the next write
                if len(self._pending) > MAX_PENDING_ROWS:
                    log.exception("analytics: dropping %d unwritten rows", len(self._pending))
                    self._pending, self._events = store.Aggregate(), 0
                else:
                    log.warning("analytics: write failed, kept for the next one", exc_info=True)
                return
            self._pending = store.Aggregate()
            self.written += self._events
            self._events = 0
