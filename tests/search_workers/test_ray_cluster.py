"""RayHost on a three-node cluster on one machine (``ray.cluster_utils.Cluster``): placement across
nodes, no document lost when shard actors are killed in the middle of a search loop, replicas of a
node that left re-created on the others, and a node that joins taking its share (``rebalance``)."""

from __future__ import annotations

import asyncio
import secrets
import shutil

import pytest
import ray
from ray.cluster_utils import Cluster

from search_workers.actors.ray_host import RayHost
from shared.contract import ShardSpec
from tests.queries import Q
from tests.search_workers.helpers import MAPPING, feed, make_docs, refeed, release_ray_objects, upserts

pytestmark = pytest.mark.long  # tens of seconds: collected first (tests/parallel.py)

DOCS = make_docs(240, seed=5)
SOURCE = upserts(DOCS)
LAST = SOURCE[-1].seq


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, namespace=f"sstest-{secrets.token_hex(4)}", log_to_driver=False)
    yield c
    release_ray_objects()
    ray.shutdown()
    c.shutdown()


async def test_replicas_spread_over_nodes_and_survive_kills(cluster, tmp_path):
    ns = ray.get_runtime_context().namespace
    host = RayHost(tmp_path / "shards", namespace=ns, detached=True)
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    assert len(nodes) == 3
    try:
        await host.open(ShardSpec("idx_c", 1, 3, 2, MAPPING, "en"))
        info = await host.replica_info("idx_c", 1)
        placed = {(s, r): info[s][r]["nodeId"] for s in info for r in range(2)}
        for s in range(3):
            assert placed[(s, 0)] != placed[(s, 1)], "replicas of one shard share a node"
        assert set(placed.values()) == set(nodes), "shards did not spread over every node"

        await feed(host, "idx_c", 1, 3, SOURCE, after_seq=0)
        stop = asyncio.Event()
        results: list = []

        async def loop() -> None:
            while not stop.is_set():
                try:
                    ans = await host.search("idx_c", 1, Q({"q": "", "limit": 5, "facets": ["brand"]}))
                    results.append((ans.total, sum(ans.facets["brand"].values())))
                except Exception as exc:
                    results.append(exc)
                await asyncio.sleep(0.02)

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.3)
        for _ in range(600):  # shards write to disk behind memory: s2r1 must have its files to restart on
            if (persisted := (await host.replica_info("idx_c", 1))[2][1]["persistedSeq"]) == LAST:
                break
            await asyncio.sleep(0.1)
        assert persisted == LAST, "s2r1 did not write its files within a minute"
        # s1r0 loses its files and dies; s2r1 just dies (restarts on its files)
        shutil.rmtree(tmp_path / "shards" / "idx_c" / "g1" / "s1r0")
        ray.kill(await host.actor("idx_c", 1, 1, 0), no_restart=False)
        ray.kill(await host.actor("idx_c", 1, 2, 1), no_restart=False)
        await asyncio.sleep(0.5)
        for _ in range(300):
            seqs = await host.applied_seqs("idx_c", 1)
            if seqs[1][0] == 0 and seqs[2][1] == LAST:
                break
            await asyncio.sleep(0.2)
        assert seqs == {0: [LAST, LAST], 1: [0, LAST], 2: [LAST, LAST]}
        # the control plane's catch-up from the database
        assert await refeed(host, "idx_c", 1, 3, SOURCE, LAST) == [(1, 0)]
        await asyncio.sleep(0.3)
        stop.set()
        await task

        assert not [r for r in results if isinstance(r, Exception)], results
        assert set(results) == {(240, 240)}  # never a missing document, before, during or after
        assert await host.missing("idx_c", 1, LAST) == []
        for d in DOCS:
            assert await host.get("idx_c", 1, d["id"]) == d
        after = await host.replica_info("idx_c", 1)
        assert after[1][0]["docCount"] == after[1][1]["docCount"] > 0
        assert after[1][0]["nodeId"] == placed[(1, 0)]  # restarted where it was

        # a whole worker node leaves (with its disk): its replicas are re-created elsewhere, empty
        gone = next(n for n in cluster.worker_nodes if n.node_id in placed.values())
        lost = [k for k, v in placed.items() if v == gone.node_id]
        results.clear()
        stop.clear()
        task = asyncio.create_task(loop())
        cluster.remove_node(gone)
        for s, r in lost:
            shutil.rmtree(tmp_path / "shards" / "idx_c" / "g1" / f"s{s}r{r}", ignore_errors=True)
        await asyncio.sleep(0.5)
        todo = await refeed(host, "idx_c", 1, 3, SOURCE, LAST)
        assert sorted(todo) == sorted((s, 0) for s, _ in lost)
        stop.set()
        await task
        assert not [r for r in results if isinstance(r, Exception)], results
        assert set(results) == {(240, 240)}
        moved = await host.replica_info("idx_c", 1)
        for s, r in lost:
            assert moved[s][r]["nodeId"] != gone.node_id and moved[s][r]["nodeId"] != moved[s][1 - r]["nodeId"]
            assert moved[s][r]["appliedSeq"] == LAST and moved[s][r]["docCount"] == moved[s][1 - r]["docCount"]

        # a node joins: two replicas move onto it (one per shard), empty until re-fed, while searches
        # keep answering from their shards' other replicas
        joined = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        results.clear()
        stop.clear()
        task = asyncio.create_task(loop())
        went = await host.rebalance("idx_c", 1)
        assert len(went) == 2 and len({s for s, _ in went}) == 2, went
        assert sorted(await refeed(host, "idx_c", 1, 3, SOURCE, LAST)) == sorted((s, 0) for s, _ in went)
        stop.set()
        await task
        assert not [r for r in results if isinstance(r, Exception)], results
        assert set(results) == {(240, 240)}
        spread = await host.replica_info("idx_c", 1)
        assert {spread[s][r]["nodeId"] for s, r in went} == {joined.node_id}
        assert all(spread[s][0]["nodeId"] != spread[s][1]["nodeId"] for s in range(3))
        assert sorted([i["nodeId"] for s in range(3) for i in spread[s]].count(n) for n in await host.nodes()) == [2, 2, 2]
        assert {i["appliedSeq"] for s in range(3) for i in spread[s]} == {LAST}
        assert await host.rebalance("idx_c", 1) == []  # even: nothing more moves

        # a replica being moved (retired, its actor not killed yet) sends every caller to its shard's
        # other replica, on both search paths
        await (await host.actor("idx_c", 1, 0, 0)).retire.remote()
        query = Q({"q": "", "limit": 5, "facets": ["brand"]})
        for _ in range(4):  # round-robin: each replica of shard 0 is asked first in turn
            assert (await host.search("idx_c", 1, query)).total == 240
            fast = await host.search_here("idx_c", 1, query)
            assert fast is None or fast.total == 240
    finally:
        await host.drop_index("idx_c")
        await host.close()
    assert not [n for n in ray.util.list_named_actors() if n.startswith("shard:")]
