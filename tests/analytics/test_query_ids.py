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
