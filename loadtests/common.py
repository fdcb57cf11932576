"""What the Locust scenarios share: the tenant ``loadtests.setup_tenant`` wrote, and the query mix.

``LOADTEST_TENANT`` names the JSON file (keys, profile and suggest handles, the shop's origin).
"""

from __future__ import annotations

import json
import os
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the Best Buy shopper queries with their popularity (shared/datasets/bestbuy/README.md)
QUERIES_FILE = Path(os.environ.get("SHOPSEARCH_QUERIES", ROOT / "shared/datasets/bestbuy/queries.jsonl"))
PRODUCTS_FILE = QUERIES_FILE.parent / "products.json"


@lru_cache(maxsize=1)
def tenant() -> dict[str, Any]:
    path = os.environ.get("LOADTEST_TENANT")
    if not path:
        raise RuntimeError("set LOADTEST_TENANT to the file `python -m loadtests.setup_tenant --out FILE` wrote")
    return json.loads(Path(path).read_text())  # type: ignore[no-any-return]


def tenant_host() -> str | None:
    """The server the tenant was made on, as the scenarios' default ``--host``."""
    path = os.environ.get("LOADTEST_TENANT")
    return tenant()["host"] if path and Path(path).is_file() else None


@lru_cache(maxsize=1)
def weighted_queries() -> tuple[list[str], list[int]]:
    queries, weights = [], []
    with open(QUERIES_FILE) as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                queries.append(row["query"])
                weights.append(max(1, int(row.get("popularity", 1))))
    return queries, weights


def popular_query() -> str:
    """A real shopper query, drawn by popularity (popular ones repeat, as in real traffic)."""
    queries, weights = weighted_queries()
    return random.choices(queries, weights)[0]


@lru_cache(maxsize=1)
def products() -> list[dict[str, Any]]:
    return json.loads(PRODUCTS_FILE.read_text())  # type: ignore[no-any-return]
