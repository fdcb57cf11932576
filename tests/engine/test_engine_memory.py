"""A closed shard's memory is garbage once its owner lets it go (issue 34, item 2).

The write-behind persister's reading thread kept the directory state of the last answer it read in a
local while it waited for the next; that state's ``on_error`` is the engine, so the last generation
closed (a reindex's old one, usually) stayed whole in memory: ~120 MiB per 100k products in the
serving process that ran the reindex, measured by ``benchmarks.catalog_bench``.
"""

from __future__ import annotations

import gc
import weakref

import pytest

from search_workers.engine import ShardEngine, shard
from shared.contract import Query

from .conftest import upserts

MAPPING = {"idField": "id", "fields": {"title": {"type": "text", "searchable": True}}}


@pytest.mark.parametrize("mode", ["process", "inline"])
@pytest.mark.parametrize("snapshot", [True, False], ids=["closed", "dropped"])
def test_a_closed_shard_leaves_nothing_alive(tmp_path, monkeypatch, mode, snapshot):
    monkeypatch.setattr(shard, "persist_mode", lambda: mode)
    e = ShardEngine(tmp_path / "shard", MAPPING)
    e.apply(upserts([{"id": str(i), "title": f"product {i}"} for i in range(50)]))
    assert e.search(Query(q="product", limit=5)).total == 50
    memory = weakref.ref(e._mem)
    engine = weakref.ref(e)
    e.close(snapshot)  # a dropped generation's replicas close without a snapshot
    del e
    gc.collect()
    assert engine() is None, [type(r).__name__ for r in gc.get_referrers(engine())]
    assert memory() is None


@pytest.mark.parametrize("times", [1, 255, 256, 300, 1000])
def test_term_frequencies_kept_in_a_byte_still_find_and_rank(tmp_path, times):
    """Frequencies are kept in a byte (``memindex.MAX_TF``): a word typed more often than a byte holds
    is kept at its ceiling, never wrapped around (256 wrapped is 0, which matches nothing)."""
    e = ShardEngine(tmp_path / "shard", MAPPING)
    e.apply(upserts([{"id": "many", "title": " ".join(["charger"] * times)},
                     {"id": "once", "title": "charger cable"}]))
    answer = e.search(Query(q="charger", limit=5))
    assert [h.id for h in answer.hits] == ["many", "once"]  # (once: the shorter title)
    assert answer.total == 2
    e.apply(upserts([{"id": "more", "title": " ".join(["charger"] * times) + " dock"}], start_seq=3))
    assert e.search(Query(q="charger dock", limit=5)).total == 1  # an append to the postings: the same
    e.close()
