"""An index without a mapping over real HTTP against ``shopsearch serve`` (issue 36, item 1): uploads
that each bring a new field, sent at once, lose none of them; every document is then found by the
words of its own field, and ``GET mapping`` lists every field."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from benchmarks.common import make_tenant, running_server

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

UPLOADERS = 6
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord"]


def _wait(http: httpx.Client, project_id: str, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        task = http.get(f"/v1/projects/{project_id}/tasks/{task_id}").json()
        if task["status"] in ("succeeded", "failed", "canceled"):
            return task  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, task
        time.sleep(0.1)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_concurrent_uploads_into_an_index_without_a_mapping_keep_every_field(backend: str) -> None:
    production = backend == "postgres"
    with running_server(postgres=production, redis=production, workers=2 if production else None) as server:
        tenant = make_tenant(server.database_url)
        with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as http:
            created = http.post(f"/v1/projects/{tenant.project_id}/indices", json={"name": "nomap"})
            assert created.status_code == 201, created.text
            url = f"/v1/projects/{tenant.project_id}/indices/{created.json()['id']}"

            def upload(n: int) -> str:
                doc = {"id": f"d{n}", "name": f"Product {n}", f"field{n}": f"{WORDS[n]} finish", "rank": n}
                with httpx.Client(base_url=server.base, headers=tenant.headers, timeout=60) as own:
                    response = own.post(url + "/documents", json=[doc])
                assert response.status_code == 202, response.text
                return response.json()["taskId"]  # type: ignore[no-any-return]

            with ThreadPoolExecutor(UPLOADERS) as pool:
                task_ids = list(pool.map(upload, range(UPLOADERS)))
            tasks = [_wait(http, tenant.project_id, task_id) for task_id in task_ids]
            assert [t["status"] for t in tasks] == ["succeeded"] * UPLOADERS, tasks
            # each upload names the field it brought (name and rank: whichever came first)
            added = [{a["field"] for a in t["details"]["fieldsAdded"]} for t in tasks]
            for n, fields in enumerate(added):
                assert f"field{n}" in fields, (n, fields)
            assert sum(len(fields) for fields in added) == UPLOADERS + 2
            for task in tasks:
                rebuild = _wait(http, tenant.project_id, task["details"]["mappingTaskId"])
                assert (rebuild["type"], rebuild["status"]) == ("mapping.update", "succeeded")

            mapping = http.get(url + "/mapping").json()
            assert mapping["dynamic"] is True
            assert set(mapping["fields"]) == {"name", "rank"} | {f"field{n}" for n in range(UPLOADERS)}
            for n, word in enumerate(WORDS):
                hits = http.post(url + "/search", json={"q": word}).json()["hits"]
                assert [h["id"] for h in hits] == [f"d{n}"], (word, hits)
            found = http.post(url + "/search", json={"q": "product", "filters": {"rank": {"gte": 3}}}).json()
            assert sorted(h["id"] for h in found["hits"]) == ["d3", "d4", "d5"]
