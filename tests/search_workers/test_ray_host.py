"""RayHost on a local Ray: actors per replica, fan-out, fail-over and rebuild after a kill."""

from __future__ import annotations

import asyncio
import secrets
import shutil
from pathlib import Path

import psutil
import pytest
import ray

from search_workers.actors.factory import actor_name, parse_actor_name
from search_workers.actors.ray_host import RayHost
from search_workers.engine import EngineError
from search_workers.host import ShardNotOpen
from search_workers.local import LocalHost
from shared.contract import ShardSpec
from shared.routing import shard_for
from tests.queries import Q
from tests.search_workers.helpers import MAPPING, feed, make_docs, refeed, release_ray_objects, upserts

DOCS = make_docs(200, seed=11)
SOURCE = upserts(DOCS)
LAST = SOURCE[-1].seq


@pytest.fixture(scope="module")
def namespace():
    ns = f"sstest-{secrets.token_hex(4)}"
    # address="local": a Ray of its own, even while another test's cluster runs on this machine
    ray.init(address="local", num_cpus=2, include_dashboard=False, namespace=ns, log_to_driver=False)
    yield ns
    release_ray_objects()
    ray.shutdown()


@pytest.fixture
async def host(namespace, tmp_path):
    h = RayHost(tmp_path / "shards", namespace=namespace, detached=False)
    yield h
    for name in ray.util.list_named_actors():
        parsed = parse_actor_name(name)
        if parsed:
            await h.drop_index(parsed[0])
    await h.close()


def test_actor_names_round_trip():
    assert actor_name("idx_1", 2, 3, 1) == "shard:idx_1:g2:s3:r1"
    assert parse_actor_name("shard:idx_1:g2:s3:r1") == ("idx_1", 2, 3, 1)
    assert parse_actor_name("other") is None and parse_actor_name("shard:a:b:c:d") is None


async def test_ray_host_end_to_end(host, tmp_path, namespace):
    spec = ShardSpec("idx_ray", 1, 2, 2, MAPPING, "en")
    await host.open(spec)
    await host.open(spec)  # idempotent: same actors
    names = sorted(n for n in ray.util.list_named_actors() if n.startswith("shard:idx_ray:"))
    assert names == [actor_name("idx_ray", 1, s, r) for s in range(2) for r in range(2)]
    await feed(host, "idx_ray", 1, 2, SOURCE, after_seq=0)
    assert await host.applied_seqs("idx_ray", 1) == {0: [LAST, LAST], 1: [LAST, LAST]}

    reference = LocalHost(tmp_path / "ref")
    await reference.open(ShardSpec("idx_ray", 1, 1, 1, MAPPING, "en"))
    await feed(reference, "idx_ray", 1, 1, SOURCE, after_seq=0)
    query = Q({"q": "", "sort": ["price:desc"], "limit": 15, "offset": 10, "facets": ["brand"]})
    got, want = await host.search("idx_ray", 1, query), await reference.search("idx_ray", 1, query)
    assert [h.id for h in got.hits] == [h.id for h in want.hits]
    assert got.total == want.total == 200 and got.facets == want.facets
    await reference.close()

    assert await host.get("idx_ray", 1, DOCS[17]["id"]) == DOCS[17]
    with pytest.raises(EngineError) as err:
        await host.search("idx_ray", 1, Q({"q": "x", "filters": {"title": "x"}}))
    assert err.value.code.startswith("FIELD_NOT")
    with pytest.raises(ShardNotOpen):
        await host.search("idx_ray", 9, Q({}))

    # another process (another host object) finds the actors by name
    other = RayHost(tmp_path / "shards", namespace=namespace, detached=False)
    assert (await other.search("idx_ray", 1, Q({"limit": 0}))).total == 200
    assert await other.healthy()

    await host.drop("idx_ray", 1)
    assert not [n for n in ray.util.list_named_actors() if n.startswith("shard:idx_ray:")]
    assert not (tmp_path / "shards" / "idx_ray" / "g1" / "s0r0").exists()


async def _search_loop(host, index_id, stop: asyncio.Event, results: list):
    while not stop.is_set():
        try:
            ans = await host.search(index_id, 1, Q({"q": "", "limit": 3}))
            results.append((ans.total, ans.partial))
        except Exception as exc:  # recorded, asserted on by the test
            results.append(exc)
        await asyncio.sleep(0.02)


