"""A rebuild racing a stream of updates (issue 39 item 1): a reindex, then a replace-session commit,
while a writer keeps updating documents through ``serve --workers 2`` (a primary and a process whose
replicas follow the database). The moment the rebuild's task reads ``succeeded``, searches on fresh
connections (either process) find every document, each at least at the last version whose write was
acknowledged before the swap committed (the task's ``finishedAt``, stamped inside that transaction).

It failed before the fix: an update rewrote its row under a sequence after the one the build was
fixed to, so the new generation lacked the document altogether until the update's own task ran.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.served import Served, served, shop, wait_task

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

N = 100  # the documents updated (one page of search)
BULK = 4000  # other documents: a build long enough for updates to race it
BULK_PER_REQUEST = 300  # of them updated with each request of the writer
SEARCHERS = 4  # kept-alive connections the searcher takes turns on (the kernel hands each to either process)
CONNECTIONS = 8  # fresh connections per check: the kernel hands each to either process
#: a rebuild's task waits behind the writer's queued updates: on a loaded machine (a coverage run beside
#: another worker's servers) a replace commit started 58 s after it was queued and was still running at
#: 60 s, the tasks' usual bound
TASK_SECONDS = 240


class Writer(threading.Thread):
    """Updates 10 random documents per request, each with a version higher than any before."""

    def __init__(self, server: Served, headers: dict[str, str], index_url: str) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=server.base, headers=headers, timeout=60)
        self.index_url = index_url
        self.stop = threading.Event()
        self.versions = itertools.count(1)
        self.acked: list[tuple[float, float, dict[str, int], str]] = []  # (sent at, 202 at, {id: version}, task id)
        self.refused: list[str] = []
        self.rng = random.Random(39)

    def run(self) -> None:
        while not self.stop.is_set():
            docs = {f"d{self.rng.randrange(N):03d}": next(self.versions) for _ in range(10)}
            bulk = self.rng.sample(range(BULK), BULK_PER_REQUEST)  # a longer catch-up after the build
            sent = time.time()
            response = self.http.post(self.index_url + "/documents", json=[
                {"id": doc_id, "name": f"lamp {doc_id}", "version": v, "group": "hot"} for doc_id, v in docs.items()
            ] + [{"id": f"b{i:05d}", "name": f"kettle model {i} with a longer name", "version": 1, "group": "bulk"}
                 for i in bulk])
            if response.status_code == 202:
                self.acked.append((sent, time.time(), docs, response.json()["taskId"]))
            else:
                self.refused.append(response.text)
            time.sleep(0.005)

    def expected(self, since: float, until: float, http: httpx.Client, project_id: str) -> dict[str, int]:
        """Per document, the highest version sent after ``since`` and acknowledged before ``until``,
        once the tasks of those writes succeeded: a write accepted while a rebuild swaps (after its
        last catch-up) is applied by its own task, queued behind the rebuild's; from its success on,
        search must hold it (missing documents meanwhile are the searcher's to find)."""
        out: dict[str, int] = {}
        for sent, acked, docs, task_id in list(self.acked):
            if sent > since and acked < until:
                assert wait_task(http, project_id, task_id, poll=0.005, timeout=TASK_SECONDS)["status"] == "succeeded"
                for doc_id, v in docs.items():
                    out[doc_id] = max(out.get(doc_id, 0), v)
        return out


class Searcher(threading.Thread):
    """Searches the updated documents without pause (on connections to either process): every answer
    must hold all of them, each at a version at least the one it held already (the initial upload's
    task succeeded before any update was sent)."""

    def __init__(self, server: Served, headers: dict[str, str], index_url: str) -> None:
        super().__init__(daemon=True)
        self.server, self.headers, self.index_url = server, headers, index_url
        self.stop = threading.Event()
        self.searches = 0
        self.short: list[tuple[float, int]] = []  # (when, documents missing)

    def run(self) -> None:
        clients = [httpx.Client(base_url=self.server.base, headers=self.headers, timeout=60) for _ in range(SEARCHERS)]
        turn = itertools.cycle(clients)
        while not self.stop.is_set():
            started = time.time()
            answer = next(turn).post(self.index_url + "/search",
                                     json={"q": "", "perPage": N, "filters": {"group": "hot"}})
            assert answer.status_code == 200, answer.text
            self.searches += 1
            if answer.json()["total"] != N:
                self.short.append((started, N - answer.json()["total"]))

    def window(self) -> str:
        if not self.short:
            return f"{self.searches} searches, none short"
        return (f"{len(self.short)} of {self.searches} searches short by up to {max(n for _, n in self.short)} "
                f"documents over {self.short[-1][0] - self.short[0][0]:.3f} s")


def _finished(task: dict[str, Any]) -> float:
    return datetime.fromisoformat(task["finishedAt"].replace("Z", "+00:00")).timestamp()


def _behind(server: Served, headers: dict[str, str], index_url: str, expected: dict[str, int]) -> list[str]:
    """Searches on fresh connections: every problem found (a document missing or older than expected)."""
    problems = []
    for _ in range(CONNECTIONS):
        with httpx.Client(base_url=server.base, headers=headers, timeout=60) as http:
            answer = http.post(index_url + "/search", json={"q": "", "perPage": N, "filters": {"group": "hot"}})
        assert answer.status_code == 200, answer.text
        found = {hit["id"]: int(hit["document"]["version"]) for hit in answer.json()["hits"]}
        if answer.json()["total"] != N:
            problems.append(f"total {answer.json()['total']}")
        problems += [f"{doc_id}: v{found.get(doc_id)} < v{v}" for doc_id, v in sorted(expected.items())
                     if found.get(doc_id, -1) < v]
    return problems


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_rebuilds_racing_updates_lose_no_acknowledged_write(tmp_path: Path, backend: str) -> None:
    with served(tmp_path, backend, workers=2) as server:
        tenant, http, index_url = shop(server)
        headers = dict(http.headers)
        docs = [{"id": f"d{i:03d}", "name": f"lamp d{i:03d}", "version": 0, "group": "hot"} for i in range(N)]
        docs += [{"id": f"b{i:05d}", "name": f"kettle model {i} with a longer name", "version": 0, "group": "bulk"}
                 for i in range(BULK)]
        for start in range(0, len(docs), 1000):
            loaded = http.post(index_url + "/documents", json=docs[start:start + 1000])
            assert wait_task(http, tenant.project_id, loaded.json()["taskId"], timeout=TASK_SECONDS)["status"] == "succeeded"
        writer = Writer(server, headers, index_url)
        searcher = Searcher(server, headers, index_url)
        writer.start()
        searcher.start()
        try:
            time.sleep(1.0)
            # a reindex: every write acknowledged before it finished is searchable once its task succeeded
            reindex = http.post(index_url + "/reindex")
            assert reindex.status_code == 202, reindex.text
            task = wait_task(http, tenant.project_id, reindex.json()["taskId"], poll=0.005, timeout=TASK_SECONDS)
            assert task["status"] == "succeeded", task
            expected = {f"d{i:03d}": 0 for i in range(N)} | writer.expected(0.0, _finished(task), http, tenant.project_id)
            assert _behind(server, headers, index_url, expected) == []

            # a replace commit: the staged catalog, and every update sent after the commit was accepted
            session = http.post(index_url + "/replace-sessions")
            assert session.status_code == 201, session.text
            staged_url = index_url + f"/replace-sessions/{session.json()['id']}"
            for start in range(0, len(docs), 1000):
                staged = http.post(staged_url + "/documents", json=docs[start:start + 1000])
                assert staged.status_code == 200, staged.text
            commit = http.post(staged_url + "/commit")
            assert commit.status_code == 202, commit.text
            committed = time.time()
            time.sleep(0.3)  # updates land after the commit's sequence, while the new generation is built
            task = wait_task(http, tenant.project_id, commit.json()["taskId"], poll=0.005, timeout=TASK_SECONDS)
            assert task["status"] == "succeeded", task
            expected = writer.expected(committed, _finished(task), http, tenant.project_id)
            assert expected, "no update raced the replace commit"
            assert _behind(server, headers, index_url, expected) == []
        finally:
            writer.stop.set()
            searcher.stop.set()
            writer.join(30)
            searcher.join(30)
            print(f"{backend}: {len(writer.acked)} updates acknowledged; {searcher.window()}")
        assert writer.refused == []
        assert searcher.short == [], searcher.window()
