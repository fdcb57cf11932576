"""Where the Ray host places shard replicas (pure functions, no cluster)."""

from __future__ import annotations

from search_workers.actors.placement import place_replicas, rebalance_moves, replacement_node


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


def test_rebalance_gives_a_joining_node_its_share_and_parts_siblings():
    # n3 left and its replicas were re-created on n1 and n2; n4 joins
    placed = {(0, 0): "n1", (0, 1): "n2", (1, 0): "n2", (1, 1): "n1", (2, 0): "n1", (2, 1): "n2"}
    moves = rebalance_moves(placed, ["n1", "n2", "n4"], {0, 1, 2})
    assert [node for _, node in moves] == ["n4", "n4"]
    assert len({key[0] for key, _ in moves}) == 2  # one replica per shard at most
    after = {**placed, **dict(moves)}
    assert sorted(list(after.values()).count(n) for n in ("n1", "n2", "n4")) == [2, 2, 2]
    for s in range(3):
        assert after[(s, 0)] != after[(s, 1)]
    # each goes where a revival would put it (every process picks the same node)
    assert all(replacement_node({**placed, **dict(moves[:i])}, *key, ["n1", "n2", "n4"]) == node
               for i, (key, node) in enumerate(moves))
    # nothing moves once even, nor a shard that is not movable (a replica behind or down)
    assert rebalance_moves(after, ["n1", "n2", "n4"], {0, 1, 2}) == []
    assert rebalance_moves(placed, ["n1", "n2", "n4"], set()) == []
    assert [key[0] for key, _ in rebalance_moves(placed, ["n1", "n2", "n4"], {1})] == [1]
    # a lone node held both replicas of every shard: a second one takes one of each
    alone = {(s, r): "n1" for s in range(3) for r in range(2)}
    parted = dict(rebalance_moves(alone, ["n1", "n2"], {0, 1, 2}))
    assert parted == {(0, 1): "n2", (1, 1): "n2", (2, 1): "n2"}
    # replicas on a node that is gone are revived, not moved; a single node has nowhere to move to
    assert rebalance_moves({(0, 0): "n9", (0, 1): "n1"}, ["n1", "n2"], {0}) == []
    assert rebalance_moves(alone, ["n1"], {0, 1, 2}) == []
