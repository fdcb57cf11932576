"""Merging the answers of the shards of one index into one answer (pure functions, no I/O).

How a query is split
====================
:func:`shard_query` turns the caller's query into the one every shard gets: the same query with
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

Score comparability across shards
=================================
Scores are BM25-like and use per-shard statistics (document count, document frequency, average
field length).  Documents are placed by a hash of their id (:mod:`search_workers.routing`), so
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

__all__ = ["shard_query", "merge_answers", "parse_sort", "DEFAULT_LIMIT", "DEFAULT_FACET_SIZE"]

DEFAULT_LIMIT = 20
DEFAULT_FACET_SIZE = 10
RELEVANCE_KEYS = frozenset({"_score", "_relevance", "relevance"})


def _limit_offset(query: dict) -> tuple[int, int]:
    limit = query.get("limit")
    limit = DEFAULT_LIMIT if limit is None else max(0, int(limit))
    offset = max(0, int(query.get("offset") or 0))
    return limit, offset


def shard_query(query: dict) -> dict:
    """The query each shard answers: top ``offset+limit`` hits from position 0."""
    limit, offset = _limit_offset(query)
    out = dict(query)
    out["offset"] = 0
    out["limit"] = offset + limit
    return out


def parse_sort(sort: Any) -> list[tuple[str, bool]]:
    """``["price:desc", ["title", "asc"], "_score"]`` -> ``[("price", True), ("title", False), ("_score", False)]``."""
    out: list[tuple[str, bool]] = []
    for item in sort or ():
        if not item:
            continue
        if isinstance(item, str):
            name, _, direction = item.partition(":")
        else:
            name, direction = item[0], (item[1] if len(item) > 1 else "asc")
        out.append((str(name), str(direction or "asc").lower() == "desc"))
    return out


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


def _hit_comparator(sort_keys: list[tuple[str, bool]]):
    def cmp(x: tuple[int, int, dict], y: tuple[int, int, dict]) -> int:
        hx, hy = x[2], y[2]
        sx, sy = float(hx.get("score") or 0.0), float(hy.get("score") or 0.0)
        vx, vy = hx.get("sortValues") or [], hy.get("sortValues") or []
        for i, (name, desc) in enumerate(sort_keys):
            if name in RELEVANCE_KEYS:
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
                return -c if desc else c
        if sx != sy:
            return -1 if sx > sy else 1
        return (x[0] > y[0]) - (x[0] < y[0]) or (x[1] > y[1]) - (x[1] < y[1])

    return cmp


def _facet_defs(facets: Any) -> list[dict]:
    out = []
    for f in facets or ():
        out.append({"field": f, "type": "terms"} if isinstance(f, str) else dict(f))
    return out


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


def _merge_facets(defs: list[dict], answers: Sequence[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in defs:
        name = d.get("field")
        if not isinstance(name, str):
            continue
        parts = [a.get("facets", {}).get(name) for a in answers]
        parts = [p for p in parts if p is not None]
        if d.get("type", "terms") == "range":
            n = max([len(d.get("ranges") or ())] + [len(p) for p in parts])
            sums = [0] * n
            for p in parts:
                for i, c in enumerate(p):
                    sums[i] += int(c)
            out[name] = sums
            continue
        total: dict[str, int] = {}
        if len(parts) == 1:
            total = parts[0]
        else:
            for p in parts:
                for value, c in p.items():
                    total[value] = total.get(value, 0) + int(c)
        size = d.get("size", DEFAULT_FACET_SIZE)
        out[name] = _order_terms(total, str(d.get("sort") or "count"), None if size is None else int(size))
    return out


def _select_answers(answers: Sequence[dict]) -> list[int]:
    """Indices of the shard answers that take part (see "Relaxation" in the module docstring)."""
    strict = [i for i, a in enumerate(answers) if not a.get("relaxed")]
    if any(int(answers[i].get("total") or 0) > 0 for i in strict):
        return strict
    relaxed = [i for i, a in enumerate(answers) if a.get("relaxed") and int(a.get("total") or 0) > 0]
    if not relaxed:
        return list(range(len(answers)))
    fewest = min(len(answers[i].get("droppedWords") or ()) for i in relaxed)
    return [i for i in relaxed if len(answers[i].get("droppedWords") or ()) == fewest]


def merge_answers(query: dict, answers: Sequence[dict]) -> dict:
    """Merge the shard answers (in shard order) to ``query`` (the caller's, not :func:`shard_query`'s).

    Returns ``{"total", "hits", "facets", "relaxed", "droppedWords"}`` shaped as one engine's answer.
    """
    limit, offset = _limit_offset(query)
    keep = _select_answers(answers)
    chosen = [answers[i] for i in keep]
    entries: list[tuple[int, int, dict]] = []
    for i in keep:
        for pos, hit in enumerate(answers[i].get("hits") or ()):
            entries.append((i, pos, hit))
    entries.sort(key=functools.cmp_to_key(_hit_comparator(parse_sort(query.get("sort")))))
    hits = [h for _, _, h in entries[offset: offset + limit]]
    dropped: list[str] = []
    for a in chosen:
        for w in a.get("droppedWords") or ():
            if w not in dropped:
                dropped.append(w)
    relaxed = any(bool(a.get("relaxed")) for a in chosen)
    return {
        "total": sum(int(a.get("total") or 0) for a in chosen),
        "hits": hits,
        "facets": _merge_facets(_facet_defs(query.get("facets")), chosen),
        "relaxed": relaxed,
        "droppedWords": dropped if relaxed else [],
    }
