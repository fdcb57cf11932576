"""Merging the answers of the shards of one index into one answer (pure functions, no I/O).

How a query is split
====================
``shared.contract.shard_query`` turns the caller's query into the one every shard gets: the same query with
``offset=0`` and ``limit=offset+limit``, so each shard returns its own top ``offset+limit`` hits.
The global top ``offset+limit`` is necessarily contained in the union of those lists, so
:func:`merge_answers` can sort the union and slice ``[offset:offset+limit]`` - pages never overlap
and never skip a hit, whatever the number of shards.

Order of merged hits
====================
By the query's ``sort`` (the engine returns ``sortValues = [value per sort key..., score]``),
missing values last in either direction (as the engine does), strings compared case-insensitively;
then score descending; then a deterministic tiebreak on (shard number, position in that shard's
list).  Every shard's list is already in that order, so the merge is a valid interleaving of them.
With no ``sort`` the order is score descending, then the same tiebreak.

Facets
======
Shards count every value (the engine never cuts), so sums are exact: ``terms`` facets are summed
per value, sorted (``sort: "count"`` - count desc then value; ``"alpha"`` - value, numerically when
every value is a number) and cut to ``size`` (default 10, as the API contract); the answer keeps the
engine's shape ``{field: {value: count}}`` with the dict in display order.  ``range`` facets are
summed per range (``{field: [count per range]}``).

Relaxation
==========
A shard with no strict (all-words) match relaxes its query on its own.  A single engine would only
relax if the whole catalog had no strict match, so: if any shard has strict matches, the relaxed
shards' answers are ignored (hits, total and facets); otherwise the relaxed answers that dropped the
fewest words are kept, and ``droppedWords`` is the union of what they dropped.

Distinct (one hit per group)
============================
With ``query.distinct`` each shard returns its own top ``offset+limit`` groups (its best hit of
each, ``Hit.group_key``/``group_size``). The global top ``offset+limit`` groups are in the union of
those lists: a group's global best hit is its best in the shard holding it, and every group that
shard ranks above it ranks above it globally too. So the merge sorts the union as above, keeps the
first hit of each group key (documents without a value are groups of their own: never merged)
and slices ``[offset:offset+limit]``; the order of groups is total, so page 2 continues page 1.

Documents are placed by id, so one group's documents are spread over the shards, and a group's
size and the number of groups need every shard's matching groups, not just its top ones. Each
shard reports them whole, cheaply: ``group_keys`` (8-byte keys of the values, BLAKE2b, see
``shared.contract.group_key_of``: the same in every process, unlike ``hash``) with
``group_counts``, as raw bytes (no per-value Python objects to pickle; 16 bytes a group), and
``ungrouped``. The merge sorts the concatenated keys once: ``total`` is the number of distinct keys
plus the ungrouped documents; a page group's size is the sum of its counts (found with ``np.isin``
for the page's keys only). One shard chosen: its own total and sizes stand. A key collision (two
values with one key, probability ~3e-8 for a million values) would count two groups as one.
With distinct off none of this runs and the shards send nothing more.

Score comparability across shards
=================================
Scores are BM25-like and use per-shard statistics (document count, document frequency, average
field length).  Documents are placed by a hash of their id (:mod:`shared.routing`), so
every shard is a uniform random sample of the catalog and its statistics are near-identical to the
others' (and to the global ones); for shards of a few thousand documents the idf of a term differs
by a few percent at most except for very rare terms, where the difference applies to all of that
term's few candidates alike.  The engine deliberately takes no global ``stats`` (it would cost a
second round trip per query since term expansion - typos, prefixes, synonyms - happens per shard),
so scores are merged as they are.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from shared.contract import Answer, Facet, FacetCounts, Hit, Query, SortKey

__all__ = ["merge_answers"]


def _cmp_values(a: Any, b: Any) -> int:
    """Ascending comparison of two non-missing sort values of one key."""
    ka: Any
    kb: Any
    if isinstance(a, str) and isinstance(b, str):
        ka, kb = (a.casefold(), a), (b.casefold(), b)
    elif isinstance(a, int | float) and isinstance(b, int | float):
        ka, kb = (float(a), 0), (float(b), 0)  # bool is an int: False < True
    else:  # mixed types (should not happen within one mapping): stable but arbitrary
        ka, kb = (type(a).__name__, str(a)), (type(b).__name__, str(b))
    return (ka > kb) - (ka < kb)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


_Entry = tuple[int, int, Hit]


def _hit_comparator(sort_keys: Sequence[SortKey]) -> Any:
    def cmp(x: _Entry, y: _Entry) -> int:
        hx, hy = x[2], y[2]
        sx, sy = float(hx.score or 0.0), float(hy.score or 0.0)
        vx, vy = hx.sort_values, hy.sort_values
        for i, key in enumerate(sort_keys):
            if key.relevance:
                c = (sx > sy) - (sx < sy)
            else:
                a = vx[i] if i < len(vx) else None
                b = vy[i] if i < len(vy) else None
                ma, mb = _missing(a), _missing(b)
                if ma or mb:
                    if ma and mb:
                        continue
                    return 1 if ma else -1  # missing last, whatever the direction
                c = _cmp_values(a, b)
            if c:
                return -c if key.desc else c
        if sx != sy:
            return -1 if sx > sy else 1
        return (x[0] > y[0]) - (x[0] < y[0]) or (x[1] > y[1]) - (x[1] < y[1])

    return cmp


def _as_number(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _order_terms(counts: dict[str, int], how: str, size: int | None) -> dict[str, int]:
    """The first ``size`` values in display order. A field of 50k distinct values (one per product)
    costs a heap selection, not a sort of them all (that took 200 ms)."""
    items = list(counts.items())
    key: Any
    if how == "alpha":
        if items and all(_as_number(k) is not None for k, _ in items):
            key = lambda kv: (float(kv[0]), kv[0])  # noqa: E731
        else:
            key = lambda kv: (str(kv[0]).casefold(), str(kv[0]))  # noqa: E731
    else:
        if size is not None and 0 < size < len(items):  # only counts at or above the size-th can be shown
            kth = heapq.nlargest(size, counts.values())[-1]
            items = [kv for kv in items if kv[1] >= kth]
        key = lambda kv: (-kv[1], str(kv[0]).casefold(), str(kv[0]))  # noqa: E731
    if size is not None and max(0, size) < len(items):
        return dict(heapq.nsmallest(max(0, size), items, key=key))  # == sorted(items, key=key)[:size]
    items.sort(key=key)
    return dict(items)


def _merge_facets(defs: Sequence[Facet], answers: Sequence[Answer]) -> dict[str, FacetCounts]:
    out: dict[str, FacetCounts] = {}
    for d in defs:
        name = d.field
        parts = [p for p in (a.facets.get(name) for a in answers) if p is not None]
        if d.type == "range":
            n = max([len(d.ranges)] + [len(p) for p in parts])
            sums = [0] * n
            for p in parts:
                assert isinstance(p, list)
                for i, c in enumerate(p):
                    sums[i] += int(c)
            out[name] = sums
            continue
        total: dict[str, int] = {}
        if len(parts) == 1:
            assert isinstance(parts[0], dict)
            total = parts[0]
        else:
            for p in parts:
                assert isinstance(p, dict)
                for value, c in p.items():
                    total[value] = total.get(value, 0) + int(c)
        out[name] = _order_terms(total, d.sort, None if d.type == "hierarchy" else d.size)  # per level later
    return out


def _select_answers(answers: Sequence[Answer]) -> list[int]:
    """Indices of the shard answers that take part (see "Relaxation" in the module docstring)."""
    strict = [i for i, a in enumerate(answers) if not a.relaxed]
    if any(answers[i].total > 0 for i in strict):
        return strict
    relaxed = [i for i, a in enumerate(answers) if a.relaxed and a.total > 0]
    if not relaxed:
        return list(range(len(answers)))
    fewest = min(len(answers[i].dropped_words) for i in relaxed)
    return [i for i in relaxed if len(answers[i].dropped_words) == fewest]


def _distinct_hits(ranked: list[Hit], chosen: Sequence[Answer], offset: int, limit: int) -> tuple[list[Hit], int]:
    """The page of groups of ``ranked`` (the shards' hits in merged order) with their sizes over
    every shard, and the number of groups (see "Distinct" in the module docstring)."""
    seen: set[int] = set()
    page: list[Hit] = []
    for hit in ranked:
        key = hit.group_key
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        page.append(hit)
        if len(page) >= offset + limit:
            break
    page = page[offset:]
    if len(chosen) == 1:  # one shard's groups: its sizes and count are the whole story
        return page, chosen[0].total
    keys = np.concatenate([np.frombuffer(a.group_keys, dtype="<u8") for a in chosen])
    counts = np.concatenate([np.frombuffer(a.group_counts, dtype="<i8") for a in chosen])
    # sizes of the page's groups only: its keys looked up among all (a compare per key, no sort)
    wanted = np.asarray([h.group_key for h in page if h.group_key is not None], dtype=np.uint64)
    sizes: dict[int, int] = {}
    if len(wanted):
        at = np.flatnonzero(np.isin(keys, wanted))
        for key, count in zip(keys[at].tolist(), counts[at].tolist(), strict=True):
            sizes[key] = sizes.get(key, 0) + count
    out = [hit if hit.group_key is None else msgspec.structs.replace(hit, group_size=sizes.get(hit.group_key, 1))
           for hit in page]
    keys.sort()  # (a copy: frombuffer arrays are read-only) the number of groups: distinct keys
    groups = 1 + int(np.count_nonzero(keys[1:] != keys[:-1])) if len(keys) else 0
    return out, groups + sum(a.ungrouped for a in chosen)


def merge_answers(query: Query, answers: Sequence[Answer]) -> Answer:
    """Merge the shard answers (in shard order) to ``query`` (the caller's, not ``shard_query``'s)."""
    limit, offset = max(0, query.limit), max(0, query.offset)
    keep = _select_answers(answers)
    chosen = [answers[i] for i in keep]
    total = sum(a.total for a in chosen)
    if len(chosen) == 1 and offset == 0:
        hits = chosen[0].hits[:limit]
    else:
        entries: list[_Entry] = [(i, pos, hit) for i in keep for pos, hit in enumerate(answers[i].hits)]
        if query.sort:
            entries.sort(key=functools.cmp_to_key(_hit_comparator(query.sort)))
        else:  # the comparator's order, as a plain key: score descending, then shard and position
            entries.sort(key=lambda e: (-float(e[2].score or 0.0), e[0], e[1]))
        if query.distinct is not None:
            hits, total = _distinct_hits([h for _, _, h in entries], chosen, offset, limit)
        else:
            hits = [h for _, _, h in entries[offset: offset + limit]]
    dropped: list[str] = []
    for a in chosen:
        for w in a.dropped_words:
            if w not in dropped:
                dropped.append(w)
    relaxed = any(a.relaxed for a in chosen)
    return Answer(
        total=total,
        hits=hits,
        facets=_merge_facets(query.facets, chosen),
        relaxed=relaxed,
        dropped_words=dropped if relaxed else [],
        pinned=[h for a in answers for h in a.pinned],  # a pin stands whatever relaxation chose
    )
