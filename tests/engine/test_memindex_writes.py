"""MemIndex write path: batched postings appended with spare room, never visible to earlier readers."""

from __future__ import annotations

import pickle

import numpy as np

from search_workers.engine import memindex
from search_workers.engine.analysis import get_analyzer
from search_workers.engine.candidates import phrase_postings
from search_workers.engine.mapping import compile_mapping
from search_workers.engine.memindex import POSITIONS, MemIndex

MAPPING = {
    "idField": "id",
    "fields": {
        "title": {"type": "text", "searchable": True},
        "brand": {"type": "keyword", "searchable": True, "filterable": True, "facetable": True},
    },
}


def _mem() -> MemIndex:
    _id, fields = compile_mapping(MAPPING)
    return MemIndex(fields, get_analyzer("en"))


def test_postings_grow_in_place_and_readers_keep_their_view():
    mem = _mem()
    expected: list[int] = []
    views = []
    for batch in range(6):
        for i in range(50):
            slot = mem.add(f"{batch}-{i}", {"title": f"common word{batch * 50 + i}", "brand": "acme"})
            expected.append(slot)
        mem.finalize()
        p = mem.postings["title"]["common"]
        assert p.docs.tolist() == expected and p.tfs.tolist() == [1.0] * len(expected)
        views.append((p.docs, len(expected)))
        assert mem.term_df["common"] == len(expected)
        assert mem.kw_ps["brand"].tolist() == expected
    # each view taken after a batch still shows exactly that batch's postings
    for docs, n in views:
        assert docs.tolist() == expected[:n]
    p = mem.postings["title"]["common"]
    assert p._bd is not None and len(p._bd) >= len(p.docs)  # spare room behind the view
    # deleted documents: compaction renumbers and drops the spare buffers
    for i in range(150):
        mem.delete(f"{i // 50}-{i % 50}")
    mem.finalize()
    mem.compact()
    assert mem.postings["title"]["common"]._bd is None
    assert mem.n == 150 and mem.postings["title"]["common"].docs.tolist() == list(range(150))
    mem.add("new", {"title": "common fresh", "brand": "zeta"})
    mem.finalize()
    assert mem.postings["title"]["common"].docs.tolist() == [*range(150), 150]
    assert mem.kw_ps["brand"].tolist() == [*range(150), 150]


def test_pickled_postings_keep_no_spare_room():
    mem = _mem()
    for batch in range(4):
        for i in range(200):
            mem.add(f"{batch}-{i}", {"title": "common"})
        mem.finalize()
    p = mem.postings["title"]["common"]
    again = pickle.loads(pickle.dumps(p))
    assert np.array_equal(again.docs, p.docs) and np.array_equal(again.tfs, p.tfs)
    assert again._bd is None and again.pi == -1 and len(pickle.dumps(p)) < 800 * 8 + 1000


def test_proximity_rows_widen_with_the_longest_field_and_keep_earlier_rows():
    """A field's rows are as wide as its longest document needs (8 words at a time, up to
    POSITIONS): short fields take a third of the memory, and widening keeps every row."""
    mem = _mem()
    mem.add("a", {"title": "red wireless charger", "brand": "acme"})
    mem.finalize()
    assert mem.pos["title"].shape[1] == 8 and mem.pos["brand"].shape[1] == 8
    first = mem.pos["title"][0, :3].tolist()
    long_title = " ".join(f"w{i}" for i in range(13)) + " wireless charger"
    mem.add("b", {"title": long_title, "brand": "acme"})
    mem.finalize()
    assert mem.pos["title"].shape[1] == 16 and mem.pos["brand"].shape[1] == 8
    assert mem.pos["title"][0, :3].tolist() == first and (mem.pos["title"][0, 3:] == -1).all()
    mem.add("c", {"title": " ".join(f"x{i}" for i in range(40)), "brand": "acme"})
    mem.finalize()
    assert mem.pos["title"].shape[1] == POSITIONS
    assert (mem.pos["title"][2] >= 0).all()  # the first POSITIONS words
    phrase = phrase_postings(mem, "title", ("wireless", "charger"))
    assert phrase is not None and phrase.docs.tolist() == [0, 1]
    for i in range(3):
        mem.add(f"pad{i}", {"title": "pad", "brand": "acme"})
    mem.finalize()
    mem.delete("a")
    mem.compact()
    assert mem.pos["title"].shape[1] == POSITIONS and mem.pos["title"][0, 13] == mem.chunk_ids["wireless"]


def test_settled_postings_are_views_of_one_array_and_grow_again():
    """``settle`` packs a field's postings into one array per column (the same numbers, no spare
    room); the next batch copies a term it extends into a buffer of its own."""
    mem = _mem()
    for batch in range(4):
        for i in range(30):
            mem.add(f"{batch}-{i}", {"title": f"common word{i % 7} batch{batch}", "brand": "acme"})
        mem.finalize()
    held = {t: (p.docs.tolist(), p.tfs.tolist()) for t, p in mem.postings["title"].items()}
    assert any(p._bd is not None for p in mem.postings["title"].values())
    mem.settle()
    plist = mem.postings["title"]
    assert {t: (p.docs.tolist(), p.tfs.tolist()) for t, p in plist.items()} == held
    assert len({id(p.docs.base) for p in plist.values()}) == 1 and all(p._bd is None for p in plist.values())
    word0 = plist["word0"].docs
    mem.add("new", {"title": "common fresh", "brand": "acme"})
    mem.finalize()
    assert plist["common"].docs.tolist() == [*held["common"][0], 120]
    assert plist["word0"].docs is word0 and word0.tolist() == held["word0"][0]  # its neighbour untouched


def test_proximity_rows_hold_int16_ids_until_the_words_outnumber_them(monkeypatch):
    """Chunk ids are int16 in the rows (half their memory) while the shard has few enough distinct
    words; past that every field's rows become int32 at once, keeping what they held."""
    monkeypatch.setattr(memindex, "POSITIONS_INT16_IDS", 12)
    mem = _mem()
    mem.add("a", {"title": "red wireless charger", "brand": "acme"})
    mem.finalize()
    assert {rows.dtype for rows in mem.pos.values()} == {np.dtype(np.int16)}
    held = mem.pos["title"][0].tolist()
    mem.add("b", {"title": " ".join(f"w{i}" for i in range(10)) + " wireless charger", "brand": "zeta"})
    mem.finalize()
    assert {rows.dtype for rows in mem.pos.values()} == {np.dtype(np.int32)}
    assert mem.pos["title"][0, :8].tolist() == held and (mem.pos["title"][0, 8:] == -1).all()
    assert mem.pos["title"][1, 11] == mem.chunk_ids["charger"] and len(mem.chunk_ids) > 12
    phrase = phrase_postings(mem, "title", ("wireless", "charger"))
    assert phrase is not None and phrase.docs.tolist() == [0, 1]


def test_a_phrase_longer_than_the_rows_matches_nothing():
    """Rows as wide as the field's longest document: a phrase of more words (a word repeated, say)
    is in no row, and asking for it is no error."""
    mem = _mem()
    mem.add("a", {"title": "red charger", "brand": "acme"})
    mem.finalize()
    assert mem.pos["brand"].shape[1] == 8
    assert phrase_postings(mem, "brand", ("acm",) * 10) is None  # (the stemmed term)
    assert phrase_postings(mem, "title", ("red", "charger")) is not None
