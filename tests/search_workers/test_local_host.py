"""LocalHost with the real engine: open, apply by shard_for, fan-out + merge, get, catch-up, drop."""

from __future__ import annotations

import asyncio
import shutil
import threading

import pytest

from control_plane.shard import ShardBridge
from search_workers.engine import EngineError, MappingError, ShardBusy
from search_workers.host import ShardNotOpen
from search_workers.hosting import make_host
from search_workers.local import LocalHost
from shared.contract import Change, ShardSpec
from shared.routing import shard_for
from shared.settings import Settings
from tests.queries import Q
from tests.search_workers.helpers import MAPPING, by_shard, feed, make_docs, refeed, upserts

DOCS = make_docs(300)
SOURCE = upserts(DOCS)
LAST = SOURCE[-1].seq


@pytest.fixture
async def hosts(tmp_path):
    """The same catalog in 3 shards x 2 replicas and in one shard (the reference)."""
    sharded, single = LocalHost(tmp_path / "a"), LocalHost(tmp_path / "b")
    await sharded.open(ShardSpec("idx_a", 1, 3, 2, MAPPING, "en"))
    await single.open(ShardSpec("idx_a", 1, 1, 1, MAPPING, "en"))
    await feed(sharded, "idx_a", 1, 3, SOURCE, after_seq=0)
    await feed(single, "idx_a", 1, 1, SOURCE, after_seq=0)
    yield sharded, single
    await sharded.close()
    await single.close()


async def test_make_host_without_ray_address_serves_shards_in_process(tmp_path):
    host = make_host(Settings(data_dir=tmp_path))
    assert type(host) is LocalHost  # not a Ray host: no cluster is joined or started
    await host.open(ShardSpec("idx_m", 1, 2, 1, MAPPING, "en"))
    seqs = await feed(host, "idx_m", 1, 2, SOURCE, after_seq=0)
    assert seqs == {0: [LAST], 1: [LAST]}
    assert (await host.search("idx_m", 1, Q({"q": "", "limit": 0}))).total == len(DOCS)
    assert await host.get("idx_m", 1, DOCS[42]["id"]) == DOCS[42]
    assert sorted(p.name for p in (tmp_path / "shards" / "idx_m" / "g1").iterdir()) == ["s0r0", "s1r0"]
    await host.close()


async def test_documents_land_on_their_shard_and_every_replica(hosts, tmp_path):
    sharded, _ = hosts
    assert await sharded.applied_seqs("idx_a", 1) == {0: [LAST, LAST], 1: [LAST, LAST], 2: [LAST, LAST]}
    counts = {s: len(c) for s, c in by_shard(SOURCE, 3).items()}
    for (index_id, gen, s, r), rep in sharded._replicas.items():
        assert rep.engine.doc_count == counts[s]
        assert rep.path == str(tmp_path / "a" / index_id / f"g{gen}" / f"s{s}r{r}")
    assert sum(counts.values()) == 300 and min(counts.values()) > 60


QUERIES = [
    Q({"q": "", "sort": ["price:asc"], "limit": 25}),
    Q({"q": "", "sort": ["brand:desc", "price:asc"], "limit": 10, "offset": 40}),
    Q({"q": "", "sort": ["stock:desc", "price:desc"], "limit": 300}),
    Q({"q": "red", "sort": ["price:asc"], "limit": 30, "filters": {"price": {"lt": 100}}}),
]


@pytest.mark.parametrize("query", QUERIES)
async def test_sorted_search_matches_a_single_shard(hosts, query):
    sharded, single = hosts
    a = await sharded.search("idx_a", 1, query)
    b = await single.search("idx_a", 1, query)
    assert a.total == b.total > 0
    assert [h.id for h in a.hits] == [h.id for h in b.hits]
    assert a.partial is False


