"""Soak (issue #16 item 4): a seeded random workload against a real ``shopsearch serve --workers 2``
on the embedded default (SQLite, a primary and a follower process holding its own replicas).

One writer sends, in a random order drawn from a seed: uploads of new documents, updates of
existing ones, deletes, replace sessions (open, upload in parts, commit) and reindexes; two threads
search through fresh and kept connections the whole time (every answer must be 200). The run lasts
``SHOPSEARCH_SOAK_SECONDS`` (default 20 s; set it higher for a longer soak) and uses
``SHOPSEARCH_SOAK_SEED`` (default 1). At the end every task succeeded and, through both serving
processes, search agrees with the database for every id ever written: present or absent, once,
with the stored fields.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.fixtures.server import running_server
from tests.fixtures.tenants import make_tenant
from tests.production.agreement import PROFILE, assert_search_agrees, shop_index, wait_tasks_settled
from tests.production.stack import ORIGIN
from tests.production.traffic import Accepted, Searcher, join_all, make_doc, start

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

SECONDS = float(os.environ.get("SHOPSEARCH_SOAK_SECONDS", "20"))
SEED = int(os.environ.get("SHOPSEARCH_SOAK_SEED", "1"))
OPS = {"add": 30, "update": 25, "delete": 20, "replace": 4, "reindex": 4}


class Soak:
    def __init__(self, http: httpx.Client, index_path: str, rng: random.Random) -> None:
        self.http = http
        self.path = index_path
        self.rng = rng
        self.accepted = Accepted()
        self.done: Counter[str] = Counter()
        self.next_id = 0
        self.rev = 0

    def _doc(self, doc_id: str | None = None) -> dict[str, Any]:
        if doc_id is None:
            self.next_id += 1
            doc_id = f"k{self.next_id:06d}"
        self.rev += 1
        return make_doc(self.rng, doc_id, self.rev)

    def _post(self, tail: str, body: Any, status: int = 202) -> dict[str, Any]:
        response = self.http.post(self.path + tail, json=body)
        assert response.status_code == status, (tail, response.status_code, response.text)
        answer: dict[str, Any] = response.json() if response.content else {}
        if status == 202:
            self.accepted.task_ids.append(answer["taskId"])
        return answer

    def step(self, op: str) -> None:
        live = self.accepted.live()
        if op == "add" or (op in ("update", "delete") and not live):
            docs = [self._doc() for _ in range(self.rng.randint(1, 40))]
            self._post("/documents", docs)
            self.accepted.record(docs)
        elif op == "update":
            docs = [self._doc(i) for i in self.rng.sample(live, min(len(live), self.rng.randint(1, 20)))]
            self._post("/documents", docs)
            self.accepted.record(docs)
        elif op == "delete":
            ids = self.rng.sample(live, min(len(live), self.rng.randint(1, 15)))
            if self.rng.random() < 0.2:
                ids.append(f"never-{self.rng.randint(0, 10**6)}")  # deleting an unknown id is fine
            self._post("/documents/delete", ids)
            self.accepted.record(deleted=ids)
        elif op == "replace":
            # the new catalog: most of the live documents (some changed), some dropped, some new
            keep = self.rng.sample(live, int(len(live) * self.rng.uniform(0.5, 0.9)))
            docs = [self._doc(i) if self.rng.random() < 0.3 else self.accepted.expected[i] for i in keep]
            docs += [self._doc() for _ in range(self.rng.randint(0, 60))]
            self.rng.shuffle(docs)
            session = self._post("/replace-sessions", {}, status=201)["id"]
            for part in range(0, len(docs), 150):
                self._post(f"/replace-sessions/{session}/documents", docs[part:part + 150], status=200)
            self._post(f"/replace-sessions/{session}/commit", None)
            self.accepted.record(docs, deleted=[i for i in live if i not in set(keep)])
        elif op == "reindex":
            response = self.http.post(self.path + "/reindex")
            if response.status_code == 409:  # one is already enqueued or running: the spec's CONFLICT
                assert response.json()["error"]["code"] == "CONFLICT", response.text
                op = "reindex (one pending: 409)"
            else:
                assert response.status_code == 202, response.text
                self.accepted.task_ids.append(response.json()["taskId"])
        self.done[op] += 1


def test_soak_search_agrees_with_database() -> None:
    with running_server(workers=2) as server:
        tenant = make_tenant(server.database_url, public_origins=[ORIGIN])
        http = httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60)
        shop = shop_index(http, tenant.project_id, tenant.public_key, ORIGIN, name="soak", shards=2)
        index_id, index_path = shop.id, shop.path
        searchers = [Searcher(server.base, shop.search_url, shop.storefront, pause=0.01),
                     Searcher(server.base, index_path + "/search", tenant.headers, pause=0.01,
                              body={"profile": PROFILE})]  # secret search with an inline profile
        threads = [start(s) for s in searchers]

        rng = random.Random(SEED)
        soak = Soak(http, index_path, rng)
        soak.step("add")
        ops, weights = zip(*OPS.items(), strict=True)
        deadline = time.monotonic() + SECONDS
        try:
            while time.monotonic() < deadline:
                soak.step(rng.choices(ops, weights)[0])
                # let tasks keep up now and then, so the queue never outgrows the run
                if rng.random() < 0.1:
                    wait_tasks_settled(server.database_url, tenant.project_id)
                time.sleep(rng.uniform(0, 0.1))
        finally:
            for s in searchers:
                s.stop.set()
        join_all(threads, 60)

        statuses = wait_tasks_settled(server.database_url, tenant.project_id, timeout=180)
        assert set(statuses) == {"succeeded"}, {k: v[:5] for k, v in statuses.items()}
        failed = [(x.status, x.detail) for s in searchers for x in s.samples if not x.ok]
        assert not failed, failed[:5]
        assert all(s.samples for s in searchers)
        # fresh connections: the kernel hands each to either serving process
        for _ in range(4):
            with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as fresh:
                live = assert_search_agrees(fresh, index_path + "/search", server.database_url, index_id,
                                            soak.accepted.expected)
        print(f"soak {SECONDS:.0f} s seed {SEED}: {dict(soak.done)}, {len(soak.accepted.task_ids)} tasks, "
              f"{len(soak.accepted.expected)} ids written, {live} live, "
              f"{sum(len(s.samples) for s in searchers)} searches")

