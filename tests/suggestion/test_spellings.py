"""Which spelling a suggestion shows when the catalog has several (CI: the Best Buy catalog's 175
"OtterBox" and 16 "Otterbox" showed as "Otterbox" once PostgreSQL returned the rows in another
order; the first spelling seen won)."""

from __future__ import annotations

import random

from control_plane.suggestion.build import Candidates


def test_the_most_common_spelling_shows_whatever_the_order() -> None:
    spellings = ["OtterBox"] * 175 + ["Otterbox"] * 16 + ["OTTERBOX"]
    for seed in range(30):
        random.Random(seed).shuffle(spellings)
        found = Candidates()
        for text in spellings:
            found.add(text, "brand")
        found.add("otterbox", "popular", 0.0, catalog=False)  # a shopper's spelling never wins
        assert found.text == {"otterbox": "OtterBox"}
        assert found.evidence["otterbox"] == {"brand": 192.0, "popular": 0.0}


def test_a_tie_shows_the_first_in_code_point_order_and_a_merchant_text_as_written() -> None:
    for order in (["a lamp", "A Lamp", "A Lamp", "a lamp"], ["A Lamp", "a lamp", "a lamp", "A Lamp"]):
        found = Candidates()
        for text in order:
            found.add(text, "name")
        assert found.text["a lamp"] == "A Lamp"
    found.add_custom("a LAMP", "sug_1", 2.0)
    found.add("a lamp", "name")
    assert found.text["a lamp"] == "a LAMP"
    found.add("reading light", "popular", 0.0, catalog=False)  # only shoppers say it: their spelling
    assert found.text["reading light"] == "reading light"