async def test_killed_replica_restarts_empty_and_is_refed(host, tmp_path):
    await host.open(ShardSpec("idx_kill", 1, 2, 2, MAPPING, "en"))
    await host.open(ShardSpec("idx_one", 1, 2, 1, MAPPING, "en"))
    await feed(host, "idx_kill", 1, 2, SOURCE, after_seq=0)
    await feed(host, "idx_one", 1, 2, SOURCE, after_seq=0)
    before = await host.replica_info("idx_kill", 1)

    stop = asyncio.Event()
    res_kill: list = []
    res_one: list = []
    loops = [asyncio.create_task(_search_loop(host, "idx_kill", stop, res_kill)),
             asyncio.create_task(_search_loop(host, "idx_one", stop, res_one))]
    await asyncio.sleep(0.3)
    # lose the files of s0r0 of both indices and kill the actors; Ray restarts them
    for index_id in ("idx_kill", "idx_one"):
        shutil.rmtree(tmp_path / "shards" / index_id / "g1" / "s0r0")
        ray.kill(await host.actor(index_id, 1, 0, 0), no_restart=False)
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        seqs = (await host.applied_seqs("idx_kill", 1))[0] + (await host.applied_seqs("idx_one", 1))[0]
        if seqs == [0, LAST, 0]:
            break
        await asyncio.sleep(0.2)
    assert seqs == [0, LAST, 0]
    after = await host.replica_info("idx_kill", 1)
    assert after[0][0]["pid"] != before[0][0]["pid"] and after[0][1]["pid"] == before[0][1]["pid"]
    # the one-replica index answers from its restarted, empty replica: partial, until the re-feed (a
    # search that backed off while the actor restarted may take a while to come back: waited for)
    while asyncio.get_running_loop().time() < deadline and not any(
            not isinstance(r, Exception) and r[1] for r in res_one):
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)

    # re-feed from the source of truth while searches continue
    assert await host.missing("idx_kill", 1, LAST) == [(0, 0)]
    await refeed(host, "idx_kill", 1, 2, SOURCE, LAST)
    await refeed(host, "idx_one", 1, 2, SOURCE, LAST)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*loops)

    # two replicas: every search answered the whole catalog, even during the restart
    assert not [r for r in res_kill if isinstance(r, Exception)]
    assert {r for r in res_kill} == {(200, False)}
    # one replica: searches never failed; they were partial until the re-feed, then complete
    assert not [r for r in res_one if isinstance(r, Exception)]
    assert res_one[-1] == (200, False) and any(p for _, p in res_one), sorted(set(map(str, res_one)))
    for index_id in ("idx_kill", "idx_one"):
        assert await host.missing(index_id, 1, LAST) == []
        for d in DOCS[::7]:
            assert await host.get(index_id, 1, d["id"]) == d
    assert (await host.applied_seqs("idx_kill", 1))[0] == [LAST, LAST]

    shard0 = [d for d in DOCS if shard_for(d["id"], 2) == 0]
    info = await host.replica_info("idx_kill", 1)
    assert info[0][0]["docCount"] == info[0][1]["docCount"] == len(shard0)

    await host.drop_index("idx_kill")
    await host.drop_index("idx_one")
    assert not [n for n in ray.util.list_named_actors() if n.startswith("shard:")]
    assert not Path(tmp_path / "shards" / "idx_kill").exists() or not any((tmp_path / "shards" / "idx_kill").rglob("*.toc"))


FAST_PATH_QUERIES = [
    {"q": "red shoe", "facets": ["brand", "tags"], "highlight": ["title"]},
    {"q": "blue", "sort": ["price:desc"], "limit": 7, "offset": 7, "highlight": ["title"]},  # page 2
    {"q": "", "sort": ["brand", "stock:desc"], "limit": 5, "offset": 20,
     "facets": [{"field": "price", "type": "range", "ranges": [{"to": 50}, {"from": 50, "to": 150}, {"from": 150}]}]},
    {"q": "sport", "distinct": "brand", "limit": 3, "facets": ["brand"], "highlight": ["title"]},
    {"q": "classic", "distinct": "brand", "limit": 2, "offset": 2, "sort": ["price"]},  # distinct, page 2
    {"q": "red zebra", "facets": ["brand"]},  # relaxed: "zebra" dropped
    {"q": "jacket", "filters": {"brand": ["Acme", "Bolt"], "price": {"gte": 20}}, "retrieve": ["title", "price"]},
    {"q": "boot", "limit": 0, "facets": ["tags"]},
]


