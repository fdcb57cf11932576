"""Search events for analytics, recorded off the request path.

``emit`` only appends to a bounded buffer; a background thread hands batches to the registered
consumers (the analytics store registers one). A slow or failing consumer never slows a search.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shopsearch.events")

Consumer = Callable[[list[dict[str, Any]]], None]


class SearchEvents:
    def __init__(self, max_buffer: int = 100_000, interval: float = 0.5) -> None:
        self._buffer: deque[dict[str, Any]] = deque(maxlen=max_buffer)
        self._consumers: list[Consumer] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.interval = interval
        self.emitted = 0
        self.delivered = 0

    def subscribe(self, consumer: Consumer) -> None:
        self._consumers.append(consumer)

    def emit(self, event: dict[str, Any]) -> None:
        self._buffer.append(event)
        self.emitted += 1

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="search-events", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.drain()

    def drain(self) -> None:
        batch: list[dict[str, Any]] = []
        while self._buffer:
            batch.append(self._buffer.popleft())
        if not batch:
            return
        for consumer in self._consumers:
            try:
                consumer(batch)
            except Exception:  # noqa: BLE001 - analytics must never break search
                log.exception("search event consumer failed")
        self.delivered += len(batch)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self.drain()
