from __future__ import annotations

import json

import pytest

from benchmarks.common import FIELDS, MAPPING, PRODUCTS  # noqa: F401 - the catalog and its mapping
from search_workers.engine import ShardEngine


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
