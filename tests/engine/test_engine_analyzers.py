"""Per-field ``analyzer``: a language or ``plain`` overrides the index language for that field,
when indexing and when querying; anything else is refused with the setting's path."""

from __future__ import annotations

import pytest

from search_workers.engine import MappingError, ShardEngine
from shared.contract import FieldWeight, Query, Typo

from .conftest import upserts

MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True, "analyzer": "plain"},
        "body": {"type": "text", "searchable": True},
        "titel": {"type": "text", "searchable": True, "analyzer": "de"},
        "code": {"type": "keyword", "searchable": True, "analyzer": "plain"},
    },
}
DOCS = [
    {"id": "1", "title": "Running shoes", "body": "Running shoes", "titel": "Häuser"},
    {"id": "2", "title": "runs", "body": "runs"},
    {"id": "3", "title": "other", "body": "Häuser", "titel": "other"},
]
EXACT = FieldWeight(prefix=False, typo=False)


def ids(engine: ShardEngine, q: str, field: str) -> list[str]:
    res = engine.search(Query(q=q, fields={field: EXACT}, typo=Typo(enabled=False)))
    return sorted(h.id for h in res.hits)


@pytest.fixture()
def engine(tmp_path):
    e = ShardEngine(tmp_path / "shard", MAPPING, "en")
    e.apply(upserts(DOCS))
    yield e
    e.close()


def test_plain_field_does_not_stem_where_the_index_language_does(engine):
    # body: the index language (en) stems running/runs/run alike
    assert ids(engine, "run", "body") == ["1", "2"]
    assert ids(engine, "runs", "body") == ["1", "2"]
    # title: plain - only the very word (case and accents folded)
    assert ids(engine, "run", "title") == []
    assert ids(engine, "runs", "title") == ["2"]
    assert ids(engine, "RUNNING", "title") == ["1"]
    assert ids(engine, "shoe", "title") == []
    assert ids(engine, "shoe", "body") == ["1"]


def test_a_field_language_overrides_the_index_language(engine):
    # German plural -> singular on the "de" field; the English stemmer leaves "hauser" alone
    assert ids(engine, "Haus", "titel") == ["1"]
    assert ids(engine, "Haus", "body") == []
    assert ids(engine, "Häuser", "body") == ["3"]


def test_all_fields_together_and_highlights_follow_each_field(engine):
    res = engine.search(Query(q="runs", highlight=("title", "body"), typo=Typo(enabled=False),
                              fields={"title": EXACT, "body": EXACT}))
    assert sorted(h.id for h in res.hits) == ["1", "2"]
    by_id = {h.id: h.highlights for h in res.hits}
    assert by_id["1"]["body"] == "<em>Running</em> shoes"
    assert by_id["2"]["title"] == "<em>runs</em>"


def test_the_analysis_survives_a_reopen_and_follows_a_mapping_change(tmp_path):
    e = ShardEngine(tmp_path / "shard", MAPPING, "en")
    e.apply(upserts(DOCS))
    e.close()
    e = ShardEngine(tmp_path / "shard", MAPPING, "en")  # from the memory snapshot
    assert ids(e, "run", "title") == [] and ids(e, "run", "body") == ["1", "2"]
    e.close()
    stemmed = {"idField": "id", "fields": {**MAPPING["fields"], "title": {"type": "text", "searchable": True}}}
    e = ShardEngine(tmp_path / "shard", stemmed, "en")  # rewritten with the new analysis
    assert ids(e, "run", "title") == ["1", "2"]
    e.close()
    e = ShardEngine(tmp_path / "shard", MAPPING, "en")
    assert ids(e, "run", "title") == []
    e.close()


def test_typo_matching_reaches_terms_of_every_analysis(engine):
    # "hauzer" is one typo from the surface "hauser": the en field holds the term, the de field
    # holds "haus" for the same surface
    res = engine.search(Query(q="hauzer", fields={"titel": FieldWeight(), "body": FieldWeight()},
                              typo=Typo(enabled=True, min_word_size_one_typo=4)))
    assert sorted(h.id for h in res.hits) == ["1", "3"]


@pytest.mark.parametrize(
    ("spec", "message_part"),
    [
        ({"type": "text", "searchable": True, "analyzer": "standard"}, "one of"),
        ({"type": "text", "searchable": True, "analyzer": "klingon"}, "one of"),
        ({"type": "text", "searchable": True, "analyzer": 3}, "one of"),
        ({"type": "integer", "filterable": True, "analyzer": "en"}, "no analyzer"),
        ({"type": "text", "analyzer": "plain"}, "searchable"),
        ({"type": "keyword", "searchable": False, "filterable": True, "analyzer": "de"}, "searchable"),
    ],
)
def test_analyzers_that_would_do_nothing_are_refused_with_their_path(spec, message_part):
    with pytest.raises(MappingError) as ei:
        ShardEngine.validate_mapping({"idField": "id", "fields": {"f": spec}}, "en")
    assert [d["path"] for d in ei.value.details] == ["fields.f.analyzer"]
    assert message_part in ei.value.details[0]["message"]


@pytest.mark.parametrize("analyzer", ["en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv", "plain", None])
def test_every_language_and_plain_are_accepted(analyzer):
    ShardEngine.validate_mapping(
        {"fields": {"f": {"type": "keyword[]", "searchable": True, "analyzer": analyzer}}}, "en"
    )
