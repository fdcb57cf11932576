"""Geo search cost on one shard: ``python -m benchmarks.geo_bench [--docs N] [--rounds N]``.

Builds a shard of N products (default 100,000: the Best Buy catalog expanded by
``benchmarks.common.expand``), each given a store location scattered over France (one in twenty
without one), then times, per query (CPU of this thread, the whole ``search``): keyword-only
searches, the same with an ``around`` filter (10 km and 100 km), a box, a 12-point polygon, and a
sort by distance (``loc:near``), each with a brand facet and 20 hits. Prints p50 and p95 in
milliseconds and the geo columns' memory per 100k documents.
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from pathlib import Path

from benchmarks.common import expand, search_cpu
from benchmarks.relevance import ENGINE_FIELDS, MAPPING
from search_workers.engine import ShardEngine
from shared.contract import Change, Facet, Query, SortKey

GEO_MAPPING = {**MAPPING, "fields": {**MAPPING["fields"], "loc": {"type": "geopoint", "filterable": True,
                                                                  "sortable": True}}}
CENTRE = (46.6, 2.4)  # France
WORDS = ["phone", "case", "laptop", "tv", "camera", "charger", "headphones", "speaker", "cable", ""]


def _located(n: int) -> list[dict]:
    rng = random.Random(34)
    docs = expand(n)
    for i, doc in enumerate(docs):
        if i % 20:
            doc["loc"] = {"lat": CENTRE[0] + rng.uniform(-4, 4), "lng": CENTRE[1] + rng.uniform(-5, 5)}
    return docs


def _polygon(centre: tuple[float, float], radius_deg: float, points: int = 12) -> list[list[float]]:
    return [[centre[0] + radius_deg * math.sin(2 * math.pi * k / points),
             centre[1] + 1.4 * radius_deg * math.cos(2 * math.pi * k / points)] for k in range(points)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(35)
    with tempfile.TemporaryDirectory() as tmp:
        engine = ShardEngine(Path(tmp) / "shard", GEO_MAPPING)
        docs = _located(args.docs)
        started = time.perf_counter()
        for i in range(0, len(docs), 1000):
            engine.apply([Change(i + j + 1, "upsert", d["id"], d) for j, d in enumerate(docs[i:i + 1000])])
        print(f"{len(docs):,} documents indexed in {time.perf_counter() - started:.1f} s")

        def points() -> tuple[float, float]:
            return CENTRE[0] + rng.uniform(-3, 3), CENTRE[1] + rng.uniform(-4, 4)

        def base(**extra: object) -> Query:
            return Query(q=rng.choice(WORDS), fields=ENGINE_FIELDS, facets=(Facet("brand"),), limit=20, **extra)  # type: ignore[arg-type]

        def around(radius: float) -> Query:
            lat, lng = points()
            return base(filters={"loc": {"around": {"lat": lat, "lng": lng, "radiusM": radius}}})

        def box() -> Query:
            lat, lng = points()
            return base(filters={"loc": {"within": {"box": [[lat - 0.5, lng - 0.7], [lat + 0.5, lng + 0.7]]}}})

        def polygon() -> Query:
            return base(filters={"loc": {"within": {"polygon": _polygon(points(), 0.6)}}})

        def nearest() -> Query:
            return base(sort=(SortKey("loc", near=points()),))

        kinds = {"keyword only": lambda: base(), "around 10 km": lambda: around(10_000),
                 "around 100 km": lambda: around(100_000), "box 1 x 1.4 deg": box, "polygon, 12 points": polygon,
                 "sort by distance": nearest}
        print(f"{'query':<22}{'p50 ms':>9}{'p95 ms':>9}")
        costs = search_cpu([engine], {name: [make() for _ in range(args.rounds)] for name, make in kinds.items()})
        for name, (p50, p95) in costs.items():
            print(f"{name:<22}{p50:>9.2f}{p95:>9.2f}")
        mem = engine._mem
        geo_bytes = sum(mem.num[k].nbytes for k in mem.num if "\x00" in k) * 100_000 / max(mem.cap, 1)
        print(f"geo columns: {geo_bytes / 2**20:.1f} MiB per 100k documents (two float64 per document)")
        engine.close(snapshot_memory=False)


if __name__ == "__main__":
    main()
