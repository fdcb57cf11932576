"""When all words of a query find nothing together: which words to drop (relaxation).

The candidates or the filters say so before anything is scored; :func:`relax_clauses` decides
which words to drop by counting on membership masks, and only the survivors are scored."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .candidates import EMPTY_SLOTS, FieldPlan, clause_mask
from .clauses import Clause
from .errors import NO_DEADLINE, Deadline
from .memindex import MemIndex

_GUESSES = ("typo", "split")  # alternatives guessing what was meant (relaxation drops them first)


def relax_clauses(idx: MemIndex, plans: list[list[FieldPlan]], base: np.ndarray | None,
                  deadline: Deadline = NO_DEADLINE, clauses: Sequence[Clause] | None = None) -> tuple[list[int], np.ndarray]:
    """All words found nothing: drop the least informative words until something matches in
    ``base``.

    Words matching nothing go first; then stop words ("under", "for"; with a number right after
    one, both at once: "under 200" is a price), then bare numbers found only as typed (no glued or
    synonym alternative) and words found mostly as typo variants or split ("applewatch"), then the
    most common words. Returns the clauses kept and the live slots matching all of them (filters
    aside: facets count disjunctively). Word membership is a mask over the shard
    per clause, exactly the docs the clause scores above zero in: which words to drop is decided
    by counting, and only the survivors get scored."""
    masks = []
    for fps in plans:
        deadline.check()
        masks.append(clause_mask(idx, fps))
    counts = [int(np.count_nonzero(m if base is None else m & base)) for m in masks]
    kept = [i for i in range(len(plans)) if counts[i] > 0]
    rank = []
    for i, fps in enumerate(plans):
        r = _drop_class(clauses[i] if clauses else None, fps)
        if r == 0 and counts[i] and any(a.kind in _GUESSES for fp in fps for a, _ in fp.present):
            plain = [FieldPlan(fp.field, fp.weight, fp.idf, [(a, ps) for a, ps in fp.present if a.kind not in _GUESSES])
                     for fp in fps]
            m = clause_mask(idx, plain)
            if int(np.count_nonzero(m if base is None else m & base)) * 2 < counts[i]:
                r = 1  # found mostly as typo variants or split: a guess at what was meant
        rank.append(r)
    while kept:
        both = masks[kept[0]].copy()
        for i in kept[1:]:
            both &= masks[i]
        if (both if base is None else both & base).any():
            return kept, np.flatnonzero(both).astype(np.int32)
        drop = max(kept, key=lambda i: (rank[i], counts[i], i))
        group = clauses[drop].group if clauses and rank[drop] == 2 else -1
        kept = [i for i in kept if i != drop and (group < 0 or not clauses or clauses[i].group != group)]
    return kept, EMPTY_SLOTS


def _drop_class(clause: Clause | None, fps: list[FieldPlan]) -> int:
    """How little a word tells (dropped first: the highest): 2 a stop word, 1 a bare number
    found only as typed, 0 any other word."""
    if clause is None:
        return 0
    if clause.stop:
        return 2
    if clause.numeric and not any(a.kind != "exact" for fp in fps for a, _ in fp.present):
        return 1
    return 0
