"""The order of a query's matches: sort keys (then score, then slot), popularity boosts, the
first ``k`` of them, and one hit per group (``Query.distinct``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shared.contract import Boost, Query, SortKey, group_key_of

from .errors import Deadline, EngineError
from .geo import distances, lat_key, lng_key
from .mapping import FieldSpec
from .memindex import MemIndex

SortFn = tuple[Callable[..., np.ndarray], Callable[..., Any]]
"""(ascending key over (candidate slots, their scores); the hit's sort value of a slot)."""


def sort_keys(mem: MemIndex, fields: dict[str, FieldSpec], sort: Sequence[SortKey]) -> list[SortFn]:
    """The query's sort keys over ``mem``, each an ascending key and the hit's sort value."""
    out: list[SortFn] = []
    for i, item in enumerate(sort):
        fname, desc = item.field, item.desc
        if item.relevance:
            out.append(((lambda c, s, desc=desc: (-s if desc else s).astype(np.float64)),
                        (lambda slot: None)))
            continue
        spec = fields.get(fname)
        if spec is None or not spec.sortable:
            raise EngineError(f"field {fname!r} is not sortable", "FIELD_NOT_SORTABLE",
                              [{"path": f"sort[{i}]", "message": "field is not sortable"}])
        if item.near is not None and spec.type != "geopoint":
            raise EngineError(f"field {fname!r} is not a geopoint", "FIELD_NOT_SORTABLE",
                              [{"path": f"sort[{i}]", "message": f"{fname} is {spec.type}: near takes a geopoint"}])
        if spec.type == "geopoint":
            if item.near is None:
                raise EngineError(f"sorting by {fname!r} needs a point", "FIELD_NOT_SORTABLE",
                                  [{"path": "near", "message": f"sorting by the geopoint {fname} needs near: {{lat, lng}}"}])
            out.append(_distance_key(mem, fname, item.near))
            continue
        if spec.is_numeric:
            col = mem.num[fname]

            def key(c, s, col=col, desc=desc):
                v = col[c]
                v = -v if desc else v.copy()
                v[np.isnan(v)] = np.inf
                return v

            def val(slot, col=col, spec=spec):
                x = float(col[slot])
                if math.isnan(x):
                    return None
                return int(x) if spec.type == "integer" else x

            out.append((key, val))
        elif spec.type == "boolean":
            colb = mem.boo[fname]

            def keyb(c, s, colb=colb, desc=desc):
                v = colb[c].astype(np.float64)
                v = -v if desc else v
                v[colb[c] < 0] = np.inf
                return v

            out.append((keyb, lambda slot, colb=colb: None if colb[slot] < 0 else bool(colb[slot])))
        else:
            first = mem.kw_first[fname]
            rank = mem.kw_rank(fname)

            def keyk(c, s, first=first, rank=rank, desc=desc):
                f = first[c]
                v = np.where(f >= 0, rank[np.maximum(f, 0)] if len(rank) else 0, 0).astype(np.float64)
                v = -v if desc else v
                v[f < 0] = np.inf
                return v

            vals = mem.kw_vals[fname]
            out.append((keyk, lambda slot, first=first, vals=vals: vals[first[slot]] if first[slot] >= 0 else None))
    return out


def _distance_key(mem: MemIndex, fname: str, near: tuple[float, float]) -> SortFn:
    """Nearest first (documents without a point last); the hit's sort value is the distance in meters."""
    lat, lng = mem.num[lat_key(fname)], mem.num[lng_key(fname)]

    def key(c: np.ndarray, s: np.ndarray) -> np.ndarray:
        v = distances(lat[c], lng[c], near)
        v[np.isnan(v)] = np.inf
        return v

    def val(slot: int) -> float | None:
        x = float(distances(lat[slot : slot + 1], lng[slot : slot + 1], near)[0])
        return None if math.isnan(x) else x

    return key, val


def ranked(pos: np.ndarray, k: int, cands: np.ndarray, score: np.ndarray, sort_keys: list[SortFn]) -> np.ndarray:
    """The first ``k`` of the matches ``pos`` (positions into ``cands``) in the query's order: the
    sort keys, then score descending, then slot."""
    if k == 0 or not len(pos):
        return pos[:0]
    if not sort_keys:
        s = score[pos]
        if k < len(pos):
            kth = np.partition(s, len(s) - k)[len(s) - k]
            above = pos[s > kth]
            ties = pos[s == kth]
            pos = np.concatenate((above, ties[: k - len(above)]))
        return pos[np.lexsort((pos, -score[pos]))][:k]
    keys = [fn(cands[pos], score[pos]) for fn, _ in sort_keys]
    if k < len(pos):
        pk = keys[0]
        kth = np.partition(pk, k - 1)[k - 1]
        sel = pk <= kth
        pos = pos[sel]
        keys = [kk[sel] for kk in keys]
    return pos[np.lexsort(tuple([pos, -score[pos], *keys[::-1]]))][:k]  # type: ignore[arg-type]


class BoostFactors:
    """Popularity boosts' factors per slot of ``mem``, kept for the few boost sets in use."""

    def __init__(self, mem: MemIndex) -> None:
        self.mem = mem
        self._cache: dict[tuple, np.ndarray] = {}

    def factor(self, boosts: tuple[Boost, ...]) -> np.ndarray:
        """``1 + sum(weight * modifier(value))`` per slot, cached until the shard changes."""
        mem = self.mem
        key = (mem.version, mem.n, boosts)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        n = mem.n
        factor = np.ones(n, dtype=np.float32)
        for b in boosts:
            col = mem.num.get(b.field)
            if col is None:
                raise EngineError(f"boost field {b.field!r} has no numeric column", "FIELD_NOT_SORTABLE",
                                  [{"path": "boosts.field", "message": "needs a sortable/filterable numeric field"}])
            v = np.clip(np.nan_to_num(col[:n], nan=0.0), 0, None)
            if b.modifier == "log1p":
                v = np.log1p(v)
            elif b.modifier == "sqrt":
                v = np.sqrt(v)
            factor += (float(b.weight) * v).astype(np.float32)
        if len(self._cache) >= 8 or any(k[0] != mem.version for k in self._cache):
            self._cache.clear()
        self._cache[key] = factor
        return factor


@dataclass
class GroupPage:
    """The groups of a query's matches (``Query.distinct``) and the page of their best hits."""

    top: np.ndarray  # positions into the candidates: the page's hits, one per group
    first: np.ndarray  # the field's first value ordinal per slot (-1: none)
    keys_of: np.ndarray  # group key per value ordinal
    counts: np.ndarray  # matches per value ordinal
    nz: np.ndarray  # the ordinals of the groups matched
    ungrouped: int  # matches without a value (each a group of its own)

    @property
    def total(self) -> int:
        return len(self.nz) + self.ungrouped


class Groups:
    """One hit per value of a keyword field, with the group keys of each field's values kept
    (extended as values come: ordinals are never renumbered)."""

    def __init__(self, mem: MemIndex) -> None:
        self.mem = mem
        self._gkeys: dict[str, np.ndarray] = {}  # per distinct field: group key per value ordinal

    def page(self, query: Query, cands: np.ndarray, pos: np.ndarray, score: np.ndarray,
             sort_keys: list[SortFn], deadline: Deadline) -> GroupPage:
        """``Query.distinct``: the best hit of each group (value of the field) in the query's order,
        and every matching group's key and size for the merge (see ``search_workers.merge``). A
        document without a value is a group of its own.

        The top ``k`` groups are the first ``k`` groups met in the ranked matches, so the ranking
        runs over a prefix of them that grows (x4) until it holds ``k`` groups: a few passes at
        most, however large a group is."""
        field = query.distinct
        assert field is not None
        # profiles name a keyword field; a field whose type changed since (the usage registry
        # checks flags, not types) still groups, by its first value, while it has a value column
        first = self.mem.kw_first.get(field)
        if first is None:
            raise EngineError(f"field {field!r} cannot group hits", "FIELD_NOT_FILTERABLE",
                              [{"path": "distinct", "message": "needs a filterable or facetable keyword field"}])
        keys_of = self._group_keys(field)
        g = np.take(first, cands[pos])  # value ordinal per match, -1: none
        has = g >= 0
        counts = np.bincount(g[has], minlength=len(keys_of))
        ungrouped = int(len(g) - np.count_nonzero(has))
        nz = np.flatnonzero(counts)
        k = max(0, query.offset) + max(0, query.limit)
        top = pos[:0]
        m = min(len(pos), 4 * k)
        while k and len(pos):
            deadline.check()
            order = ranked(pos, m, cands, score, sort_keys)
            rg = np.take(first, cands[order])
            grouped = np.flatnonzero(rg >= 0)
            _, firsts = np.unique(rg[grouped], return_index=True)
            keep = np.sort(np.concatenate((grouped[firsts], np.flatnonzero(rg < 0))))
            if len(keep) >= k or m >= len(pos):
                top = order[keep[:k]]
                break
            m = min(len(pos), 4 * m)
        return GroupPage(top[max(0, query.offset):], first, keys_of, counts, nz, ungrouped)

    def _group_keys(self, field: str) -> np.ndarray:
        """``group_key_of`` each value ordinal of ``field`` (uint64)."""
        vals = self.mem.kw_vals[field]
        keys = self._gkeys.get(field)
        if keys is None or len(keys) < len(vals):
            have = 0 if keys is None else len(keys)
            more = np.fromiter((group_key_of(v) for v in vals[have:]), dtype=np.uint64, count=len(vals) - have)
            keys = more if keys is None else np.concatenate((keys, more))
            self._gkeys[field] = keys
        return keys