async def test_fast_path_answers_equal_the_general_path_and_one_shard(host, tmp_path):
    """``search_here`` (one call per shard on the caller's loop, answers as msgpack bytes) answers
    exactly what ``search`` (the host loop's path, pickled answers) and the same shards in-process
    answer: hits with documents, highlights and sort values, facets, totals, groups."""
    spec = ShardSpec("idx_fast", 1, 3, 1, MAPPING, "en")
    await host.open(spec)
    await feed(host, "idx_fast", 1, 3, SOURCE, after_seq=0)
    sharded = LocalHost(tmp_path / "sharded")
    await sharded.open(ShardSpec("idx_fast", 1, 3, 1, MAPPING, "en"))
    await feed(sharded, "idx_fast", 1, 3, SOURCE, after_seq=0)
    try:
        for spec_q in FAST_PATH_QUERIES:
            query = Q(spec_q)
            fast = await host.search_here("idx_fast", 1, query)
            assert fast is not None, spec_q
            assert fast == await host.search("idx_fast", 1, query), spec_q
            assert fast == await sharded.search("idx_fast", 1, query), spec_q  # same shards in-process
        assert any(h.highlights for h in (await host.search_here("idx_fast", 1, Q(FAST_PATH_QUERIES[0]))).hits)
        assert (await host.search_here("idx_fast", 1, Q(FAST_PATH_QUERIES[3]))).hits[0].group_size
    finally:
        await sharded.close()

    # refusals of the engine reach the caller as themselves, as from search()
    with pytest.raises(EngineError) as err:
        await host.search_here("idx_fast", 1, Q({"q": "x", "filters": {"title": "x"}}))
    assert err.value.code.startswith("FIELD_NOT")
    # actors not known to this host object yet: the general path (which finds them) answers
    other = RayHost(tmp_path / "shards", namespace=host.namespace, detached=False)
    assert await other.search_here("idx_fast", 1, Q({})) is None
    assert (await other.search("idx_fast", 1, Q({"limit": 0}))).total == 200
    assert (await other.search_here("idx_fast", 1, Q({"limit": 0}))).total == 200
    # a shard seen at a later seq than its replica answers: left to the general path (fail-over)
    host._note_seq("idx_fast", 1, 0, LAST + 1)
    assert await host.search_here("idx_fast", 1, Q({})) is None
    assert (await host.search("idx_fast", 1, Q({}))).partial


async def _kill_for_good(handle) -> None:
    """``ray.kill`` without restart, returning once calls fail and the actor's process is gone (the
    kill is asynchronous: a call made right after it may still be answered, and the process - which
    also answers over its channel - exits a moment after Ray counts the actor dead)."""
    pid = (await handle.info.remote())["pid"]
    ray.kill(handle, no_restart=True)
    for _ in range(100):
        try:
            await handle.applied_seq.remote()
        except ray.exceptions.RayActorError:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the killed actor still answers")
    for _ in range(200):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the killed actor's process is still running")


async def test_fast_path_falls_back_when_a_replica_is_down(host, tmp_path):
    spec = ShardSpec("idx_down", 1, 2, 1, MAPPING, "en")
    await host.open(spec)
    await feed(host, "idx_down", 1, 2, SOURCE, after_seq=0)
    assert (await host.search_here("idx_down", 1, Q({"limit": 0}))).total == 200
    await _kill_for_good(await host.actor("idx_down", 1, 1, 0))  # no answer from it
    assert await host.search_here("idx_down", 1, Q({"limit": 0})) is None
    answer = await host.search("idx_down", 1, Q({"limit": 0}))  # revives it (empty, to be re-fed)
    assert answer.total <= 200


