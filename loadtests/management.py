"""A shop's server writing to the management API with its secret key while shoppers search.

Each round uploads a batch of products (real Best Buy products under a bounded pool of ids of their
own, so repeated uploads update them and the catalog stays the same size; prices change every time),
every third round deletes a few, each answered with a task, and reads the last task back (not
failed): through the Python client, as a shop's server would.

    LOADTEST_TENANT=/tmp/loadtest-tenant.json locust -f loadtests/management.py --headless -u 1 -r 1 -t 60s
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

# `locust -f loadtests/…` puts only this folder on sys.path: the checkout too, for `loadtests.*`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locust import between, task  # noqa: E402

from loadtests.api_user import ApiUser  # noqa: E402
from loadtests.common import products, tenant, tenant_host  # noqa: E402

BATCH = 20
POOL = 500  # ids lt-0 … lt-499


class Merchant(ApiUser):
    weight = 1
    wait_time = between(0.2, 1.0)
    host = tenant_host()

    def on_start(self) -> None:
        shop = tenant()
        self.server = self.api(shop["secretKey"])
        self.index = self.server.index(shop["projectId"], shop["indexId"])
        self.last_task: str | None = None
        self.round = 0

    def on_stop(self) -> None:
        self.server.close()

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
        with self.measure("documents (upload)"):
            [accepted] = self.index.upload_documents(docs)
            self.last_task = accepted.task_id

    def delete(self) -> None:
        ids = [f"lt-{random.randrange(POOL)}" for _ in range(3)]  # ids never uploaded are accepted too
        with self.measure("documents (delete)"):
            [accepted] = self.index.delete_documents(ids)
            self.last_task = accepted.task_id

    def read_task(self) -> None:
        if self.last_task is None:
            return
        with self.measure("task", "GET"):
            task = self.index.get_task(self.last_task)
            if task.status == "failed":
                raise AssertionError(f"task {task.task_id} failed: {task.error}")
