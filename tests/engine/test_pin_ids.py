"""``Query.pin_ids``: the shards answer a ranking rule's pinned documents beside the organic hits
(one fan-out), when they exist and pass the filters, whatever ``q`` and ``exclude_ids`` say."""

from __future__ import annotations

import pytest

from search_workers.engine import ShardEngine
from search_workers.merge import merge_answers
from shared.contract import Change, Query, shard_query
from shared.routing import shard_for

from .conftest import upserts

MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True},
    },
}
DOCS = [{"id": f"d{i}", "title": ("red charger" if i % 2 else "blue cable") + f" {i}", "brand": "Acme" if i % 3 else "Zed"}
        for i in range(60)]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("pins")
    engines = []
    for s in range(3):
        e = ShardEngine(root / f"s{s}", MAPPING)
        e.apply(upserts([d for d in DOCS if shard_for(d["id"], 3) == s]))
        engines.append(e)
    yield engines
    for e in engines:
        e.close()


def search(shards, query: Query):
    return merge_answers(query, [e.search(shard_query(query)) for e in shards])


def test_pinned_documents_come_whatever_the_text_and_the_exclusions(shards):
    # d2 and d4 are cables: the text does not match them; the organic hits leave them out
    query = Query(q="charger", pin_ids=("d2", "d4", "d1"), exclude_ids=("d2", "d4", "d1"), highlight=("title",))
    answer = search(shards, query)
    assert sorted(h.id for h in answer.pinned) == ["d1", "d2", "d4"]
    assert not {"d1", "d2", "d4"} & {h.id for h in answer.hits}
    assert all(h.highlights == {} and h.document["id"] == h.id for h in answer.pinned)
    assert answer.total == 30 - 1  # the odd ids are chargers, d1 excluded
    assert answer == search(shards, Query(q="charger", exclude_ids=("d2", "d4", "d1"), highlight=("title",),
                                          pin_ids=("d2", "d4", "d1"))), "deterministic"
    plain = search(shards, Query(q="charger", exclude_ids=("d2", "d4", "d1"), highlight=("title",)))
    assert [h.id for h in plain.hits] == [h.id for h in answer.hits] and plain.pinned == []


def test_a_pin_that_fails_the_filters_or_is_gone_is_not_answered(shards):
    answer = search(shards, Query(q="charger", filters={"brand": ["Zed"]}, pin_ids=("d3", "d4", "nope")))
    assert [h.id for h in answer.pinned] == ["d3"]  # d4 is Acme; "nope" does not exist
    deleted = shards[shard_for("d3", 3)]
    deleted.apply([Change(1000, "delete", "d3")])
    assert search(shards, Query(q="", pin_ids=("d3",))).pinned == []


def test_pins_stand_when_the_organic_query_is_relaxed_or_empty(shards):
    relaxed = search(shards, Query(q="charger zzzqqq", pin_ids=("d0",)))
    assert relaxed.relaxed and [h.id for h in relaxed.pinned] == ["d0"]
    nothing = search(shards, Query(q="zzzqqq", pin_ids=("d0",)))
    assert nothing.total == 0 and [h.id for h in nothing.pinned] == ["d0"]