@pytest.mark.exclusive  # bounds how long the search waits (under the retry timeout)
async def test_a_replica_another_process_recreated_replaces_the_dead_handle(host, tmp_path):
    """Two API processes hold handles to the same actors; one of them is killed for good. The first
    process to search re-creates it under its name; the other, finding that name taken, must call the
    new actor, not the dead one for its whole retry window (that answered 503 after 45 s)."""
    spec = ShardSpec("idx_twice", 1, 2, 1, MAPPING, "en")
    await host.open(spec)
    await feed(host, "idx_twice", 1, 2, SOURCE, after_seq=0)
    other = RayHost(tmp_path / "shards", namespace=host.namespace, detached=False)
    other.retry_timeout = 4.0  # fails fast if it keeps calling the dead actor
    assert (await other.search("idx_twice", 1, Q({"limit": 0}))).total == 200  # finds the actors by name
    await other.open(spec)  # and (as every serving process does at start-up) knows the spec
    dead = await other.actor("idx_twice", 1, 0, 0)
    await _kill_for_good(await host.actor("idx_twice", 1, 0, 0))
    assert (await host.search("idx_twice", 1, Q({"limit": 0}))).total <= 200  # re-creates s0r0
    revived = await host.actor("idx_twice", 1, 0, 0)
    assert revived != dead
    started = asyncio.get_running_loop().time()
    assert (await other.search("idx_twice", 1, Q({"limit": 0}))).total <= 200
    assert asyncio.get_running_loop().time() - started < 3
    assert await other.actor("idx_twice", 1, 0, 0) == revived
    assert len([n for n in ray.util.list_named_actors() if n.startswith("shard:idx_twice:")]) == 2
    await other.close()


def _batch_queries() -> list[dict]:
    """~30 different searches: words, pages, sorts, filters, facets, highlights, distinct."""
    from tests.search_workers.helpers import ADJ, BRANDS, NOUN

    out: list[dict] = []
    for i, adj in enumerate(ADJ):
        out.append({"q": f"{adj} {NOUN[i % len(NOUN)]}", "facets": ["brand", "tags"], "highlight": ["title"]})
        out.append({"q": adj, "sort": ["price:desc"], "limit": 5, "offset": i % 3 * 5,
                    "filters": {"brand": BRANDS[i % len(BRANDS)]}})
    out += FAST_PATH_QUERIES
    return out


async def _open_fed(host, index_id: str, shards: int, replicas: int) -> None:
    await host.open(ShardSpec(index_id, 1, shards, replicas, MAPPING, "en"))
    await feed(host, index_id, 1, shards, SOURCE, after_seq=0)


async def test_concurrent_searches_are_batched_with_the_answers_of_sequential_ones(host):
    """Searches arriving while a call to an actor is in flight go to it together in one call
    (``search_many_packed``), and each gets exactly the answer it gets alone."""
    host.channels = False  # Ray calls, which these batch
    await _open_fed(host, "idx_batch", 2, 2)
    queries = [Q(q) for q in _batch_queries()]
    assert len(queries) >= 28
    alone = [await host.search_here("idx_batch", 1, q) for q in queries]  # one at a time: no batch
    assert all(a is not None for a in alone)
    assert host.fast_calls == host.fast_queries == 2 * len(queries)
    host.batching = False
    assert [await host.search_here("idx_batch", 1, q) for q in queries] == alone  # the un-batched path
    host.batching = True
    for in_flight in (1, 2):
        host.max_in_flight = in_flight
        calls, sent = host.fast_calls, host.fast_queries
        together = await asyncio.gather(*(host.search_here("idx_batch", 1, q) for q in queries))
        assert together == alone
        assert host.fast_queries - sent == 2 * len(queries)
        assert host.fast_calls - calls <= len(queries)  # batches: at most half as many calls as shard queries
    host.max_in_flight = type(host).max_in_flight
    # the general path answers the same
    assert [await host.search("idx_batch", 1, q) for q in queries[:5]] == alone[:5]


async def test_an_engine_error_in_a_batch_reaches_only_its_caller(host):
    host.channels = False  # Ray calls, which these batch
    await _open_fed(host, "idx_batcherr", 2, 1)
    queries = [Q(q) for q in _batch_queries()]
    alone = [await host.search_here("idx_batcherr", 1, q) for q in queries]
    bad = Q({"q": "x", "filters": {"title": "x"}})  # title is not filterable
    mixed = [*queries[:10], bad, *queries[10:]]
    host.max_in_flight = 1
    calls, sent = host.fast_calls, host.fast_queries
    got = await asyncio.gather(*(host.search_here("idx_batcherr", 1, q) for q in mixed), return_exceptions=True)
    assert host.fast_calls - calls < host.fast_queries - sent  # batches formed
    assert isinstance(got[10], EngineError) and got[10].code.startswith("FIELD_NOT")
    assert [*got[:10], *got[11:]] == alone
    # alone, it is raised as from the un-batched path
    with pytest.raises(EngineError):
        await host.search_here("idx_batcherr", 1, bad)


