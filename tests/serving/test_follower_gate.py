"""A follower's gate across a swap, on its own: a generation swapped in while this process held it at
the build's sequence is never searchable until caught up with the index (issue 39: a search that
checked the gate while a pass noted the swap passed with the replica still at the build's sequence,
and answered without the documents updated during the build)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from control_plane.serving.follower import Follower, SyncState

INDEX = "idx_gate"
BUILT_UPTO, INDEX_SEQ = 100, 150  # the build's sequence; the index's when the swap is seen


class _Catalog:
    def __init__(self) -> None:
        self.state: SyncState | None = None

    def sync_states(self, _db: Any) -> list[SyncState]:
        assert self.state is not None
        return [self.state]


@pytest.fixture
def fast_switching() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as the interpreter allows
    yield
    sys.setswitchinterval(before)


def test_a_swapped_in_generation_held_at_the_build_sequence_is_never_searchable(fast_switching: None) -> None:
    catalog = _Catalog()
    # the pass reads through the catalog (over the follower's own connection, here to an empty database)
    follower = Follower(sessionmaker(create_engine("sqlite://")), bridge=None, catalog=catalog)  # type: ignore[arg-type]
    follower._report = lambda taken: None  # type: ignore[method-assign]  # no database here
    follower._pool.submit = lambda *a, **k: None  # type: ignore[method-assign,assignment]  # the catch-up never runs
    follower._reported_at = time.monotonic() + 1e9  # fresh for the whole test
    building = SyncState(INDEX, 1, 1, 90, 0, 2, {"upto": BUILT_UPTO})
    swapped = SyncState(INDEX, 1, 2, INDEX_SEQ, 0, None, None)
    wrong: list[int] = []
    stop = threading.Event()

    def search() -> None:  # a search waiting at the gate for the swapped-in generation
        while not stop.is_set():
            if follower.searchable(INDEX, 2):
                wrong.append(1)

    searcher = threading.Thread(target=search)
    searcher.start()
    try:
        for _ in range(3000):
            with follower._lock:  # a pass saw the build, and its catch-up reached the build's sequence
                follower._held[INDEX] = {1: 90, 2: BUILT_UPTO}
                follower._searchable.update({(INDEX, 1), (INDEX, 2)})
                follower._building[INDEX] = 2
                follower._reopen()
            catalog.state = building
            follower._pass()
            catalog.state = swapped  # the next pass sees the swap; the replica is still at the build's
            follower._pass()
            follower._busy.clear()
    finally:
        stop.set()
        searcher.join()
    assert wrong == []
    assert not follower.searchable(INDEX, 2) and follower.searchable(INDEX, 1)
