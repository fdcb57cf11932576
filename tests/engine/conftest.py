from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.common import FIELDS as FIELD_WEIGHTS
from benchmarks.common import MAPPING, PRODUCTS  # noqa: F401 - the catalog and its mapping
from search_workers.engine import ShardEngine
from shared.contract import Change, FieldWeight

# name over brand over categories over description, as the engine takes them
FIELDS = {name: FieldWeight(weight=float(c["weight"])) for name, c in FIELD_WEIGHTS.items()}


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
            batch.append(Change(seq, "upsert", str(j), products[j]))
        e.apply(batch)
    yield e
    e.close()


def upserts(docs: list[dict], start_seq: int = 1) -> list[Change]:
    return [Change(start_seq + i, "upsert", str(d["id"]), d) for i, d in enumerate(docs)]


def ids(answer) -> list[str]:
    return [h.id for h in answer.hits]


def names(answer) -> list[str]:
    return [h.document["name"] for h in answer.hits]


@contextlib.contextmanager
def engine_with(path: Path, mapping: dict, docs: list[dict]) -> Iterator[ShardEngine]:
    """A shard holding ``docs`` (for module fixtures), closed afterwards."""
    e = ShardEngine(path, mapping)
    e.apply(upserts(docs))
    try:
        yield e
    finally:
        e.close()
