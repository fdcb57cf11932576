"""control_plane.shard.feed.catch_up against in-process shards: pages, tombstones, the one
"advance" change, and a replica that restarts empty in the middle of a feed."""

from __future__ import annotations

import shutil

import pytest

from control_plane.shard import ShardBridge, catch_up
from control_plane.shard.feed import ChangeRow
from search_workers.local import LocalHost
from search_workers.replica import ShardReplica
from shared.contract import ShardSpec
from shared.routing import shard_hash
from shared.settings import Settings
from tests.queries import Q
from tests.search_workers.helpers import MAPPING, make_docs

DOCS = make_docs(120)


def table(docs: list[dict], deleted: set[str] = frozenset()) -> list[ChangeRow]:
    """A documents table: one row per id, in sequence order."""
    return [(d["id"], None if d["id"] in deleted else d, i + 1, shard_hash(d["id"]), d["id"] in deleted)
            for i, d in enumerate(docs)]


def source(rows: list[ChangeRow], on_page=None):
    pages = 0

    def read(after: int, upto: int, limit: int) -> list[ChangeRow]:
        nonlocal pages
        pages += 1
        if on_page is not None:
            on_page(pages)
        return [r for r in rows if after < r[2] <= upto][:limit]

    return read


@pytest.fixture
def bridge(tmp_path):
    host = LocalHost(tmp_path / "shards")
    bridge = ShardBridge(Settings(data_dir=tmp_path), host=host)
    yield bridge, host
    bridge.close()


def counts(host: LocalHost, index_id: str) -> dict[tuple[int, int], int]:
    return {(s, r): rep.engine.doc_count for (i, _g, s, r), rep in host._replicas.items() if i == index_id}


async def _total(bridge: ShardBridge, index_id: str) -> int:
    return (await bridge.search(index_id, 1, Q({"limit": 0}))).total


async def test_catch_up_feeds_every_shard_to_the_sequence_and_advances_the_idle_ones(bridge):
    bridge, host = bridge
    bridge.open(ShardSpec("idx_f", 1, 3, 2, MAPPING))
    rows = table(DOCS)
    low = catch_up(bridge, source(rows), index_id="idx_f", generation=1, shards=3, upto=120, page_rows=25)
    assert low == {0: 120, 1: 120, 2: 120}
    assert sum(c for (s, r), c in counts(host, "idx_f").items() if r == 0) == 120
    # a later write that only touches one shard still moves every shard to its sequence
    one = [*rows, (DOCS[0]["id"], None, 121, shard_hash(DOCS[0]["id"]), True)]
    low = catch_up(bridge, source(one), index_id="idx_f", generation=1, shards=3, upto=121)
    assert low == {0: 121, 1: 121, 2: 121}
    assert bridge.applied_seqs("idx_f", 1) == {s: [121, 121] for s in range(3)}
    assert await _total(bridge, "idx_f") == 119


async def test_a_replica_restarted_empty_mid_feed_is_fed_again_not_advanced_over_the_gap(bridge, tmp_path):
    bridge, host = bridge
    bridge.open(ShardSpec("idx_g", 1, 1, 2, MAPPING))
    rows = table(DOCS)

    def restart_replica_1(page: int) -> None:
        if page == 3:  # two pages applied; the replica loses its files and comes back empty
            key = ("idx_g", 1, 0, 1)
            old = host._replicas[key]
            old.close(snapshot=False)
            shutil.rmtree(old.path)
            host._replicas[key] = ShardReplica(old.path, MAPPING, "en")

    low = catch_up(bridge, source(rows, restart_replica_1), index_id="idx_g", generation=1, shards=1, upto=120,
                   page_rows=20)
    assert low == {0: 120}
    assert counts(host, "idx_g") == {(0, 0): 120, (0, 1): 120}  # no gap behind the advanced sequence


async def test_tombstones_reach_a_replica_that_holds_documents_even_when_another_is_empty(bridge):
    bridge, host = bridge
    bridge.open(ShardSpec("idx_t", 1, 1, 2, MAPPING))
    catch_up(bridge, source(table(DOCS[:10])), index_id="idx_t", generation=1, shards=1, upto=10)
    # replica 1 is replaced by an empty one; replica 0 keeps its 10 documents
    key = ("idx_t", 1, 0, 1)
    old = host._replicas[key]
    old.close(snapshot=False)
    shutil.rmtree(old.path)
    host._replicas[key] = ShardReplica(old.path, MAPPING, "en")
    rows = [*table(DOCS[:10]), (DOCS[3]["id"], None, 11, shard_hash(DOCS[3]["id"]), True)]
    low = catch_up(bridge, source(rows), index_id="idx_t", generation=1, shards=1, upto=11)
    assert low == {0: 11}
    assert counts(host, "idx_t") == {(0, 0): 9, (0, 1): 9}
