"""The recorder: counts reach the database on their own (no explicit flush), and a failed write
keeps them for the next one."""

from __future__ import annotations

import secrets
import time
from datetime import timedelta
from typing import Any

from control_plane.analytics import store
from control_plane.analytics.recorder import Recorder
from control_plane.analytics.service import report
from tests.analytics.helpers import Shop


def _searches(shop: Shop, index_id: str) -> int:
    with shop.app.state.runtime.sessions() as db:
        return int(report(db, index_id, store.today() - timedelta(days=1), store.today())["totals"]["searches"])


def _event(index_id: str, q: str = "tv") -> dict[str, Any]:
    return {"type": "search", "indexId": index_id, "q": q, "total": 3, "at": f"{store.today().isoformat()}T12:00:00+00:00"}


def test_counts_are_written_without_an_explicit_flush(shop: Shop):
    """The recorder's own thread writes what it was handed within ``FLUSH_SECONDS``."""
    index_id = f"idx_{secrets.token_hex(10)}"
    rec = shop.app.state.runtime.analytics
    rec([_event(index_id)] * 3)  # a batch handed over by the search event buffer
    deadline = time.monotonic() + 15
    while _searches(shop, index_id) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _searches(shop, index_id) == 3


class _FlakySessions:
    def __init__(self, real: Any) -> None:
        self.real, self.failing = real, True

    def begin(self) -> Any:
        if self.failing:
            raise ConnectionError("database unreachable")
        return self.real.begin()


def test_a_failed_write_is_kept_for_the_next(shop: Shop):
    index_id = f"idx_{secrets.token_hex(10)}"
    sessions = _FlakySessions(shop.app.state.runtime.sessions)
    recorder = Recorder(sessions)  # type: ignore[arg-type]
    recorder([_event(index_id), _event(index_id, "radio")])
    recorder.flush()
    assert recorder.written == 0 and _searches(shop, index_id) == 0
    recorder([_event(index_id)])
    sessions.failing = False
    recorder.flush()
    assert recorder.written == 3 and _searches(shop, index_id) == 3
    recorder.flush()  # nothing pending: nothing added twice
    assert _searches(shop, index_id) == 3


def test_a_report_is_one_snapshot_while_recorders_commit(shop: Shop, monkeypatch: Any):
    """A recorder's write committing between the report's statements shows in all of them or in none:
    the totals count exactly the searches the top queries show (they once counted more)."""
    from control_plane.analytics import repository

    index_id = f"idx_{secrets.token_hex(10)}"
    sessions = shop.app.state.runtime.sessions

    def record(*events: dict[str, Any]) -> None:
        aggregate = store.Aggregate()
        aggregate.add_search_events(events)
        with sessions.begin() as db:
            repository.write(db, aggregate)

    record(_event(index_id, "kettle"))
    real_top = repository.top_queries
    written: list[int] = []

    def top_then_a_commit(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        rows = real_top(*args, **kwargs)
        if not written:  # another process's recorder commits now, between the report's reads
            record(_event(index_id, "kettle"), _event(index_id, "kettle 7"))
            written.append(1)
        return rows

    monkeypatch.setattr(repository, "top_queries", top_then_a_commit)
    day = store.today()
    with sessions() as db:
        first = report(db, index_id, day, day)
    assert written and first["totals"]["searches"] == 1
    assert [(q["query"], q["count"]) for q in first["topQueries"]] == [("kettle", 1)]
    assert first["series"][0]["searches"] == 1
    with sessions() as db:
        later = report(db, index_id, day, day)
    assert later["totals"]["searches"] == 3
    assert sorted((q["query"], q["count"]) for q in later["topQueries"]) == [("kettle", 2), ("kettle 7", 1)]
