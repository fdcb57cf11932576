"""Relevance classes on a small shard: a word typed glued is found as its two words
("applewatch": "Apple Watch") - never two words that are not neighbours anywhere; of two names
holding the query as a phrase the one with fewer other words ranks first (exactness); and how
closely the words are found together counts in any queried field, not only the heaviest."""

from __future__ import annotations

import numpy as np
import pytest

from search_workers.engine import ShardEngine, scoring
from shared.contract import Answer, FieldWeight, Query

from .conftest import engine_with, names

MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "categories": {"type": "keyword[]", "searchable": True, "facetable": True, "filterable": True},
        "description": {"type": "text", "searchable": True},
    },
}
FIELDS = {"name": FieldWeight(weight=8), "brand": FieldWeight(weight=4), "categories": FieldWeight(weight=2),
          "description": FieldWeight(weight=1)}


def catalog() -> list[dict]:
    docs: list[dict] = []

    def add(name: str, brand: str, cats: list[str], description: str = "") -> None:
        docs.append({"id": str(len(docs)), "name": name, "brand": brand, "categories": cats,
                     "description": description})

    for size in (38, 42):
        add(f"Nomad - Leather Band for Apple Watch {size}mm - Brown", "Nomad", ["Smartwatch Bands"])
    add("Insignia - Charging Stand for Apple Watch", "Insignia", ["Smartwatch Charging Docks"])
    add("Apple - Lightning Cable", "Apple", ["Cables"], "Charge your apple device. Watch videos while charging.")
    add("Belkin - Car Charger - Black", "Belkin", ["Car Chargers"])
    add("Pet carrier strap", "Acme", ["Accessories"], "Keep your pet safe in the car.")
    # two names holding "Otter Case for Galaxy S7" as a phrase, of the same length in terms: the
    # one with fewer other words is the closer match (it comes second in the shard's order)
    add("Otter - Case for Galaxy S7 - Deep Navy Blue", "Otter", ["Galaxy Cases"])
    add("Otter - Case for Galaxy S7 - Tan/Navy", "Otter", ["Galaxy Cases"])
    # the category named in full vs the words in a name outside it
    add("Samsung - Gear S2 Wireless Charger - Black", "Samsung", ["Smartwatch Charging Docks"])
    add("Samsung - Mini Qi Wireless Charging Pad - Black", "Samsung", ["Wireless Chargers"])
    for i in range(8):
        add(f"Acme - Powerbank {i}", "Acme", ["Batteries"])
    add("Belkin - Power Bank 5000", "Belkin", ["Batteries"])
    add("Acme - Chargepad", "Acme", ["Batteries"], "Charges from any power bank.")
    for i in range(6):  # "wireless" and "charger" are common words here
        add(f"Acme - Wireless Speaker {i}", "Acme", ["Speakers"], "Pairs with any charger.")
    return docs


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    docs = catalog()
    with engine_with(tmp_path_factory.mktemp("exactness"), MAPPING, docs) as e:
        yield e, docs


def search(e: ShardEngine, q: str, **kw) -> Answer:
    return e.search(Query(q=q, fields=FIELDS, limit=50, **kw))


def test_a_glued_word_finds_its_two_words_as_neighbours(shop):
    e, docs = shop
    ans = search(e, "applewatch ")
    assert not ans.relaxed
    # the three products naming "Apple Watch", not the cable whose description has "apple" and
    # "watch" apart
    assert sorted(names(ans)) == sorted(d["name"] for d in docs if "Apple Watch" in d["name"])
    assert set(names(search(e, "applewatch band "))) == {d["name"] for d in docs if "Band for Apple Watch" in d["name"]}
    assert names(search(e, "carcharger "))[0] == "Belkin - Car Charger - Black"


def test_a_glued_word_whose_halves_are_never_neighbours_finds_nothing(shop):
    e, _ = shop
    # "car" and "pet" are both words of the shop, never one after the other
    assert search(e, "carpet ", relax=False).total == 0
    assert search(e, "carpet ").total == 0


def test_a_word_found_often_as_typed_is_not_split(shop):
    e, docs = shop
    # "powerbank" is in 8 products as typed: like typo variants, its split is not needed
    ans = search(e, "powerbank ")
    assert ans.total == sum("Powerbank" in d["name"] for d in docs) == 8


def test_the_name_with_fewer_other_words_ranks_first(shop):
    e, _ = shop
    ans = search(e, "Otter Case for Galaxy S7 ")
    assert names(ans)[:2] == ["Otter - Case for Galaxy S7 - Tan/Navy", "Otter - Case for Galaxy S7 - Deep Navy Blue"]
    assert ans.hits[0].score > ans.hits[1].score


def test_words_found_together_count_in_any_field(shop):
    e, docs = shop
    mem = e._mem
    slots = np.asarray(sorted(mem.id_to_slot[d["id"]] for d in docs if "Wireless Charg" in d["name"]), dtype=np.int32)
    near = scoring.proximity_bonus(mem, "Wireless Chargers", slots, FIELDS)
    assert near is not None
    # "Wireless Charger" in a name, "Wireless Chargers" as a category: both the query as a phrase
    assert near.min() >= 1.0
    assert scoring.COVERAGE_SHARE > 0 and near.max() <= 1.0 + scoring.COVERAGE_SHARE


def test_a_split_is_a_guess_dropped_before_real_words(shop):
    e, _ = shop
    # no product is both: like a word found only as typo variants, the split word goes first
    ans = search(e, "applewatch speaker ")
    assert ans.relaxed and ans.dropped_words == ["applewatch"]
    assert names(ans) and all("Speaker" in n for n in names(ans))
