"""Locust scenario: shoppers searching a storefront with real Best Buy queries, weighted by popularity;
a fifth of the searches carry a filter clicked from the facets.

    SHOPSEARCH_PROFILE_KEY=pk_… SHOPSEARCH_PUBLIC_KEY=ss_pk_… SHOPSEARCH_ORIGIN=https://shop.example \
    locust -f loadtests/storefront.py --headless -u 4 -r 4 -t 60s --host http://127.0.0.1:8000

The profile key comes from ``POST …/indices/:indexId/profiles``; the public key (allowed for the
origin) from ``POST /v1/projects/:projectId/api-keys`` in a signed-in session. The storefront users
measured (issue #11) is ``benchmarks.common``: ``STOREFRONT_MAPPING``, ``STOREFRONT_FACETS`` (PUT
``…/facets``) and ``STOREFRONT_PROFILE``; ``python -m benchmarks.search_bench`` sets it up itself.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from locust import FastHttpUser, between, task

QUERIES_FILE = Path(
    os.environ.get("SHOPSEARCH_QUERIES", Path(__file__).resolve().parents[1] / "shared/datasets/bestbuy/queries.jsonl")
)


def _weighted_queries() -> tuple[list[str], list[int]]:
    queries, weights = [], []
    with open(QUERIES_FILE) as handle:
        for line in handle:
            row = json.loads(line)
            queries.append(row["query"])
            weights.append(max(1, int(row.get("popularity", 1))))
    return queries, weights


QUERIES, WEIGHTS = _weighted_queries()
# as benchmarks.search_bench.FILTERS: fields of the profile's facets
FILTERS = [
    {"brand": ["Samsung"]}, {"brand": ["Apple", "Sony"]}, {"price": {"lt": 50}}, {"price": {"gte": 50, "lt": 200}},
    {"price": {"gte": 200}}, {"categories": ["Headphones"]}, {"categories": ["Cell Phones", "Laptops"]},
    {"brand": ["Insignia"], "price": {"lt": 200}},
]


class Shopper(FastHttpUser):
    wait_time = between(0.0, 0.05)

    def on_start(self) -> None:
        self.profile_key = os.environ["SHOPSEARCH_PROFILE_KEY"]
        self.headers = {
            "Authorization": f"Bearer {os.environ['SHOPSEARCH_PUBLIC_KEY']}",
            "Origin": os.environ.get("SHOPSEARCH_ORIGIN", "https://shop.example"),
            "Content-Type": "application/json",
        }

    @task(10)
    def search(self) -> None:
        q = random.choices(QUERIES, WEIGHTS)[0]
        self.client.post(f"/v1/search/{self.profile_key}", data=json.dumps({"q": q}), headers=self.headers,
                         name="/v1/search/:profileKey")

    @task(2)
    def search_as_you_type(self) -> None:
        q = random.choices(QUERIES, WEIGHTS)[0]
        prefix = q[: max(2, len(q) // 2)]
        self.client.post(f"/v1/search/{self.profile_key}", data=json.dumps({"q": prefix}), headers=self.headers,
                         name="/v1/search/:profileKey (prefix)")

    @task(3)
    def filtered(self) -> None:
        body = {"q": random.choices(QUERIES, WEIGHTS)[0], "filters": random.choice(FILTERS)}
        self.client.post(f"/v1/search/{self.profile_key}", data=json.dumps(body), headers=self.headers,
                         name="/v1/search/:profileKey (filtered)")
