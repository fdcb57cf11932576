"""The machine's state file: what several serving processes without Redis share (epochs, revocations,
rate limits). Two StateFile objects on one path stand for two processes (each has its own connections)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from control_plane.epochs import bump_index_epoch, index_epoch
from control_plane.ratelimit import RateLimiter
from control_plane.sharedstate import FileState, MemoryState, make_shared_state
from control_plane.statefile import StateFile
from shared.errors import ServiceError
from shared.settings import Settings


def test_epochs_and_revocations_cross_processes(tmp_path: Path) -> None:
    one, two = FileState(StateFile(tmp_path / "state.db")), FileState(StateFile(tmp_path / "state.db"))
    assert index_epoch(two, "idx_a") == 0
    assert bump_index_epoch(one, "idx_a") == 1
    assert bump_index_epoch(two, "idx_a") == 2
    assert index_epoch(one, "idx_a") == 2 and index_epoch(two, "idx_b") == 0
    assert not two.is_revoked("key", "k1")
    one.revoke("key", "k1", 60)
    assert two.is_revoked("key", "k1")
    two.set("short", b"v", 1)
    assert one.get("short") == b"v"
    with two.file.connection() as db:
        db.execute("UPDATE kv SET expires = ? WHERE key = 'short'", (time.time() - 1,))
    assert one.get("short") is None
    one.delete("revoked:key:k1")
    assert not two.is_revoked("key", "k1")


def test_limits_hold_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    fixed = [RateLimiter(None, "p:", strategy="fixed", file=StateFile(path)) for _ in range(2)]
    for n in range(5):
        fixed[n % 2].hit("5/minute", "search", "prj_1")
    with pytest.raises(ServiceError) as refused:
        fixed[1].hit("5/minute", "search", "prj_1")
    assert refused.value.code == "RATE_LIMITED" and int(refused.value.headers["Retry-After"]) >= 1
    fixed[0].hit("5/minute", "search", "prj_2")  # another identifier has its own count

    moving = [RateLimiter(None, "p:", file=StateFile(path)) for _ in range(2)]
    for n in range(3):
        moving[n % 2].hit("3/minute", "login", "1.2.3.4")
    with pytest.raises(ServiceError):
        moving[0].hit("3/minute", "login", "1.2.3.4")

    attempts = RateLimiter(None, "a:", strategy="fixed", file=StateFile(path))
    reservation = attempts.reserve("1/minute", "mail@x")
    reservation.give_back()  # a success is no failed attempt: the next one passes
    attempts.reserve("1/minute", "mail@x")
    with pytest.raises(ServiceError):
        attempts.reserve("1/minute", "mail@x")


def test_state_follows_the_deployment(tmp_path: Path) -> None:
    assert isinstance(make_shared_state(Settings(data_dir=tmp_path)), MemoryState)
    assert isinstance(make_shared_state(Settings(data_dir=tmp_path, serving_processes=2)), FileState)


def test_limits_in_one_process_count_without_timer_threads() -> None:
    import threading

    before = threading.active_count()
    fixed, moving = RateLimiter(None, "p:", strategy="fixed"), RateLimiter(None, "p:")
    for _ in range(5):
        fixed.hit("5/minute", "search", "prj_1")
    with pytest.raises(ServiceError) as refused:
        fixed.hit("5/minute", "search", "prj_1")
    assert int(refused.value.headers["Retry-After"]) >= 1
    for _ in range(3):
        moving.hit("3/minute", "login", "1.2.3.4")
    with pytest.raises(ServiceError):
        moving.hit("3/minute", "login", "1.2.3.4")
    reservation = fixed.reserve("1/minute", "mail@x")
    reservation.give_back()
    fixed.reserve("1/minute", "mail@x")
    with pytest.raises(ServiceError):
        fixed.reserve("1/minute", "mail@x")
    assert threading.active_count() == before  # counted inline, expired lazily
