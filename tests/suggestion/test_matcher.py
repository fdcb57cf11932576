"""The in-memory suggestion index alone: prefixes, typos on the last word, ranking, highlights."""

from __future__ import annotations

import pytest

from control_plane.suggestion.matcher import Item, SuggestionIndex

INDEX = SuggestionIndex([
    Item("Samsung", 10, "brand"), Item("Samsung Galaxy S7 edge", 5, "name"), Item("Sony", 8, "brand"),
    Item("Apple iPhone", 9, "name"), Item("Café & Crème <b>", 3, "custom"), Item("Samsonite", 1, "brand"),
])


def texts(q: str, limit: int = 10, typo: bool = True) -> list[str]:
    return [INDEX.items[m.item].text for m in INDEX.match(q, limit, typo)]


def highlights(q: str) -> list[str]:
    return [INDEX.highlight(m) for m in INDEX.match(q, 10, True)]


def test_prefix_of_the_first_or_a_later_word_best_score_first():
    assert texts("sam") == ["Samsung", "Samsung Galaxy S7 edge", "Samsonite"]
    assert texts("samsung gal") == ["Samsung Galaxy S7 edge"]
    assert texts("galaxy") == ["Samsung Galaxy S7 edge"]  # from its second word
    assert texts("sam", limit=1) == ["Samsung"]
    assert texts("") == ["Samsung", "Apple iPhone", "Sony", "Samsung Galaxy S7 edge", "Café & Crème <b>", "Samsonite"]
    assert texts("zzz") == []


@pytest.mark.parametrize("q", ["samsnug", "smasung", "asmsung", "xamsung", "amsung", "samsungx", "samsng"])
def test_one_edit_in_the_last_word(q):
    assert texts(q)[0] == "Samsung"


def test_typos_only_when_asked_and_below_exact_matches():
    assert texts("samsnug", typo=False) == []
    assert texts("iphne") == ["Apple iPhone"]
    assert texts("sny") == []  # under four characters: no typo path


def test_highlights_mark_the_typed_part_and_escape_the_rest():
    assert highlights("sam")[0] == "<em>Sam</em>sung"
    assert highlights("samsung gal") == ["<em>Samsung</em> <em>Gal</em>axy S7 edge"]
    assert highlights("galaxy s") == ["Samsung <em>Galaxy</em> <em>S</em>7 edge"]
    assert highlights("cafe cre") == ["<em>Café</em> &amp; <em>Crè</em>me &lt;b&gt;"]  # accents fold
    assert highlights("")[4] == "Café &amp; Crème &lt;b&gt;"


def test_a_query_longer_than_the_keys_is_checked_against_the_whole_text():
    long_a = "Acme " + "very long words " * 10 + "alpha"
    long_b = "Acme " + "very long words " * 10 + "beta"
    index = SuggestionIndex([Item(long_a, 2, "name"), Item(long_b, 1, "name")])
    assert [index.items[m.item].text for m in index.match(long_b[:-2], 5, False)] == [long_b]
    assert len(index.match("acme very", 5, False)) == 2


def test_a_prefix_matching_thousands_gives_the_best_first_every_time():
    index = SuggestionIndex([Item(f"alpha item {n}", n % 997, "name") for n in range(3000)] + [Item("alpine", 5000, "brand")])
    first = [index.items[m.item].text for m in index.match("alp", 5, False)]
    # ties by the text
    assert first == ["alpine", "alpha item 1993", "alpha item 2990", "alpha item 996", "alpha item 1992"]
    assert [index.items[m.item].text for m in index.match("alp", 5, False)] == first  # kept for the next shopper
    assert len(index.match("alp", 20, False)) == 20
