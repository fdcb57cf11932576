"""A shard's geopoint columns through its life: written, replaced, deleted, compacted, and reopened
from its snapshot and from its files, each time answering the same areas and distances."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np

from search_workers.engine import ShardEngine
from search_workers.engine.geo import _in_polygon, area_mask, distances
from shared.contract import Change, Query, SortKey

MAPPING = {"fields": {"name": {"type": "text", "searchable": True},
                      "loc": {"type": "geopoint", "filterable": True, "sortable": True}}}
AT = (52.52, 13.405)  # Berlin
AREA = {"loc": {"around": {"lat": AT[0], "lng": AT[1], "radiusM": 30_000}}}


def _docs(rng: random.Random, n: int, tag: str) -> dict[str, dict]:
    return {f"d{i}": {"name": f"shop {tag}", "loc": {"lat": AT[0] + rng.uniform(-0.6, 0.6),
                                                     "lng": AT[1] + rng.uniform(-0.9, 0.9)}} for i in range(n)}


def _meters(a: tuple[float, float], b: tuple[float, float]) -> float:
    la1, lo1, la2, lo2 = map(math.radians, (*a, *b))
    c = math.sin(la1) * math.sin(la2) + math.cos(la1) * math.cos(la2) * math.cos(lo2 - lo1)
    return 6_371_008.8 * math.acos(max(-1.0, min(1.0, c)))


def _check(engine: ShardEngine, docs: dict[str, dict]) -> None:
    near = {d: _meters(AT, (v["loc"]["lat"], v["loc"]["lng"])) for d, v in docs.items()}
    answer = engine.search(Query(filters=AREA, limit=2000))
    assert {h.id for h in answer.hits} == {d for d, m in near.items() if m <= 30_000}
    ordered = engine.search(Query(sort=(SortKey("loc", near=AT),), limit=2000))
    assert [h.id for h in ordered.hits] == sorted(near, key=near.__getitem__)
    assert all(abs(h.sort_values[0] - near[h.id]) < 1.0 for h in ordered.hits)


def test_points_survive_replacement_deletion_compaction_and_reopening(tmp_path: Path) -> None:
    rng = random.Random(5)
    docs = _docs(rng, 2000, "a")
    engine = ShardEngine(tmp_path / "shard", MAPPING)
    engine.apply([Change(i + 1, "upsert", d, body) for i, (d, body) in enumerate(docs.items())])
    _check(engine, docs)
    moved = _docs(rng, 700, "b")  # new points for d0..d699
    engine.apply([Change(2001 + i, "upsert", d, body) for i, (d, body) in enumerate(moved.items())])
    docs.update(moved)
    gone = [f"d{i}" for i in range(700, 1700)]  # enough dead slots for a compaction
    engine.apply([Change(3001 + i, "delete", d) for i, d in enumerate(gone)])
    for d in gone:
        del docs[d]
    assert engine._mem.n == len(docs)  # 1,700 of 2,700 slots were dead: compacted (memindex.finalize)
    _check(engine, docs)
    engine.close()  # with its memory snapshot
    reopened = ShardEngine(tmp_path / "shard", MAPPING)
    _check(reopened, docs)
    reopened.close(snapshot_memory=False)
    rebuilt = ShardEngine(tmp_path / "shard", MAPPING)  # from the stored documents
    _check(rebuilt, docs)
    rebuilt.close()


def test_a_document_without_a_valid_point_is_never_in_an_area_and_sorts_last(tmp_path: Path) -> None:
    engine = ShardEngine(tmp_path / "shard", MAPPING)
    engine.apply([
        Change(1, "upsert", "here", {"loc": {"lat": AT[0], "lng": AT[1]}}),
        Change(2, "upsert", "none", {"name": "x"}),
        Change(3, "upsert", "bad", {"loc": {"lat": 123, "lng": 0}}),  # stored unchecked (the API refuses it)
        Change(4, "upsert", "text", {"loc": "Berlin"}),
    ])
    assert [h.id for h in engine.search(Query(filters=AREA)).hits] == ["here"]
    world = {"loc": {"within": {"box": [[-90, -180], [90, 180]]}}}
    assert [h.id for h in engine.search(Query(filters=world)).hits] == ["here"]
    ordered = engine.search(Query(sort=(SortKey("loc", near=AT),), limit=10))
    assert ordered.hits[0].id == "here" and [h.sort_values[0] for h in ordered.hits[1:]] == [None, None, None]
    engine.close()


def test_distances_at_the_poles_and_across_the_antimeridian() -> None:
    lat = np.array([90.0, -90.0, 0.0, 0.0, 10.0])
    lng = np.array([0.0, 0.0, 179.9, -179.9, 20.0])
    got = distances(lat, lng, (0.0, 180.0))
    quarter = math.pi / 2 * 6_371_008.8
    assert abs(got[0] - quarter) < 1 and abs(got[1] - quarter) < 1
    assert abs(got[2] - got[3]) < 1e-6 and got[2] < 12_000  # 0.1 degree either side of the line
    assert abs(got[4] - _meters((0.0, 180.0), (10.0, 20.0))) < 1


def test_a_circle_narrowed_to_its_box_keeps_every_point_inside_anywhere_on_the_globe() -> None:
    """The box a circle is narrowed to first (poles, the antimeridian, circles wider than a
    hemisphere) never drops a point whose distance is within the radius."""
    rng = np.random.default_rng(7)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, 200_000)))  # uniform over the sphere
    lng = rng.uniform(-180, 180, 200_000)
    lat[::97] = np.nan
    centres = [(89.5, 10.0), (-89.9, -170.0), (0.0, 179.9), (10.0, -179.99), (60.0, 175.0), (-45.0, 0.0),
               *[(float(rng.uniform(-90, 90)), float(rng.uniform(-180, 180))) for _ in range(30)]]
    for lat0, lng0 in centres:
        for radius in (1_000.0, 50_000.0, 700_000.0, 5_000_000.0, 15_000_000.0):
            exact = np.nan_to_num(distances(lat, lng, (lat0, lng0)), nan=np.inf) <= radius
            got = area_mask(lat, lng, {"around": {"lat": lat0, "lng": lng0, "radiusM": radius}})
            assert np.array_equal(got, exact), (lat0, lng0, radius, int((got != exact).sum()))


def test_a_polygon_narrowed_to_its_box_answers_as_the_whole_scan() -> None:
    rng = np.random.default_rng(8)
    lat, lng = rng.uniform(40, 55, 100_000), rng.uniform(-5, 15, 100_000)
    lat[::89] = np.nan
    for _ in range(20):
        k = int(rng.integers(3, 15))
        angles = np.sort(rng.uniform(0, 2 * np.pi, k))
        radii = rng.uniform(0.5, 4, k)  # star-shaped, often concave
        centre = (float(rng.uniform(43, 52)), float(rng.uniform(0, 10)))
        points = [[centre[0] + r * np.sin(a), centre[1] + r * np.cos(a)] for r, a in zip(radii, angles, strict=True)]
        got = area_mask(lat, lng, {"within": {"polygon": points}})
        assert np.array_equal(got, _in_polygon(lat, lng, [tuple(p) for p in points]))
        assert 0 < got.sum() < len(lat)
