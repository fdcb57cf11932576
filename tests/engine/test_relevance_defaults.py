"""Relevance defaults of the engine (issue #12 item 3) on a small shard: typo variants only for
words found too rarely as typed (a typo on the first letter counts as two), the least
informative words dropped first, model codes matched whole, a named brand or category ranked
first, and the merchant's synonyms of one or more words on either side."""

from __future__ import annotations

import pytest

from search_workers.engine import ShardEngine, scoring
from shared.contract import FieldWeight, Query

from .conftest import engine_with, names

MAPPING = {
    "idField": "id",
    "fields": {
        "name": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "facetable": True, "filterable": True},
        "categories": {"type": "keyword[]", "searchable": True, "facetable": True, "filterable": True},
    },
}
FIELDS = {"name": FieldWeight(weight=8), "brand": FieldWeight(weight=4), "categories": FieldWeight(weight=2)}


def catalog() -> list[dict]:
    docs: list[dict] = []

    def add(name: str, brand: str, *cats: str) -> None:
        docs.append({"id": str(len(docs)), "name": name, "brand": brand, "categories": list(cats)})

    for i in range(12):  # "phone" everywhere, "iphone" in a dozen
        add(f"Apple iPhone 7 {16 * (i % 3 + 1)}GB", "Apple", "Cell Phones", "iPhone")
    for i in range(12):
        add(f"Speck Case for Samsung Galaxy S7 Samsung model {i}", "Speck", "Cell Phones", "Cell Phone Cases")
    for i in range(4):
        add(f"Samsung Galaxy S7 {32 * (i + 1)}GB Cell Phone", "Samsung", "Cell Phones")
    for i in range(2):
        add(f"Samsung Galaxy J1 Mini with 8GB Memory Cell Phone model {i}", "Samsung", "Cell Phones")
    for i in range(3):
        add(f"BLU Dash Cell Phone (Unlocked) model {i}", "BLU", "Cell Phones", "Unlocked Cell Phones")
    add("iLive Under Cabinet Music System 200 watts", "iLive", "Speakers")
    add("Nomad Mobile Case", "Nomad", "Accessories")
    add("Tabel stand for phone", "Acme", "Cell Phones")  # a misspelling some catalogs carry...
    for i in range(9):
        add(f"Tabel mount for phone {i}", "Acme", "Cell Phones")  # ... often
    for i in range(2):
        add(f"Table lamp phone charger {i}", "Acme", "Cell Phones")
    add("Pbone strap", "Acme", "Cell Phones")
    return docs


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    docs = catalog()
    with engine_with(tmp_path_factory.mktemp("relevance"), MAPPING, docs) as e:
        yield e, docs


def search(e: ShardEngine, q: str, **kw) -> object:
    return e.search(Query(q=q, fields=FIELDS, limit=50, **kw))


def test_common_word_gets_no_typo_variants(shop):
    e, docs = shop
    ans = search(e, "iphone ")
    assert ans.total == sum("iPhone" in d["name"] for d in docs) == 12  # not every "phone"


def test_typo_on_the_first_letter_counts_as_two(shop):
    e, _ = shop
    # one typo inside the word: found; one on its first letter: two typos, too many for 5 letters
    assert names(search(e, "pbomne ")) == ["Pbone strap"]
    assert search(e, "xbone ", relax=False).total == 0
    assert search(e, "xbone strap ").dropped_words == ["xbone"]


def test_rare_word_keeps_its_typo_variants(shop):
    e, _ = shop
    # "iphnoe" is in no document: its typo variants are all it has
    assert search(e, "iphnoe ").total == 12


def test_typos_come_back_when_the_exact_words_find_too_few(shop):
    e, docs = shop
    # "tabel" is common as typed (10 documents, none with a lamp): the query finds nothing without
    # typos, so typos are tried before any word is dropped
    ans = search(e, "tabel lamp ")
    assert not ans.relaxed
    assert sorted(names(ans)) == sorted(d["name"] for d in docs if d["name"].startswith("Table lamp"))


