"""Solr synonyms text and the compiled synonym set, without an app."""

from __future__ import annotations

import pytest

from control_plane.synonym import solr
from control_plane.synonym.matching import SynonymSet


def test_solr_lines_parse_into_entries():
    text = "# comment\n\ncell phone, cellphone, mobile\nipod, i-pod => mp3 player\\, portable\n"
    entries = [entry for _, entry in solr.parse(text)]
    assert entries == [
        {"type": "multiway", "terms": ["cell phone", "cellphone", "mobile"]},
        {"type": "oneway", "input": "ipod", "synonyms": ["mp3 player, portable"]},
        {"type": "oneway", "input": "i-pod", "synonyms": ["mp3 player, portable"]},
    ]


@pytest.mark.parametrize("text, line", [
    ("tv, television\nlonely\n", 2),
    ("a, b\n\nx => \n", 3),
    ("a => b => c", 1),
    ("a,, b", 1),
    ("=> b", 1),
])
def test_a_malformed_line_names_its_number(text, line):
    with pytest.raises(solr.SolrLineError) as caught:
        solr.parse(text)
    assert caught.value.line == line


def test_render_reads_back_and_keeps_disabled_entries_out():
    entries = [
        {"type": "multiway", "terms": ["tv", "tele, vision"], "enabled": True},
        {"type": "oneway", "input": "laptop", "synonyms": ["notebook", "a=>b"], "enabled": True},
        {"type": "multiway", "terms": ["off", "gone"], "enabled": False},
    ]
    back = [entry for _, entry in solr.parse(solr.render(entries))]
    assert back == [
        {"type": "multiway", "terms": ["tv", "tele, vision"]},
        {"type": "oneway", "input": "laptop", "synonyms": ["notebook", "a=>b"]},
    ]


SET = SynonymSet([
    ("multiway", ["cell phone", "cellphone", "mobile"], None, []),
    ("oneway", [], "laptop", ["notebook"]),
    ("multiway", ["television", "tv"], None, []),
])


def test_multi_word_phrases_reach_each_other():
    assert set(SET.for_query("cell phone case")["cell phone"]) == {("cellphone",), ("mobile",)}
    assert set(SET.for_query("Mobile")["mobile"]) == {("cell", "phone"), ("cellphone",)}
    assert ("mobile",) in SET.for_query("CELL-PHONES")["cell phones"]  # case, punctuation and plural folded


def test_oneway_goes_one_way():
    assert SET.for_query("laptop bag") == {"laptop": (("notebook",),)}
    assert SET.for_query("notebook bag") is None


def test_a_typo_reaches_the_synonyms_but_only_as_a_fallback():
    found = SET.for_query("televsion stand")
    assert found is not None and "~televsion" in found
    assert set(found["~televsion"]) == {("television",), ("tv",)}
    assert SET.for_query("televsion", typo=False) is None
    assert SET.for_query("relevision") is None  # a typo on the first letter counts as two
    assert SET.for_query("tele") is None  # short words are not corrected


def test_an_empty_set_costs_nothing():
    assert SynonymSet().for_query("anything at all") is None
