from __future__ import annotations

import json
from pathlib import Path

import pytest

from search_workers.engine import ShardEngine

PRODUCTS = Path("/work/shared/datasets/bestbuy/products.json")

MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "categories": {"type": "keyword[]", "searchable": True, "facetable": True, "filterable": True},
        "description": {"type": "text", "searchable": True},
        "price": {"type": "float", "filterable": True, "sortable": True, "facetable": True},
        "popularity": {"type": "integer", "sortable": True},
    },
}
FIELDS = {"name": {"weight": 8}, "brand": {"weight": 4}, "categories": {"weight": 2}, "description": {"weight": 1}}


@pytest.fixture(scope="module")
def products() -> list[dict]:
    return json.loads(PRODUCTS.read_text())


@pytest.fixture(scope="module")
def bestbuy(products, tmp_path_factory):
    path = tmp_path_factory.mktemp("bestbuy")
    e = ShardEngine(path, MAPPING)
    seq = 0
    for i in range(0, len(products), 1000):
        batch = []
        for j in range(i, min(i + 1000, len(products))):
            seq += 1
            batch.append({"seq": seq, "op": "upsert", "id": str(j), "doc": products[j]})
        e.apply(batch)
    yield e
    e.close()


def upserts(docs: list[dict], start_seq: int = 1) -> list[dict]:
    return [{"seq": start_seq + i, "op": "upsert", "id": str(d["id"]), "doc": d} for i, d in enumerate(docs)]
