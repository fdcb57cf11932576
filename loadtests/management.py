"""A shop's server writing to the management API with its secret key while shoppers search.

Each round uploads a batch of products (real Best Buy products under a bounded pool of ids of their
own, so repeated uploads update them and the catalog stays the same size; prices change every time),
every third round deletes a few (``POST …/documents/delete``), each answered 202 with a task, and
reads the last task back (200, not failed).

    LOADTEST_TENANT=/tmp/loadtest-tenant.json locust -f loadtests/management.py --headless -u 1 -r 1 -t 60s
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

# `locust -f loadtests/…` puts only this folder on sys.path: the checkout too, for `loadtests.*`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locust import FastHttpUser, between, task  # noqa: E402

from loadtests.common import products, tenant, tenant_host  # noqa: E402

BATCH = 20
POOL = 500  # ids lt-0 … lt-499


class Merchant(FastHttpUser):
    weight = 1
    wait_time = between(0.2, 1.0)
    host = tenant_host()

    def on_start(self) -> None:
        shop = tenant()
        self.project = shop["projectId"]
        self.documents_url = f"/v1/projects/{shop['projectId']}/indices/{shop['indexId']}/documents"
        self.headers = {"Authorization": f"Bearer {shop['secretKey']}", "Content-Type": "application/json"}
        self.last_task: str | None = None
        self.round = 0

    def _accepted(self, response: Any) -> None:
        if response.status_code != 202:
            response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
        elif not response.json().get("taskId"):
            response.failure("no taskId")
        else:
            self.last_task = response.json()["taskId"]

    @task
    def write(self) -> None:
        """A round: an upload, a delete every third round (the first included), a task read."""
        self.round += 1
        self.upload()
        if self.round % 3 == 1:
            self.delete()
        self.read_task()

    def upload(self) -> None:
        catalog = products()
        docs = []
        for _ in range(BATCH):
            product = dict(random.choice(catalog))
            product["id"] = f"lt-{random.randrange(POOL)}"
            product["price"] = round(random.uniform(5, 1500), 2)
            docs.append(product)
        with self.client.post(self.documents_url, data=json.dumps(docs), headers=self.headers,
                              name="documents (upload)", catch_response=True) as response:
            self._accepted(response)

    def delete(self) -> None:
        ids = [f"lt-{random.randrange(POOL)}" for _ in range(3)]  # ids never uploaded are accepted too
        with self.client.post(f"{self.documents_url}/delete", data=json.dumps(ids), headers=self.headers,
                              name="documents (delete)", catch_response=True) as response:
            self._accepted(response)

    def read_task(self) -> None:
        if self.last_task is None:
            return
        with self.client.get(f"/v1/projects/{self.project}/tasks/{self.last_task}", headers=self.headers,
                             name="task", catch_response=True) as response:
            if response.status_code != 200 or response.json().get("status") == "failed":
                response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
