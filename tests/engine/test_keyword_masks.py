"""Keyword filters through the slots grouped by value (``MemIndex.kw_slots_by_value``): the same
masks as a pass over every (slot, value) pair, while batches add pairs after the grouping, values
appear that it has never seen, documents are replaced and deleted, and compaction renumbers."""

from __future__ import annotations

import random

import numpy as np

from search_workers.engine.analysis import get_analyzer
from search_workers.engine.filters import kw_mask
from search_workers.engine.mapping import compile_mapping
from search_workers.engine.memindex import MemIndex

MAPPING = {
    "idField": "id",
    "fields": {
        "brand": {"type": "keyword", "filterable": True},
        "tags": {"type": "keyword[]", "filterable": True},
    },
}


def _reference(mem: MemIndex, field: str, ords: list[int]) -> np.ndarray:
    mask = np.zeros(mem.n, dtype=bool)
    ps, po = mem.kw_ps[field], mem.kw_po[field]
    mask[ps[np.isin(po, ords)]] = True
    return mask


def test_masks_through_the_grouping_equal_a_pass_over_every_pair():
    _id, fields = compile_mapping(MAPPING)
    mem = MemIndex(fields, get_analyzer("en"))
    rng = random.Random(7)
    grouped_once = False
    for batch in range(40):
        for _ in range(300):
            doc_id = str(rng.randrange(6000))
            if rng.random() < 0.1:
                mem.delete(doc_id)
                continue
            values = 20 + batch * 3  # later batches bring values the grouping has not seen
            mem.add(doc_id, {"brand": f"b{rng.randrange(values)}",
                             "tags": [f"t{rng.randrange(values)}" for _ in range(rng.randrange(4))]})
        mem.finalize()
        if batch == 25:
            mem.compact()
        for field in ("brand", "tags"):
            known = len(mem.kw_vals[field])
            for ords in ([rng.randrange(known)], [known - 1], rng.sample(range(known), 3),
                         list(range(known // 2)), []):
                got = kw_mask(mem, field, np.asarray(ords, dtype=np.int32))
                assert np.array_equal(got, _reference(mem, field, ords)), (batch, field, ords)
            grouped_once |= field in mem._kw_by_value
            slots, starts, upto = mem.kw_slots_by_value(field)
            # the grouping trails the pairs by at most an eighth (or 4096 pairs)
            assert upto <= len(mem.kw_ps[field]) <= upto + max(4096, upto >> 3)
    assert grouped_once
    # one value's mask reads its own slots: its grouped run is exactly the pairs holding it
    slots, starts, upto = mem.kw_slots_by_value("tags")
    po = mem.kw_po["tags"][:upto]
    assert sorted(slots[starts[3]:starts[4]].tolist()) == sorted(mem.kw_ps["tags"][:upto][po == 3].tolist())