async def test_facets_and_totals_match_a_single_shard(hosts):
    sharded, single = hosts
    query = Q({"q": "shoe", "operator": "or", "limit": 5,
               "facets": [{"field": "brand", "size": 4}, {"field": "tags", "sort": "alpha"},
                          {"field": "price", "type": "range", "ranges": [{"to": 50}, {"from": 50, "to": 150}, {"from": 150}]}],
               "filters": {"brand": ["Acme", "Bolt"]}})
    a = await sharded.search("idx_a", 1, query)
    b = await single.search("idx_a", 1, query)
    assert a.total == b.total > 0
    assert a.facets["price"] == b.facets["price"]
    assert sum(a.facets["price"]) == a.total
    assert len(a.facets["brand"]) == 4  # disjunctive: other brands counted too, cut to size
    assert a.facets["brand"] == dict(sorted(b.facets["brand"].items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    assert list(a.facets["tags"]) == sorted(a.facets["tags"])
    assert a.facets["tags"] == b.facets["tags"]


async def test_relevance_search_pages_without_overlap(hosts):
    sharded, single = hosts
    query = {"q": "blue shoe", "operator": "or"}
    total = (await single.search("idx_a", 1, Q({**query, "limit": 0}))).total
    seen: list[str] = []
    for page in range(0, total, 7):
        ans = await sharded.search("idx_a", 1, Q({**query, "offset": page, "limit": 7}))
        assert ans.total == total
        seen += [h.id for h in ans.hits]
    assert len(seen) == len(set(seen)) == total
    scores = {h.id: h.score for h in (await sharded.search("idx_a", 1, Q({**query, "limit": 500}))).hits}
    assert [scores[i] for i in seen] == sorted(scores.values(), reverse=True)


async def test_get_reads_the_owning_shard(hosts):
    sharded, _ = hosts
    doc = DOCS[123]
    assert await sharded.get("idx_a", 1, doc["id"]) == doc
    assert await sharded.get("idx_a", 1, "nope") is None


async def test_deletes_and_updates_by_sequence(hosts):
    sharded, _ = hosts
    target = DOCS[5]
    changes = [Change(seq=LAST + 1, op="delete", id=target["id"]),
               Change(seq=LAST + 2, op="upsert", id=DOCS[6]["id"], doc={**DOCS[6], "title": "zebra hat"})]
    seqs = await feed(sharded, "idx_a", 1, 3, changes, after_seq=LAST)
    assert seqs == {s: [LAST + 2, LAST + 2] for s in range(3)}  # also the shards that got nothing
    assert await sharded.get("idx_a", 1, target["id"]) is None
    ans = await sharded.search("idx_a", 1, Q({"q": "zebra"}))
    assert [h.id for h in ans.hits] == [DOCS[6]["id"]]
    # replay is harmless
    await feed(sharded, "idx_a", 1, 3, changes, after_seq=LAST)
    assert (await sharded.search("idx_a", 1, Q({"q": "", "limit": 0}))).total == 299


async def test_engine_errors_reach_the_caller(hosts):
    sharded, _ = hosts
    with pytest.raises(EngineError) as err:
        await sharded.search("idx_a", 1, Q({"q": "x", "sort": ["title:asc"]}))
    assert err.value.code == "FIELD_NOT_SORTABLE"
    with pytest.raises(ShardNotOpen):
        await sharded.search("idx_a", 2, Q({"q": "x"}))
    with pytest.raises(MappingError):
        await sharded.open(ShardSpec("idx_b", 1, 1, 1, {"fields": {"x": {"type": "nope"}}}, "en"))


async def test_lost_replica_files_are_rebuilt_and_search_avoids_the_empty_replica(hosts):
    sharded, _ = hosts
    rep = sharded._replicas[("idx_a", 1, 1, 0)]
    path = rep.path
    # simulate losing the files of s1r0 and the replica being restarted empty
    await sharded._run(rep.close)
    shutil.rmtree(path)
    from search_workers.replica import ShardReplica

    sharded._replicas[("idx_a", 1, 1, 0)] = await sharded._run(ShardReplica, path, MAPPING, "en")
    assert (await sharded.applied_seqs("idx_a", 1))[1] == [0, LAST]
    # a task arriving now is refused by the empty replica instead of leaving a gap
    change = [Change(seq=LAST + 1, op="upsert", id="new1", doc={"id": "new1", "title": "new item"})]
    seqs = await feed(sharded, "idx_a", 1, 3, change, after_seq=LAST)
    assert seqs[1] == [0, LAST + 1]
    # searches and gets keep seeing the whole catalog: the stale replica is skipped
    in_shard_1 = next(d for d in DOCS if shard_for(d["id"], 3) == 1)
    for _ in range(4):  # round-robin: every replica gets asked first at some point
        ans = await sharded.search("idx_a", 1, Q({"q": "", "limit": 0}))
        assert ans.total == 301 and ans.partial is False
    for _ in range(4):
        assert await sharded.get("idx_a", 1, in_shard_1["id"]) == in_shard_1
    assert await sharded.missing("idx_a", 1, LAST + 1) == [(1, 0)]
    await refeed(sharded, "idx_a", 1, 3, SOURCE + change, LAST + 1)
    assert await sharded.missing("idx_a", 1, LAST + 1) == []
    assert sharded._replicas[("idx_a", 1, 1, 0)].engine.doc_count == sharded._replicas[("idx_a", 1, 1, 1)].engine.doc_count


async def test_single_replica_stale_answer_is_flagged_partial(tmp_path):
    host = LocalHost(tmp_path)
    await host.open(ShardSpec("idx_p", 1, 2, 1, MAPPING, "en"))
    await feed(host, "idx_p", 1, 2, SOURCE[:50], after_seq=0)
    rep = host._replicas[("idx_p", 1, 0, 0)]
    await host._run(rep.destroy)
    from search_workers.replica import ShardReplica

    host._replicas[("idx_p", 1, 0, 0)] = ShardReplica(rep.path, MAPPING, "en")
    ans = await host.search("idx_p", 1, Q({"q": "", "limit": 0}))
    assert ans.partial is True and ans.total == len(by_shard(SOURCE[:50], 2)[1])
    await refeed(host, "idx_p", 1, 2, SOURCE[:50], 50)
    ans = await host.search("idx_p", 1, Q({"q": "", "limit": 0}))
    assert ans.partial is False and ans.total == 50
    await host.close()


async def test_reopen_after_restart_keeps_data_and_drop_removes_files(tmp_path):
    host = LocalHost(tmp_path)
    spec = ShardSpec("idx_r", 3, 2, 1, MAPPING, "en")
    await host.open(spec)
    await host.open(spec)  # idempotent
    await feed(host, "idx_r", 3, 2, SOURCE[:40], after_seq=0)
    await host.close()
    host = LocalHost(tmp_path)
    await host.open(spec)
    assert await host.applied_seqs("idx_r", 3) == {0: [40], 1: [40]}
    assert (await host.search("idx_r", 3, Q({"limit": 0}))).total == 40
    await host.open(ShardSpec("idx_r", 4, 1, 1, MAPPING, "en"))
    await host.drop("idx_r", 3)
    assert not (tmp_path / "idx_r" / "g3").exists() and (tmp_path / "idx_r" / "g4").exists()
    with pytest.raises(ShardNotOpen):
        await host.search("idx_r", 3, Q({}))
    await host.drop_index("idx_r")
    assert not (tmp_path / "idx_r").exists()
    assert await host.healthy()
    await host.close()
    assert not await host.healthy()


async def test_a_dropped_generation_gives_its_memory_back(tmp_path, monkeypatch):
    """Dropping a generation (after a reindex's swap) or an index hands the freed pages back to the
    system (search_workers.memory): without it a process kept its peak after every reindex."""
    released: list[tuple[str, ...]] = []

    def release() -> None:
        released.append(tuple(sorted(k[:2] for k in host._replicas)))

    monkeypatch.setattr("search_workers.local.release_freed_memory", release)
    host = LocalHost(tmp_path)
    await host.open(ShardSpec("idx_m", 1, 2, 1, MAPPING, "en"))
    await feed(host, "idx_m", 1, 2, SOURCE[:20], after_seq=0)
    await host.open(ShardSpec("idx_m", 2, 2, 1, MAPPING, "en"))
    await feed(host, "idx_m", 2, 2, SOURCE[:10], after_seq=0)
    await feed(host, "idx_m", 2, 2, SOURCE[10:20], after_seq=10)  # two pages: buffers with room
    before = await host.search("idx_m", 2, Q(q="", limit=50))
    await host.drop("idx_m", 1)
    assert released == [(("idx_m", 2), ("idx_m", 2))]  # after the old generation's replicas closed
    # the generation kept is packed first: each field's postings views of one array
    for key, rep in host._replicas.items():
        for plist in rep.engine._mem.postings.values():
            assert len({id(p.docs.base) for p in plist.values()}) <= 1, key
    after = await host.search("idx_m", 2, Q(q="", limit=50))
    assert [h.id for h in after.hits] == [h.id for h in before.hits] and after.total == 20
    await host.drop_index("idx_m")
    assert released[-1] == ()
    await host.close()


def test_releasing_freed_memory_runs_here():
    from search_workers.memory import _TRIM, release_freed_memory

    release_freed_memory()
    assert _TRIM is not None  # glibc on this machine and in the image: the pages go back


async def test_engine_calls_do_not_block_the_event_loop(tmp_path):
    host = LocalHost(tmp_path)
    await host.open(ShardSpec("idx_t", 1, 2, 1, MAPPING, "en"))
    loop_thread = threading.get_ident()
    seen: list[int] = []
    rep = host._replicas[("idx_t", 1, 0, 0)]
    original = rep.apply

    def spy(*args):
        seen.append(threading.get_ident())
        return original(*args)

    rep.apply = spy  # type: ignore[method-assign]
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    t = asyncio.create_task(ticker())
    await feed(host, "idx_t", 1, 2, upserts(make_docs(400, seed=3)), after_seq=0)
    t.cancel()
    assert seen and all(i != loop_thread for i in seen)
    assert ticks > 1
    await host.close()


@pytest.mark.parametrize("query", QUERIES + [Q({"q": "red", "facets": [{"field": "brand", "type": "terms"}], "limit": 20})])
async def test_search_now_answers_like_the_async_fan_out(hosts, query):
    sharded, _ = hosts
    expected = await sharded.search("idx_a", 1, query)
    now = await asyncio.to_thread(sharded.search_now, "idx_a", 1, query)
    assert [h.id for h in now.hits] == [h.id for h in expected.hits]
    assert now.total == expected.total and now.facets == expected.facets
    with pytest.raises(ShardNotOpen):
        sharded.search_now("idx_missing", 1, query)


async def test_a_busy_shard_is_waited_for_on_a_thread_not_on_the_loop(hosts, tmp_path):
    """While a shard's memory is being updated, ``search_now(wait=False)`` refuses at once and the
    bridge waits on a thread: the event loop keeps running, and the answer is the full one."""
    sharded, _ = hosts
    query = Q({"q": "red", "limit": 10})
    expected = sharded.search_now("idx_a", 1, query)
    engines = [sharded._replicas[("idx_a", 1, 1, r)].engine for r in (0, 1)]  # both replicas of shard 1
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with engines[0]._lock, engines[1]._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    bridge = ShardBridge(Settings(data_dir=tmp_path / "bridge"), host=sharded)
    try:
        with pytest.raises(ShardBusy):
            sharded.search_now("idx_a", 1, query, wait=False)
        pending = asyncio.ensure_future(bridge.search("idx_a", 1, query))
        ticks = 0
        for _ in range(5):
            await asyncio.sleep(0.01)
            ticks += 1
        assert not pending.done() and ticks == 5  # the loop ran while the search waited
        release.set()
        answer = await asyncio.wait_for(pending, 10)
        assert [h.id for h in answer.hits] == [h.id for h in expected.hits]
        assert answer.total == expected.total
    finally:
        release.set()
        holder.join(5)
        bridge._waiters.shutdown(wait=True)
