"""Pure merge and routing tests: no engine, no Ray."""

from __future__ import annotations

import random

import pytest

from search_workers.merge import merge_answers
from shared.contract import Answer, Facet, Hit, Query, shard_query
from shared.routing import shard_for, shard_hash
from tests.queries import Q


def answer(hits, total=None, facets=None, relaxed=False, dropped=()):
    return Answer(total=len(hits) if total is None else total, hits=hits, facets=facets or {}, relaxed=relaxed,
                  dropped_words=list(dropped))


def hit(doc_id, score, *sort_values):
    return Hit(doc_id, score, {"id": doc_id}, {}, [*sort_values, score])


def ids(merged):
    return [h.id for h in merged.hits]


# -- routing ------------------------------------------------------------------------------
def test_shard_hash_is_stable_31_bit_crc32():
    assert shard_hash("abc") == 0x352441C2  # zlib.crc32(b"abc"), fits 31 bits already
    assert shard_hash("sku-ü") == shard_hash("sku-ü")
    assert all(0 <= shard_hash(f"doc{i}") < 2**31 for i in range(1000))


def test_shard_for_spreads_ids_evenly():
    counts = [0] * 4
    for i in range(4000):
        counts[shard_for(f"sku-{i}", 4)] += 1
    assert all(850 < c < 1150 for c in counts), counts
    assert shard_for("x", 1) == 0
    with pytest.raises(ValueError):
        shard_for("x", 0)


# -- query split --------------------------------------------------------------------------
def test_shard_query_asks_every_shard_for_offset_plus_limit_from_zero():
    q = Query(q="shoe", offset=30, limit=10, facets=(Facet("brand"),))
    sq = shard_query(q)
    assert sq.offset == 0 and sq.limit == 40 and sq.facets == (Facet("brand"),) and sq.q == "shoe"
    assert q.offset == 30  # the caller's query is not modified
    assert shard_query(Query()).limit == 20


# -- hits ---------------------------------------------------------------------------------
def test_relevance_merge_orders_by_score_then_shard_then_position():
    a = answer([hit("a1", 9.0), hit("a2", 5.0), hit("a3", 5.0)])
    b = answer([hit("b1", 7.0), hit("b2", 5.0)])
    merged = merge_answers(Q({"limit": 10}), [a, b])
    assert ids(merged) == ["a1", "b1", "a2", "a3", "b2"]
    assert merged.total == 5
    # the tiebreak depends on the shard number, not on the list order of equal scores
    assert ids(merge_answers(Q({"limit": 10}), [b, a]))[2:] == ["b2", "a2", "a3"]


def test_field_sort_with_missing_values_last_in_both_directions():
    a = answer([hit("a1", 1.0, 5), hit("a2", 1.0, 20), hit("a3", 1.0, None)])
    b = answer([hit("b1", 3.0, 5), hit("b2", 1.0, 8)])
    asc = merge_answers(Q({"sort": ["price:asc"], "limit": 10}), [a, b])
    assert ids(asc) == ["b1", "a1", "b2", "a2", "a3"]  # equal price 5: higher score first
    a_desc = answer([hit("a2", 1.0, 20), hit("a1", 1.0, 5), hit("a3", 1.0, None)])
    b_desc = answer([hit("b2", 1.0, 8), hit("b1", 3.0, 5)])
    desc = merge_answers(Q({"sort": ["price:desc"], "limit": 10}), [a_desc, b_desc])
    assert ids(desc) == ["a2", "b2", "b1", "a1", "a3"]


def test_string_sort_is_case_insensitive_and_multi_key():
    a = answer([hit("a1", 1.0, "apple", 3), hit("a2", 1.0, "Banana", 1)])
    b = answer([hit("b1", 1.0, "Apple", 1), hit("b2", 1.0, "cherry", 0)])
    merged = merge_answers(Q({"sort": ["title:asc", "stock:desc"], "limit": 10}), [a, b])
    assert ids(merged) == ["b1", "a1", "a2", "b2"]  # "Apple" < "apple" on the raw tiebreak
    merged = merge_answers(Q({"sort": [["title", "desc"]], "limit": 10}), [a, b])
    assert ids(merged) == ["b2", "a2", "a1", "b1"]


def test_relevance_sort_key_uses_the_score():
    a = answer([hit("a1", 2.0, 10, None), hit("a2", 1.0, 10, None)])
    b = answer([hit("b1", 5.0, 10, None)])
    merged = merge_answers(Q({"sort": ["stock:desc", "_score:desc"], "limit": 5}), [a, b])
    assert ids(merged) == ["b1", "a1", "a2"]