async def test_batched_searches_fall_back_when_a_replica_is_down(host):
    host.channels = False  # Ray calls, which these batch
    await _open_fed(host, "idx_batchdown", 2, 1)
    queries = [Q(q) for q in _batch_queries()]
    await _kill_for_good(await host.actor("idx_batchdown", 1, 1, 0))
    got = await asyncio.gather(*(host.search_here("idx_batchdown", 1, q) for q in queries))
    assert got == [None] * len(queries)  # every one left to the general path


async def _until_channels(host, index_id: str, query) -> None:
    """Search until the lanes have opened their channels (the first searches make Ray calls meanwhile)."""
    for _ in range(200):
        before = host.channel_queries
        await host.search_here(index_id, 1, query)
        if host.channel_queries - before == 2:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no channel opened")


async def test_searches_on_this_node_go_over_the_actors_channels(host):
    """On the actors' node, shard queries go over the actors' Unix sockets, not Ray calls, and
    answer exactly what Ray calls and the general path answer; engine refusals are raised as such."""
    await _open_fed(host, "idx_chan", 2, 2)
    queries = [Q(q) for q in _batch_queries()]
    await _until_channels(host, "idx_chan", queries[0])
    calls, sent = host.fast_calls, host.channel_queries
    over_channel = [await host.search_here("idx_chan", 1, q) for q in queries]
    together = await asyncio.gather(*(host.search_here("idx_chan", 1, q) for q in queries))
    assert host.fast_calls == calls  # no Ray call
    assert host.channel_queries - sent == 2 * 2 * len(queries)
    host.channels = False
    by_ray = [await host.search_here("idx_chan", 1, q) for q in queries]
    assert host.fast_calls > calls
    host.channels = True
    assert over_channel == together == by_ray
    assert all(a is not None and not a.partial for a in over_channel)
    assert [await host.search("idx_chan", 1, q) for q in queries[:5]] == over_channel[:5]
    with pytest.raises(EngineError) as err:
        await host.search_here("idx_chan", 1, Q({"q": "x", "filters": {"title": "x"}}))
    assert err.value.code.startswith("FIELD_NOT")


async def test_no_channel_to_actors_on_another_node(host):
    await _open_fed(host, "idx_elsewhere", 2, 1)
    host._node = "some-other-node"
    for _ in range(10):
        assert (await host.search_here("idx_elsewhere", 1, Q({"limit": 0}))).total == 200
        await asyncio.sleep(0.02)
    assert host.channel_queries == 0
    assert host.fast_queries >= 20


async def test_a_restarted_actor_is_reached_over_its_new_channel(host):
    """A killed actor's channel breaks: its searches take the general path (Ray calls, retries),
    and once Ray has restarted it the lane asks for its new address and uses that."""
    host.channel_retry = 0.05
    await _open_fed(host, "idx_rechan", 2, 1)
    query = Q({"q": "red", "facets": ["brand"]})
    await _until_channels(host, "idx_rechan", query)
    expected = await host.search_here("idx_rechan", 1, query)
    before = (await host.replica_info("idx_rechan", 1))[1][0]["pid"]
    ray.kill(await host.actor("idx_rechan", 1, 1, 0), no_restart=False)
    for _ in range(100):  # answered throughout: the fast path declines, the general path retries
        answer = await host.search_here("idx_rechan", 1, query) or await host.search("idx_rechan", 1, query)
        assert answer.total <= expected.total
        if (await host.replica_info("idx_rechan", 1))[1][0]["pid"] != before:
            break
        await asyncio.sleep(0.05)
    assert (await host.replica_info("idx_rechan", 1))[1][0]["pid"] != before
    await refeed(host, "idx_rechan", 1, 2, SOURCE, LAST)  # it reopened its files; nothing to re-feed
    await _until_channels(host, "idx_rechan", query)
    assert await host.search_here("idx_rechan", 1, query) == expected
