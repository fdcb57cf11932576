"""A page ranked by score alone is taken from the proximity window's matches (``scoring.combine``
returns the window, ``ShardSearch.run`` ranks within it): every page, with filters, exclusions and
ties, is the page ranking every match gives, and the shortcut is taken only where nothing reorders
the matches after the window (sort keys, boosts, boost filters)."""

from __future__ import annotations

import random

import pytest

from search_workers.engine import ShardEngine
from search_workers.engine import ranking as ranking_module
from search_workers.engine import search as search_module
from search_workers.engine.scoring import PROXIMITY_WINDOW
from shared.contract import Boost, BoostFilter, Change, Query, SortKey

MAPPING = {"idField": "id", "fields": {
    "name": {"type": "text", "searchable": True},
    "brand": {"type": "keyword", "searchable": True, "filterable": True},
    "price": {"type": "float", "filterable": True, "sortable": True},
}}
WORDS = ["case", "for", "iphone", "black", "cover", "slim", "clear", "stand"]
DOCS = 8 * PROXIMITY_WINDOW


def _doc(rng: random.Random, i: int) -> dict:
    words = rng.sample(WORDS, rng.randrange(3, 7)) + [f"m{i % 97}"]
    words += [f"f{rng.randrange(50)}" for _ in range(rng.randrange(0, 12))]  # lengths: varied scores
    rng.shuffle(words)
    return {"id": str(i), "name": " ".join(words), "brand": rng.choice(["Acme", "Bolt", "Cobra"]),
            "price": float(rng.randrange(1, 40))}  # few prices: equal scores and sort values


@pytest.fixture(scope="module")
def engine(tmp_path_factory):  # type: ignore[no-untyped-def]
    rng = random.Random(17)
    e = ShardEngine(tmp_path_factory.mktemp("window") / "shard", MAPPING)
    e.apply([Change(i + 1, "upsert", str(i), _doc(rng, i)) for i in range(DOCS)])
    yield e
    e.close()


def _without_window(monkeypatch: pytest.MonkeyPatch) -> None:
    real = search_module.combine

    def every_match(*args, **kwargs):  # type: ignore[no-untyped-def]
        score, _ = real(*args, **kwargs)
        return score, None

    monkeypatch.setattr(search_module, "combine", every_match)


QUERIES = [
    Query(q="case for", limit=20),
    Query(q="case for", limit=20, offset=40),
    Query(q="iphone case black", limit=100, offset=200),
    Query(q="case for", limit=50, filters={"brand": ["Acme", "Bolt"]}),
    Query(q="clear stand case", limit=10, exclude_ids=tuple(str(i) for i in range(0, 600, 3))),
    Query(q="case for", limit=30, offset=PROXIMITY_WINDOW - 10),  # reaches past the window: every match
    Query(q="case black", limit=20, sort=(SortKey("price"),)),
    Query(q="case black", limit=20, boosts=(Boost("price", weight=0.1),)),
    Query(q="case black", limit=20, boost_filters=(BoostFilter({"brand": "Bolt"}, weight=2.0),)),
    Query(q="iphone", limit=20),  # one word: no window
]


def _pages(engine: ShardEngine) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in engine.search(q).hits] for q in QUERIES]


def test_pages_from_the_window_equal_pages_from_every_match(engine, monkeypatch):
    sizes: list[int] = []
    real_ranked = search_module.ranked

    def spy(pos, k, *args):  # type: ignore[no-untyped-def]
        sizes.append(len(pos))
        return real_ranked(pos, k, *args)

    monkeypatch.setattr(search_module, "ranked", spy)
    windowed = _pages(engine)
    windowed_sizes = list(sizes)
    with monkeypatch.context() as m:
        _without_window(m)
        sizes.clear()
        reference = _pages(engine)
        everything = list(sizes)
    for q, got, want in zip(QUERIES, windowed, reference, strict=True):
        assert got, q
        assert got == want, q
    assert all(n > PROXIMITY_WINDOW for n in everything[:6]), everything  # the broad queries match more than a window
    # taken where only the score orders the page and it lies in the window (ties at its edge are all
    # in it), not otherwise
    shortcut = [n < every for n, every in zip(windowed_sizes, everything, strict=True)]
    assert shortcut == [True, True, True, True, True, False, False, False, False, False], (windowed_sizes, everything)
    assert ranking_module.ranked is real_ranked