def _shard_answers(all_hits, shards, q):
    """What ``shards`` engines would answer to shard_query(q): each its own sorted top offset+limit."""
    sq = shard_query(Q(q))
    out = []
    for s in range(shards):
        mine = [h for h in all_hits if shard_for(h.id, shards) == s]
        mine.sort(key=lambda h: (-h.score, h.id))
        out.append(answer(mine[: sq.limit], total=len(mine)))
    return out


@pytest.mark.parametrize("shards", [1, 2, 3, 5])
def test_paging_across_shards_has_no_overlap_and_no_gap(shards):
    rng = random.Random(shards)
    all_hits = [hit(f"d{i}", float(rng.randint(1, 40))) for i in range(97)]
    seen = []
    for page in range(11):
        q = {"offset": page * 10, "limit": 10}
        merged = merge_answers(Q(q), _shard_answers(all_hits, shards, q))
        assert merged.total == 97
        assert len(merged.hits) == (10 if page < 9 else 7 if page == 9 else 0)
        seen.extend(ids(merged))
    assert len(seen) == len(set(seen)) == 97
    scores = [next(h.score for h in all_hits if h.id == i) for i in seen]
    assert scores == sorted(scores, reverse=True)


def test_limit_zero_gives_total_and_facets_only():
    a = answer([hit("a1", 1.0)], total=4, facets={"brand": {"x": 4}})
    merged = merge_answers(Q({"limit": 0, "facets": ["brand"]}), [a, answer([], total=3, facets={"brand": {"x": 3}})])
    assert merged.hits == [] and merged.total == 7 and merged.facets == {"brand": {"x": 7}}


# -- facets -------------------------------------------------------------------------------
def test_terms_facets_are_summed_sorted_by_count_and_cut_to_size():
    a = answer([], facets={"brand": {"acme": 5, "zed": 1, "bolt": 2}})
    b = answer([], facets={"brand": {"zed": 6, "bolt": 3, "core": 1}})
    c = answer([], facets={})
    merged = merge_answers(Q({"facets": [{"field": "brand", "size": 3}]}), [a, b, c])
    assert list(merged.facets["brand"].items()) == [("zed", 7), ("acme", 5), ("bolt", 5)]
    # default size 10, count ties by value
    merged = merge_answers(Q({"facets": ["brand"]}), [a, b])
    assert list(merged.facets["brand"]) == ["zed", "acme", "bolt", "core"]


def test_terms_facets_alpha_sort_and_numeric_values():
    a = answer([], facets={"brand": {"b": 1, "A": 9}, "size": {"10": 1, "9": 2}})
    b = answer([], facets={"brand": {"c": 4}, "size": {"42": 1}})
    merged = merge_answers(Q({"facets": [{"field": "brand", "sort": "alpha"}, {"field": "size", "sort": "alpha"}]}),
                           [a, b])
    assert list(merged.facets["brand"].items()) == [("A", 9), ("b", 1), ("c", 4)]
    assert list(merged.facets["size"]) == ["9", "10", "42"]


def test_range_facets_are_summed_per_range():
    ranges = [{"to": 10}, {"from": 10, "to": 100}, {"from": 100}]
    a = answer([], facets={"price": [1, 2, 0]})
    b = answer([], facets={"price": [3, 0, 5]})
    merged = merge_answers(Q({"facets": [{"field": "price", "type": "range", "ranges": ranges}]}), [a, b])
    assert merged.facets["price"] == [4, 2, 5]


# -- relaxation -----------------------------------------------------------------------------
def test_strict_matches_on_one_shard_win_over_relaxed_shards():
    strict = answer([hit("a1", 1.0)], facets={"brand": {"x": 1}})
    relaxed = answer([hit("b1", 9.0), hit("b2", 8.0)], facets={"brand": {"y": 2}}, relaxed=True, dropped=["blue"])
    merged = merge_answers(Q({"facets": ["brand"]}), [strict, relaxed])
    assert ids(merged) == ["a1"] and merged.total == 1 and merged.facets["brand"] == {"x": 1}
    assert merged.relaxed is False and merged.dropped_words == []


def test_all_relaxed_keeps_the_answers_that_dropped_fewest_words():
    r1 = answer([hit("a1", 1.0)], relaxed=True, dropped=["blue"])
    r2 = answer([hit("b1", 5.0)], relaxed=True, dropped=["blue", "suede"])
    r3 = answer([hit("c1", 2.0)], relaxed=True, dropped=["suede"])
    empty = answer([], relaxed=True, dropped=["blue", "suede", "shoe"])
    merged = merge_answers(Q({}), [r1, r2, r3, empty])
    assert ids(merged) == ["c1", "a1"] and merged.total == 2
    assert merged.relaxed is True and merged.dropped_words == ["blue", "suede"]


def test_no_match_anywhere():
    merged = merge_answers(Q({"q": "zzz"}), [answer([], relaxed=True, dropped=["zzz"]), answer([])])
    assert merged.total == 0 and merged.hits == []
