"""Typo and prefix expansions of query words, looked up in a shard's term dictionary (never by
scanning documents): typos through the deletion index (Damerau/OSA distance; a typo on the first
letter counts as two, as in Meilisearch), prefixes by binary search of the sorted terms. Both are
kept in the shard's query cache until it changes (:meth:`MemIndex.cached`)."""

from __future__ import annotations

import bisect
import heapq

from shared.text import osa_distance

from .memindex import MemIndex


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}



def typo_candidates(idx: MemIndex, words: list[str], max_d: int) -> dict[str, int]:
    """Terms within ``max_d`` (OSA) of any of ``words``, found via the deletion index."""
    cache, hit = idx.cached(("typo", tuple(words), max_d))
    if hit is not None:
        return hit  # type: ignore[return-value]
    out = _typo_candidates(idx, words, max_d)
    cache[("typo", tuple(words), max_d)] = out
    return out


def _typo_candidates(idx: MemIndex, words: list[str], max_d: int) -> dict[str, int]:
    out: dict[str, int] = {}
    di = idx.del_index
    surfaces = idx.surfaces
    td = idx.term_df
    for w in dict.fromkeys(words):
        keys = {w} | _deletes(w)
        if max_d >= 2:
            keys |= {d2 for d1 in _deletes(w) for d2 in _deletes(d1)}
        cands: set[str] = set()
        for k in keys:
            found = di.get(k)
            if found is None:
                continue
            if isinstance(found, str):
                cands.add(found)
            else:
                cands.update(found)
        for c in cands:
            if c == w or c[0:1].isdigit() != w[0:1].isdigit():
                continue
            d = osa_distance(w, c, max_d)
            if c[:1] != w[:1]:  # a typo on the first letter counts as two (Meilisearch)
                d += 1
            if 0 < d <= max_d:
                targets = [c] if c in td else []
                surf = surfaces.get(c)
                if surf is not None:
                    targets.extend((surf,) if isinstance(surf, str) else surf)
                for t in targets:
                    if t not in words and d < out.get(t, 99):
                        out[t] = d
    return out


def prefix_candidates(idx: MemIndex, prefixes: list[str], limit: int) -> list[str]:
    cache, hit = idx.cached(("prefix", tuple(prefixes), limit))
    if hit is not None:
        return hit  # type: ignore[return-value]
    out = _prefix_candidates(idx, prefixes, limit)
    cache[("prefix", tuple(prefixes), limit)] = out
    return out


def _prefix_candidates(idx: MemIndex, prefixes: list[str], limit: int) -> list[str]:
    terms = idx.sorted_terms
    found: set[str] = set()
    for p in dict.fromkeys(prefixes):
        if not p:
            continue
        i = bisect.bisect_left(terms, p)
        j = bisect.bisect_left(terms, p + "\U0010ffff")
        found.update(terms[i:j])
    df = idx.term_df
    # the most frequent first, ties by the term: every process picks (and orders) the same terms
    return heapq.nsmallest(limit, found, key=lambda t: (-df.get(t, 0), t))
