"""Shoppers on a shop page: storefront search, autocomplete as they type, and clicks on results.

Each shopper searches real Best Buy queries drawn by popularity (a fifth with a filter clicked
from the facets, some as a half-typed prefix), asks for suggestions while typing
(``POST /v1/suggest/:suggestKey``), and reports a click (sometimes a conversion) on a hit of its last
answer with that answer's ``queryId`` (``POST /v1/events``): all through the Python client with the
public key and the shop's allowed ``Origin``, as a browser sends them. An error answer, or an answer
that is not the documented shape, counts as a failure.

    LOADTEST_TENANT=/tmp/loadtest-tenant.json locust -f loadtests/storefront.py --headless -u 8 -r 8 -t 60s
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

# `locust -f loadtests/…` puts only this folder on sys.path: the checkout too, for `loadtests.*`
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locust import between, task  # noqa: E402
from shopsearch_client import models  # noqa: E402

from loadtests.api_user import ApiUser  # noqa: E402
from loadtests.common import popular_query, tenant, tenant_host  # noqa: E402

# as benchmarks.search_bench.FILTERS: fields of the storefront profile's facets
FILTERS: list[dict[str, Any]] = [
    {"brand": ["Samsung"]}, {"brand": ["Apple", "Sony"]}, {"price": {"lt": 50}}, {"price": {"gte": 50, "lt": 200}},
    {"price": {"gte": 200}}, {"categories": ["Headphones"]}, {"categories": ["Cell Phones", "Laptops"]},
    {"brand": ["Insignia"], "price": {"lt": 200}},
]


class Shopper(ApiUser):
    weight = 10
    wait_time = between(0.0, 0.05)
    host = tenant_host()

    def on_start(self) -> None:
        shop = tenant()
        self.profile_key, self.suggest_key = shop["profileKey"], shop["suggestKey"]
        self.shop = self.api(shop["publicKey"], headers={"Origin": shop["origin"]})
        self.last: tuple[str, list[str]] | None = None  # (queryId, hit ids) of the last answer with hits

    def on_stop(self) -> None:
        self.shop.close()

    def _search(self, name: str, q: str, filters: dict[str, Any] | None = None) -> None:
        with self.measure(name):
            answer = self.shop.search(self.profile_key, q, filters=filters)
            if answer.hits:
                self.last = (answer.query_id, [hit.id for hit in answer.hits])

    @task(8)
    def search(self) -> None:
        self._search("search", popular_query())

    @task(2)
    def search_filtered(self) -> None:
        self._search("search (filtered)", popular_query(), random.choice(FILTERS))

    @task(1)
    def search_prefix(self) -> None:
        q = popular_query()
        self._search("search (prefix)", q[: max(2, len(q) // 2)])

    @task(5)
    def suggest(self) -> None:
        q = popular_query()
        with self.measure("suggest"):
            self.shop.suggest(self.suggest_key, q[: random.randint(min(2, len(q)), len(q))])

    @task(3)
    def click(self) -> None:
        if self.last is None:
            self._search("search", popular_query())
            return
        query_id, hits = self.last
        self.last = None  # one click per answer: a repeat of (queryId, document, type) is not counted again
        position = random.randrange(min(len(hits), 5))
        events = [models.Event(type="click", query_id=query_id, document_id=hits[position], position=position + 1)]
        if random.random() < 0.2:
            events.append(models.Event(type="conversion", query_id=query_id, document_id=hits[position]))
        with self.measure("events"):
            accepted = self.shop.send_events(events).accepted
            if accepted != len(events):
                raise AssertionError(f"accepted {accepted} of {len(events)}")
