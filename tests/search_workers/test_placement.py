"""Where the Ray host places shard replicas (pure functions, no cluster)."""

from __future__ import annotations

from search_workers.actors.placement import place_replicas, replacement_node


def test_placement_spreads_shards_and_separates_replicas():
    nodes = ["n1", "n2", "n3"]
    where = place_replicas("idx_x", 3, 2, nodes)
    for s in range(3):
        assert where[(s, 0)] != where[(s, 1)]
    assert set(where.values()) == set(nodes)
    assert place_replicas("idx_x", 1, 1, [])[(0, 0)] is None
    # n3 left: s0r? moves to the node without its sibling, s1r? to the least loaded one
    placed = {(0, 0): "n1", (0, 1): "n3", (1, 0): "n3", (1, 1): "n2", (2, 0): "n2", (2, 1): "n1"}
    assert replacement_node(placed, 0, 1, ["n1", "n2"]) == "n2"
    assert replacement_node(placed, 1, 0, ["n1", "n2"]) == "n1"
    assert replacement_node(placed, 1, 0, []) is None
