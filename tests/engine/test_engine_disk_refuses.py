"""A shard whose files cannot be written for a while (issue 39 item 2): it keeps taking changes in
memory, says why in ``persist_error``, and rewrites its files from memory once the disk takes writes
again, without being reopened; a reopened shard then holds everything at the applied sequence.

Inline persistence fails here through Whoosh's commit raising ``PermissionError`` (the test runs as
root, which ignores file modes; ``tests/faults/test_disk_refuses.py`` makes a real directory read-only
for a server without that capability); the write-behind helper fails by being killed.
"""

from __future__ import annotations

import time

import pytest

from search_workers.engine import ShardEngine, shard, whoosh_store
from search_workers.engine.persist import get_persister
from shared.contract import Change, Query

from .conftest import upserts

MAPPING = {"idField": "id", "fields": {"title": {"type": "text", "searchable": True}}}


def _wait_repaired(e: ShardEngine, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while e.persist_error is not None:
        assert time.monotonic() < deadline, e.persist_error
        time.sleep(0.05)


def _titles(e: ShardEngine) -> dict[str, str]:
    answer = e.search(Query(q="", limit=100))
    return {h.id: (e.get(h.id) or {})["title"] for h in answer.hits}


def test_inline_commits_refused_then_taken(tmp_path, monkeypatch):
    monkeypatch.setattr(shard, "persist_mode", lambda: "inline")
    e = ShardEngine(tmp_path / "shard", MAPPING)
    e.apply(upserts([{"id": "1", "title": "alpha"}, {"id": "2", "title": "beta"}]))
    refusing = [True]
    commit, rewrite = whoosh_store.commit_jobs, whoosh_store.rewrite

    def refused(real):  # noqa: ANN001, ANN202
        def call(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if refusing[0]:
                raise PermissionError(13, "Permission denied")
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(whoosh_store, "commit_jobs", refused(commit))
    monkeypatch.setattr(whoosh_store, "rewrite", refused(rewrite))
    assert e.apply([Change(3, "upsert", "3", {"title": "gamma"}), Change(4, "delete", "1")]) == 4
    assert e.persist_error is not None and "PermissionError" in e.persist_error
    assert e.apply([Change(5, "upsert", "2", {"title": "beta two"})]) == 5  # memory goes on
    assert _titles(e) == {"2": "beta two", "3": "gamma"}
    assert e.persisted_seq == 2
    time.sleep(1.0)  # retries meanwhile fail
    assert e.persist_error is not None
    refusing[0] = False
    _wait_repaired(e)
    assert e.persisted_seq == 5
    e.apply([Change(6, "upsert", "4", {"title": "delta"})])  # committed as before
    assert e.persisted_seq == 6
    e.close()
    reopened = ShardEngine(tmp_path / "shard", MAPPING)
    assert reopened.applied_seq == 6 and _titles(reopened) == {"2": "beta two", "3": "gamma", "4": "delta"}
    reopened.close()


def test_a_helper_that_dies_is_replaced_and_the_files_rewritten(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(shard, "persist_mode", lambda: "helper")
    e = ShardEngine(tmp_path / "shard", MAPPING)
    e.apply(upserts([{"id": "1", "title": "alpha"}, {"id": "2", "title": "beta"}]))
    assert e.flush() == 2
    helper = get_persister()
    helper._proc.kill()
    helper._proc.wait()
    e.apply([Change(3, "upsert", "3", {"title": "gamma"})])
    e.apply([Change(4, "delete", "1")])
    deadline = time.monotonic() + 10
    while e.persist_error is None and e.persisted_seq < 4:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    _wait_repaired(e)
    assert "the persistence process" in caplog.text and "is persisted again" in caplog.text, caplog.text
    assert get_persister() is not helper and get_persister().alive()
    e.apply([Change(5, "upsert", "4", {"title": "delta"})])
    assert e.flush() == 5
    e.close()
    reopened = ShardEngine(tmp_path / "shard", MAPPING)
    assert reopened.applied_seq == 5 and _titles(reopened) == {"2": "beta", "3": "gamma", "4": "delta"}
    reopened.close()


@pytest.fixture(autouse=True)
def _fresh_helper():  # noqa: ANN202 - the killed helper is not left to other tests
    yield
    get_persister()