def test_least_informative_words_are_dropped_first(shop):
    e, docs = shop
    ans = search(e, "unlocked phone under 200 ")
    assert ans.relaxed and ans.dropped_words == ["under", "200"]
    assert sorted(names(ans)) == sorted(d["name"] for d in docs if "Unlocked" in d["name"])


def test_model_code_matches_a_model_code_only(shop):
    e, docs = shop
    ans = search(e, "samsung galaxy s8 ")  # no S8: never the J1 "with 8GB"
    assert ans.relaxed and set(ans.dropped_words) == {"s", "8"}
    strict = search(e, "samsung galaxy s8 ", relax=False)
    assert strict.total == 0
    s7 = search(e, "galaxy s7 ", relax=False)
    assert s7.total == sum("S7" in d["name"] for d in docs) and all("S7" in n for n in names(s7))


def test_a_named_brand_ranks_its_own_products_first(shop, monkeypatch):
    e, docs = shop
    own = sum(d["brand"] == "Samsung" for d in docs)
    top = [h.document["brand"] for h in search(e, "samsung ").hits[:own]]
    assert top == ["Samsung"] * own
    monkeypatch.setattr(scoring, "KEYWORD_VALUE_BONUS", 0.0)  # without it the cases that say it twice win
    assert [h.document["brand"] for h in search(e, "samsung  ").hits[:own]] != ["Samsung"] * own


def test_a_named_category_ranks_its_documents_first(shop):
    e, docs = shop
    ans = search(e, "cell phone cases ")
    n = sum("Cell Phone Cases" in d["categories"] for d in docs)
    assert all("Cell Phone Cases" in h.document["categories"] for h in ans.hits[:n])


def test_multi_word_synonym_key(shop):
    e, _ = shop
    syn = {"cell phone": (("cellphone",), ("mobile",))}
    assert "Nomad Mobile Case" not in names(search(e, "cell phone case ", relax=False))
    ans = search(e, "cell phone case ", synonyms=syn, relax=False)
    assert "Nomad Mobile Case" in names(ans)
    # the key's words must all be in the query, consecutive
    assert "Nomad Mobile Case" not in names(search(e, "phone cell case ", synonyms=syn, relax=False))
    assert "Nomad Mobile Case" not in names(search(e, "cell case ", synonyms=syn, relax=False))


def test_single_word_key_with_a_multi_word_alternative(shop):
    e, docs = shop
    ans = search(e, "mobile unlocked ", synonyms={"mobile": (("cell", "phone"),)}, relax=False)
    assert sorted(names(ans)) == sorted(d["name"] for d in docs if "Unlocked" in d["name"])


def test_synonyms_are_not_pruned_like_typo_variants(shop):
    e, _ = shop
    # "phone" is everywhere (no typo variants), its synonym still applies
    ans = search(e, "phone case ", synonyms={"phone": (("mobile",),)}, relax=False)
    assert "Nomad Mobile Case" in names(ans)
    # a synonym key matched through the query's typo'd word (the control plane passes it)
    ans = search(e, "celll phone case ", synonyms={"celll phone": (("mobile",),)}, relax=False)
    assert "Nomad Mobile Case" in names(ans)


def test_a_typo_fallback_key_applies_only_to_words_the_shard_does_not_hold(shop):
    e, _ = shop
    # "mobil" is no term here: the control plane's guess that it means "mobile" applies
    ans = search(e, "mobil case ", synonyms={"~mobil": (("mobile",),)}, relax=False)
    assert "Nomad Mobile Case" in names(ans)
    # "table" is a term here: a real word never takes its neighbour's synonyms
    ans = search(e, "table ", synonyms={"~table": (("mobile",),)}, relax=False)
    assert "Nomad Mobile Case" not in names(ans)
