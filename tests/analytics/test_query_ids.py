"""Signed query ids: what a click's queryId may name, and what is refused."""

from __future__ import annotations

from datetime import date

from control_plane.analytics.query_ids import QueryIds, normalize_query, query_hash


def test_a_query_id_names_its_index_day_and_normalized_query():
    signer = QueryIds("secret")
    query_id = signer.make("idx_abc", date(2026, 3, 1), normalize_query("  Samsung   TV "))
    ref = signer.parse(query_id)
    assert ref is not None and (ref.index_id, ref.day) == ("idx_abc", date(2026, 3, 1))
    assert ref.query_hash == query_hash("samsung tv")
    assert query_id != signer.make("idx_abc", date(2026, 3, 1), "samsung tv")  # each search its own id


def test_forged_altered_and_malformed_ids_are_refused():
    signer = QueryIds("secret")
    query_id = signer.make("idx_abc", date(2026, 3, 1), "tv")
    payload, _, _ = query_id.partition(".")
    assert QueryIds("another secret").parse(query_id) is None
    assert signer.parse(payload + ".idx_other") is None
    flipped = payload[:5] + ("A" if payload[5] != "A" else "B") + payload[6:] + ".idx_abc"
    assert signer.parse(flipped) is None
    for bad in ("", "q_", "q_.idx_abc", "q_!!!.idx_abc", "x_" + query_id[2:], payload, query_id + "x" * 200):
        assert signer.parse(bad) is None, bad


def test_an_id_names_the_hits_its_search_returned_and_only_those():
    """Issue 30, finding 2: a click is accepted for a hit of its search only. The id carries a keyed
    tag per hit, salted per search: made-up ids pass about (hits / 65,536) of the time."""
    signer = QueryIds("secret")
    hits = [str(n) for n in range(100)]
    ref = signer.parse(signer.make("idx_abc", date(2026, 3, 1), "tv", hits))
    assert ref is not None and all(signer.returned(ref, hit) for hit in hits)
    passed = sum(signer.returned(ref, f"junk-{n}") for n in range(20_000))
    assert passed < 20_000 * 100 / 65_536 * 2  # about 30 expected
    other = signer.parse(signer.make("idx_abc", date(2026, 3, 1), "tv", hits))
    assert other is not None and other.tags != ref.tags  # salted: a tag found for one search says nothing of another
    empty = signer.parse(signer.make("idx_abc", date(2026, 3, 1), "tv"))
    assert empty is not None and not signer.returned(empty, "0")
    assert sum(QueryIds("another secret").returned(ref, hit) for hit in hits) < 10  # about 0.15 expected
    query_id = signer.make("idx_abc", date(2026, 3, 1), "tv", hits[:20])
    payload, _, index_id = query_id.partition(".")
    assert signer.parse(payload[:7] + "!" + payload[7:] + "." + index_id) is None  # one spelling per id
    assert len(signer.make("idx_" + "a" * 36, date(2026, 3, 1), "tv", hits)) <= 400
