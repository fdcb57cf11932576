"""The shard directory refuses writes for a few seconds (issue 39 item 2).

``shopsearch serve --workers 2`` runs without the capabilities that let root ignore file modes, and
the index's shard directories are made read-only. Meanwhile uploads and deletes still succeed and
search reflects them (the replicas take changes in memory; the database holds them all), ``/ready``
stays 200 and ``/v1/status`` says indexing is ``degraded``. Once the directories take writes again
the replicas rewrite their files by themselves (no restart): status is operational again, later tasks
succeed, the files are written after the disk came back, and after a SIGKILL and a restart (the
replicas reopen from those files) the documents, their versions and the counts are right.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.served import NO_OVERRIDE, Served, served, shop, wait_task

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

READ_ONLY_S = 6.0


def _indexing(server: Served) -> str:
    status = httpx.get(server.base + "/v1/status", timeout=30)
    assert status.status_code == 200, status.text
    return next(s["state"] for s in status.json()["services"] if s["name"] == "indexing")


def _wait_indexing(server: Served, state: str, timeout: float) -> float:
    """Seconds until ``/v1/status`` says indexing is ``state`` (answers are shared for 15 s)."""
    started = time.monotonic()
    while (seen := _indexing(server)) != state:
        assert time.monotonic() - started < timeout, f"indexing stayed {seen}"
        time.sleep(0.5)
    return time.monotonic() - started


def _chmod_tree(root: Path, mode: int) -> None:
    for path in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.chmod(path, mode)


def _send(http: httpx.Client, project_id: str, url: str, body: Any) -> dict[str, Any]:
    sent = http.post(url, json=body)
    assert sent.status_code == 202, sent.text
    return wait_task(http, project_id, sent.json()["taskId"])


def _held(server: Served, headers: dict[str, str], index_url: str) -> dict[str, int]:
    """``{id: version}`` of every document search finds (on a new connection: either process)."""
    found: dict[str, int] = {}
    with httpx.Client(base_url=server.base, headers=headers, timeout=60) as http:
        for page in (1, 2, 3):
            answer = http.post(index_url + "/search", json={"q": "", "perPage": 100, "page": page})
            assert answer.status_code == 200, answer.text
            found |= {h["id"]: int(h["document"]["version"]) for h in answer.json()["hits"]}
    return found


def test_a_disk_that_refuses_writes_for_a_while(tmp_path: Path) -> None:
    with served(tmp_path, "sqlite", workers=2, prefix=NO_OVERRIDE) as server:
        tenant, http, index_url = shop(server)
        headers = dict(http.headers)
        index_dir = server.data_dir / "shards" / index_url.rsplit("/", 1)[1]
        docs = {f"d{i:03d}": 0 for i in range(200)}
        body = [{"id": d, "name": f"lamp {d}", "version": v, "group": "a"} for d, v in docs.items()]
        assert _send(http, tenant.project_id, index_url + "/documents", body)["status"] == "succeeded"

        _chmod_tree(index_dir, 0o555)
        refused_at = time.monotonic()
        try:
            for round_no in (1, 2):  # writes go on: stored, searchable, their tasks succeed
                updated = {d: round_no for d in list(docs)[round_no * 20:round_no * 20 + 50]}
                body = [{"id": d, "name": f"lamp {d}", "version": v, "group": "a"} for d, v in updated.items()]
                task = _send(http, tenant.project_id, index_url + "/documents", body)
                assert task["status"] == "succeeded", task
                docs |= updated
            gone = list(docs)[-10:]
            assert _send(http, tenant.project_id, index_url + "/documents/delete", gone)["status"] == "succeeded"
            for d in gone:
                del docs[d]
            assert _held(server, headers, index_url) == docs
            assert httpx.get(server.base + "/ready", timeout=10).status_code == 200
            time.sleep(1.0)  # the runner reports its replicas' disk every half second
            _wait_indexing(server, "degraded", 20)
            degraded_after = time.monotonic() - refused_at
            time.sleep(max(0.0, READ_ONLY_S - (time.monotonic() - refused_at)))
        finally:
            _chmod_tree(index_dir, 0o755)
        writable_at = time.time()

        recovered_after = _wait_indexing(server, "operational", 30)  # without a restart (answers live 15 s)
        updated = {d: 3 for d in list(docs)[:30]}
        body = [{"id": d, "name": f"lamp {d}", "version": v, "group": "a"} for d, v in updated.items()]
        assert _send(http, tenant.project_id, index_url + "/documents", body)["status"] == "succeeded"
        docs |= updated
        written = [_newest_write(replica) for replica in index_dir.glob("g*/s*r*")]
        assert len(written) == 2 and min(written) >= writable_at, (written, writable_at)
        print(f"status said indexing degraded {degraded_after:.1f} s after the disk refused; operational "
              f"{recovered_after:.1f} s after it took writes again")

        server.kill9()  # the replicas reopen from their files, re-fed from the database past them
        server.start()
        server.wait_ready()
        assert _held(server, headers, index_url) == docs
        assert http.get(index_url).json()["documentCount"] == len(docs)


def _newest_write(replica: Path) -> float:
    """The newest modification time among a replica's files (one merged away between the listing
    and its ``stat`` is listed again)."""
    for _ in range(50):
        try:
            return max(f.stat().st_mtime for f in replica.iterdir())
        except FileNotFoundError:
            time.sleep(0.05)
    raise AssertionError(f"{replica}'s files kept changing under the listing")
