"""Shoppers on a shop page: storefront search, autocomplete as they type, and clicks on results.

Each shopper searches real Best Buy queries drawn by popularity (a fifth with a filter clicked
from the facets, some as a half-typed prefix), asks for suggestions while typing
(``POST /v1/suggest/:suggestKey``), and reports a click (sometimes a conversion) on a hit of its last
answer with that answer's ``queryId`` (``POST /v1/events``): all with the public key from the
shop's allowed ``Origin``, as a browser sends them. An answer that is not 200 with the expected
shape counts as a failure.

    LOADTEST_TENANT=/tmp/loadtest-tenant.json locust -f loadtests/storefront.py --headless -u 8 -r 8 -t 60s
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

from loadtests.common import popular_query, tenant, tenant_host  # noqa: E402

# as benchmarks.search_bench.FILTERS: fields of the storefront profile's facets
FILTERS: list[dict[str, Any]] = [
    {"brand": ["Samsung"]}, {"brand": ["Apple", "Sony"]}, {"price": {"lt": 50}}, {"price": {"gte": 50, "lt": 200}},
    {"price": {"gte": 200}}, {"categories": ["Headphones"]}, {"categories": ["Cell Phones", "Laptops"]},
    {"brand": ["Insignia"], "price": {"lt": 200}},
]


class Shopper(FastHttpUser):
    weight = 10
    wait_time = between(0.0, 0.05)
    host = tenant_host()

    def on_start(self) -> None:
        shop = tenant()
        self.search_url = f"/v1/search/{shop['profileKey']}"
        self.suggest_url = f"/v1/suggest/{shop['suggestKey']}"
        self.headers = {"Authorization": f"Bearer {shop['publicKey']}", "Origin": shop["origin"],
                        "Content-Type": "application/json"}
        self.last: tuple[str, list[str]] | None = None  # (queryId, hit ids) of the last answer with hits

    def _search(self, body: dict[str, Any], name: str) -> None:
        with self.client.post(self.search_url, data=json.dumps(body), headers=self.headers, name=name,
                              catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
                return
            answer = response.json()
            if not isinstance(answer.get("hits"), list) or not answer.get("queryId"):
                response.failure(f"not a search answer: {(response.text or '')[:200]}")
                return
            if answer["hits"]:
                self.last = (answer["queryId"], [hit["id"] for hit in answer["hits"]])

    @task(8)
    def search(self) -> None:
        self._search({"q": popular_query()}, "search")

    @task(2)
    def search_filtered(self) -> None:
        self._search({"q": popular_query(), "filters": random.choice(FILTERS)}, "search (filtered)")

    @task(1)
    def search_prefix(self) -> None:
        q = popular_query()
        self._search({"q": q[: max(2, len(q) // 2)]}, "search (prefix)")

    @task(5)
    def suggest(self) -> None:
        q = popular_query()
        prefix = q[: random.randint(min(2, len(q)), len(q))]
        with self.client.post(self.suggest_url, data=json.dumps({"q": prefix}), headers=self.headers,
                              name="suggest", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
            elif not isinstance(response.json().get("suggestions"), list):
                response.failure(f"not a suggest answer: {(response.text or '')[:200]}")

    @task(3)
    def click(self) -> None:
        if self.last is None:
            self._search({"q": popular_query()}, "search")
            return
        query_id, hits = self.last
        position = random.randrange(min(len(hits), 5))
        events = [{"type": "click", "queryId": query_id, "documentId": hits[position], "position": position + 1}]
        if random.random() < 0.2:
            events.append({"type": "conversion", "queryId": query_id, "documentId": hits[position]})
        with self.client.post("/v1/events", data=json.dumps({"events": events}), headers=self.headers,
                              name="events", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"{response.status_code}: {(response.text or '')[:200]}")
            elif response.json().get("accepted") != len(events):
                response.failure(f"accepted {response.json().get('accepted')} of {len(events)}")
