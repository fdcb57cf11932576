"""The machine's state file: what several serving processes without Redis share (epochs, revocations,
rate limits). Two StateFile objects on one path stand for two processes (each has its own connections)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from control_plane.search.cache import AnswerCache
from control_plane.state import (
    Epochs,
    FileState,
    MemoryState,
    RateLimiter,
    RedisState,
    Revocations,
    StateFile,
    open_state,
)
from control_plane.state.statefile import FileAnswers
from shared.errors import ServiceError
from shared.settings import Settings


def test_epochs_and_revocations_cross_processes(tmp_path: Path) -> None:
    one, two = FileState(StateFile(tmp_path / "state.db")), FileState(StateFile(tmp_path / "state.db"))
    assert Epochs(two).current("idx_a") == 0
    assert Epochs(one).bump("idx_a") == 1
    assert Epochs(two).bump("idx_a") == 2
    assert Epochs(one).current("idx_a") == 2 and Epochs(two).current("idx_b") == 0
    assert not Revocations(two).is_revoked("key", "k1")
    Revocations(one).revoke("key", "k1", 60)
    assert Revocations(two).is_revoked("key", "k1")
    two.set("short", b"v", 1)
    assert one.get("short") == b"v"
    with two.file.connection() as db:
        db.execute("UPDATE kv SET expires = ? WHERE key = 'short'", (time.time() - 1,))
    assert one.get("short") is None
    one.delete("revoked:key:k1")
    assert not Revocations(two).is_revoked("key", "k1")


def test_limits_hold_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    fixed = [RateLimiter(FileState(StateFile(path)), "p:", strategy="fixed") for _ in range(2)]
    for n in range(5):
        fixed[n % 2].hit("5/minute", "search", "prj_1")
    with pytest.raises(ServiceError) as refused:
        fixed[1].hit("5/minute", "search", "prj_1")
    assert refused.value.code == "RATE_LIMITED" and int(refused.value.headers["Retry-After"]) >= 1
    fixed[0].hit("5/minute", "search", "prj_2")  # another identifier has its own count

    moving = [RateLimiter(FileState(StateFile(path)), "p:") for _ in range(2)]
    for n in range(3):
        moving[n % 2].hit("3/minute", "login", "1.2.3.4")
    with pytest.raises(ServiceError):
        moving[0].hit("3/minute", "login", "1.2.3.4")

    attempts = RateLimiter(FileState(StateFile(path)), "a:", strategy="fixed")
    reservation = attempts.reserve("1/minute", "mail@x")
    reservation.give_back()  # a success is no failed attempt: the next one passes
    attempts.reserve("1/minute", "mail@x")
    with pytest.raises(ServiceError):
        attempts.reserve("1/minute", "mail@x")


def test_state_follows_the_deployment(tmp_path: Path) -> None:
    assert isinstance(open_state(Settings(data_dir=tmp_path)), MemoryState)
    assert isinstance(open_state(Settings(data_dir=tmp_path, serving_processes=2)), FileState)


def test_limits_in_one_process_count_without_timer_threads() -> None:
    import threading

    before = threading.active_count()
    fixed, moving = RateLimiter(MemoryState(), "p:", strategy="fixed"), RateLimiter(MemoryState(), "p:")
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


def test_processes_pass_each_other_computed_answers(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    one, two = (AnswerCache(shared=FileAnswers(StateFile(path))) for _ in range(2))
    key = AnswerCache.key("idx_a", 3, 1, "v1", {"q": "lamp"}, [])
    assert two.get(key) is None and two.misses == 1
    one.put(key, b'{"hits":[1]', 1)
    assert two.get(key) == (b'{"hits":[1]', 1) and two.shared_hits == 1
    assert two.get(key) == (b'{"hits":[1]', 1) and two.hits == 1  # kept in the second process from then on
    other_epoch = AnswerCache.key("idx_a", 4, 1, "v1", {"q": "lamp"}, [])
    assert one.get(other_epoch) is None  # a moved epoch is another key: nothing older is served

    alone = AnswerCache()  # one process: nothing shared
    assert alone.get(key) is None


def test_shared_answers_expire_and_stay_bounded(tmp_path: Path) -> None:
    shared = FileAnswers(StateFile(tmp_path / "state.db"), max_entries=5, ttl_seconds=60)
    for n in range(12):
        shared.put(bytes([n]) * 16, b"{}", n)
    with shared.file.connection() as db:
        db.execute("UPDATE answers SET expires = ? WHERE key = ?", (time.time() - 1, bytes([11]) * 16))
    assert shared.get(bytes([11]) * 16) is None  # expired
    shared.sweep()
    (count,) = shared.file.connection().execute("SELECT count(*) FROM answers").fetchone()
    assert count == 5
    assert shared.get(bytes([10]) * 16) == (b"{}", 10) and shared.get(bytes([0]) * 16) is None  # the oldest went


def test_a_locked_state_file_is_a_miss_not_a_failure(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "state.db"
    shared, other = FileAnswers(StateFile(path)), FileAnswers(StateFile(path))
    other.file.connection().execute("PRAGMA busy_timeout=50")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another process holding the file's lock
    try:
        other.put(b"n" * 16, b"{}", 0)  # could not write: no error, nothing shared
        assert other.get(b"n" * 16) is None
        cache = AnswerCache(shared=other)
        cache.put(b"m" * 16, b"{}", 2)
        assert cache.get(b"m" * 16) == (b"{}", 2)  # still cached in this process
    finally:
        blocker.execute("ROLLBACK")
    assert shared.get(b"n" * 16) is None and shared.get(b"m" * 16) is None


def _allowed(limiter: RateLimiter, limit: str, *identifiers: str) -> bool:
    try:
        limiter.hit(limit, *identifiers)
    except ServiceError as exc:
        assert exc.code == "RATE_LIMITED"
        return False
    return True


@pytest.mark.parametrize("shared", ["file", "redis"])
def test_batched_quotas_hold_across_processes(tmp_path: Path, shared: str) -> None:
    path, prefix = tmp_path / "state.db", f"test:{secrets.token_hex(4)}:"

    def quotas(name: str) -> list[RateLimiter]:
        return [RateLimiter(RedisState("redis://127.0.0.1:6379/0", prefix) if shared == "redis"
                            else FileState(StateFile(path)), name, strategy="fixed", batched=True)
                for _ in range(2)]

    limit, slack, pair = 640, 640 // 32, quotas("q:")
    allowed = 0
    for n in range(2000):
        allowed += _allowed(pair[n % 2], f"{limit}/minute", "search", "prj_1")
    assert limit <= allowed < limit + 2 * slack  # a batch per process at most beyond the limit
    assert not any(_allowed(pair[n % 2], f"{limit}/minute", "search", "prj_1") for n in range(50))
    counted = pair[0]._shared.storage.get(pair[0]._item(f"{limit}/minute").key_for("search", "prj_1"))  # type: ignore[union-attr]
    assert counted >= allowed  # every allowed hit reached the shared counter once refusals began
    assert _allowed(pair[0], f"{limit}/minute", "search", "prj_2")  # another identifier: its own count

    small = quotas("s:")
    assert sum(_allowed(small[n % 2], "40/minute", "search", "prj_1") for n in range(100)) == 40  # exact
    for limiter in pair + small:
        limiter._shared.storage.reset()  # type: ignore[union-attr]


def test_batched_quotas_open_a_new_window(tmp_path: Path) -> None:
    quotas = RateLimiter(FileState(StateFile(tmp_path / "state.db")), "w:", strategy="fixed", batched=True)
    assert sum(_allowed(quotas, "64/second", "search", "prj_1") for _ in range(200)) == 64
    time.sleep(1.1)
    assert sum(_allowed(quotas, "64/second", "search", "prj_1") for _ in range(200)) == 64


def test_the_answer_cache_keeps_at_most_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from control_plane.search import cache as cache_module

    shared = FileAnswers(StateFile(tmp_path / "state.db"))
    answers = AnswerCache(shared=shared, max_bytes=10_000)
    keys = [AnswerCache.key("idx_a", 1, 1, "v1", {"q": f"lamp {n}"}, []) for n in range(8)]
    for n, key in enumerate(keys):
        answers.put(key, bytes([n]) * 3_000, n)
    assert answers.bytes == 9_000 and answers.bytes <= answers.max_bytes
    assert answers.get(keys[7]) == (bytes([7]) * 3_000, 7)
    assert answers.get(keys[5]) == (bytes([5]) * 3_000, 5)  # kept here (hits, not the shared file)
    assert answers.hits == 2 and answers.shared_hits == 0
    answers.put(keys[5], b"x" * 1_000, 5)  # a key written again counts its new body only
    assert answers.bytes == 7_000
    # the oldest went; another process's answer is still read back from the shared file
    assert answers.get(keys[0]) == (bytes([0]) * 3_000, 0) and answers.shared_hits == 1
    assert answers.bytes <= answers.max_bytes
    monkeypatch.setattr(cache_module, "MAX_BODY", 2_000)
    big = AnswerCache.key("idx_a", 1, 1, "v1", {"q": "every lamp"}, [])
    answers.put(big, b"y" * 2_001, 100)  # a page of large documents: neither kept nor shared
    assert answers.get(big) is None and shared.get(big) is None
