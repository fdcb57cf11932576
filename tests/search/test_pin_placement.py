"""Pinned documents placed across pages with one fan-out (``merchandising.search_with_pins``),
against a reference: the whole organic list with every live pin at its 1-based position (a pin
past the end moves up to right after the last organic hit), then the page sliced from it."""

from __future__ import annotations

import asyncio
import random

from control_plane.search.merchandising import search_with_pins
from shared.contract import Answer, Hit, Query


def reference(organic: list[str], pins: list[tuple[str, int]], start: int, stop: int) -> list[str]:
    placed: dict[int, str] = {}
    for k, (doc, position) in enumerate(sorted(pins, key=lambda p: p[1]), start=1):
        placed[min(position, len(organic) + k) - 1] = doc
    rest = iter(organic)
    whole = [placed[at] if at in placed else next(rest) for at in range(len(organic) + len(pins))]
    return whole[start:stop]


def fake_shards(organic: list[str], live: set[str], calls: list[Query]):
    async def run(query: Query) -> Answer:
        calls.append(query)
        hits = [Hit(id=doc, score=1.0, document={"id": doc}) for doc in organic[query.offset: query.offset + query.limit]]
        pinned = [Hit(id=doc, score=1.0, document={"id": doc}) for doc in query.pin_ids if doc in live]
        return Answer(total=len(organic), hits=hits, pinned=pinned)
    return run


def test_pins_land_where_the_reference_puts_them_in_one_fan_out() -> None:
    for seed in range(300):
        check(random.Random(seed))


def check(rng: random.Random) -> None:
    organic = [f"o{i}" for i in range(rng.choice((0, 1, 3, 8, 25, 60)))]
    positions = rng.sample(range(1, 40), rng.randint(1, 5))
    pins = [(f"p{i}", position) for i, position in enumerate(sorted(positions))]
    live = {doc for doc, _ in pins if rng.random() < 0.7}  # the others are gone or fail the filters
    limit = rng.choice((1, 3, 5, 10))
    offset = limit * rng.randint(0, 6)
    calls: list[Query] = []
    answer, placed = asyncio.run(search_with_pins(fake_shards(organic, live, calls), Query(q="x", offset=offset, limit=limit),
                                                  pins))
    expected = reference(organic, [p for p in pins if p[0] in live], offset, offset + limit)
    assert [h.id for h in answer.hits] == expected
    assert placed == {doc for doc in expected if doc.startswith("p")}
    assert answer.total == len(organic) + len(live)
    assert answer.pinned == []
    assert len(calls) == 1 and calls[0].pin_ids == tuple(doc for doc, _ in pins)
