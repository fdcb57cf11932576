"""Stage 3 of a shard's search: the query's filters as masks over the shard (``base``), gathered at
the candidates where they are needed; facets count each field without its own filter."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from shared.geo import geo_faults, is_geo_condition

from .errors import NO_DEADLINE, Deadline, EngineError
from .geo import area_mask, lat_key, lng_key
from .hierarchy import descendant_ords
from .memindex import MemIndex
from .values import keyword_values, to_bool, to_number


def _field_mask(idx: MemIndex, fname: str, cond: Any, id_field: str,
                hierarchies: Mapping[str, str] | None = None) -> np.ndarray:
    n = idx.n
    if fname in ("id", id_field) and fname not in idx.fields or fname == id_field:
        mask = np.zeros(n, dtype=bool)
        vals = cond if isinstance(cond, list) else [cond]
        slots = [idx.id_to_slot.get(str(v)) for v in vals]
        slots = [s for s in slots if s is not None]
        if slots:
            mask[np.asarray(slots, dtype=np.int64)] = True
        return mask
    spec = idx.fields.get(fname)
    if spec is None:
        raise EngineError(f"unknown filter field {fname!r}", "FIELD_UNKNOWN", [{"path": f"filters.{fname}", "message": "unknown field"}])
    if not (spec.filterable or spec.facetable):
        raise EngineError(f"field {fname!r} is not filterable", "FIELD_NOT_FILTERABLE",
                          [{"path": f"filters.{fname}", "message": "field is not filterable"}])
    if spec.type == "geopoint":
        path = f"filters.{fname}"
        faults = geo_faults(cond, path) if is_geo_condition(cond) else [
            {"path": path, "message": "a geopoint field takes {around: ...} or {within: ...}"}]
        if faults:
            raise EngineError("bad geo filter", "FILTER_INVALID", faults)
        return area_mask(idx.num[lat_key(fname)][:n], idx.num[lng_key(fname)][:n], cond)
    if is_geo_condition(cond):
        raise EngineError("geo filter on another type", "FILTER_INVALID",
                          [{"path": f"filters.{fname}", "message": f"around and within take a geopoint field; this "
                                                                   f"one is {spec.type}"}])
    if isinstance(cond, dict):
        ops = {k: v for k, v in cond.items() if k in ("gt", "gte", "lt", "lte")}
        bad = [k for k in cond if k not in ("gt", "gte", "lt", "lte")]
        if bad or not ops:
            raise EngineError("bad range filter", "FILTER_INVALID", [{"path": f"filters.{fname}", "message": "use gt/gte/lt/lte"}])
        if spec.is_numeric:
            col = idx.num[fname][:n]
            mask = ~np.isnan(col)
            for op, v in ops.items():
                x = to_number(v, spec.type)
                if math.isnan(x):
                    raise EngineError("bad range value", "FILTER_INVALID", [{"path": f"filters.{fname}.{op}", "message": "not a number/date"}])
                mask &= {"gt": col > x, "gte": col >= x, "lt": col < x, "lte": col <= x}[op]
            return mask
        if spec.type in ("keyword", "keyword[]", "text"):
            return kw_mask(idx, fname, _kw_range_ords(idx, fname, ops))
        raise EngineError("range on boolean", "FILTER_INVALID", [{"path": f"filters.{fname}", "message": "range not supported"}])
    vals = cond if isinstance(cond, list) else [cond]
    if spec.is_numeric:
        col = idx.num[fname][:n]
        xs = [to_number(v, spec.type) for v in vals]
        xs = [x for x in xs if not math.isnan(x)]
        return np.isin(col, np.asarray(xs, dtype=np.float64)) if xs else np.zeros(n, dtype=bool)
    if spec.type == "boolean":
        col = idx.boo[fname][:n]
        bs = [to_bool(v) for v in vals]
        return np.isin(col, np.asarray([b for b in bs if b >= 0], dtype=np.int8))
    separator = hierarchies.get(fname) if hierarchies else None
    if separator is not None and spec.type in ("keyword", "keyword[]"):  # a path and every path below it
        return kw_mask(idx, fname, descendant_ords(idx, fname, separator, [str(v) for v in vals]))
    ords = idx.kw_ord[fname]
    wanted = [ords[s] for v in vals for s in keyword_values(v) if s in ords]
    return kw_mask(idx, fname, np.asarray(wanted, dtype=np.int32))


def _kept_field_mask(idx: MemIndex, fname: str, cond: Any, id_field: str,
                     hierarchies: Mapping[str, str] | None) -> np.ndarray:
    """A field clause's mask, kept until the shard changes (``MemIndex.keep_mask``, its "filters"
    pool): each costs a pass over the shard (a price range over 500,000 products: ~1 ms), and a
    storefront asks the same few again and again (its facets' values). Ids and areas are not kept."""
    if fname in ("id", id_field) or is_geo_condition(cond):
        return _field_mask(idx, fname, cond, id_field, hierarchies)
    try:
        said = orjson.dumps(cond, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # (not JSON: a caller's own value)
        return _field_mask(idx, fname, cond, id_field, hierarchies)
    key = ("filter", fname, hierarchies.get(fname) if hierarchies else None, said)
    _, hit = idx.cached(key)
    if hit is not None:
        return hit  # type: ignore[return-value]
    mask = _field_mask(idx, fname, cond, id_field, hierarchies)
    idx.keep_mask(key, mask, "filters")
    return mask


def _kw_range_ords(idx: MemIndex, fname: str, ops: dict[str, Any]) -> np.ndarray:
    """Ordinals of the keyword values inside a range (code-point order): two binary searches in
    the sorted dictionary, whatever its size."""
    ordered, ords = idx.kw_sorted(fname)
    lo, hi = 0, len(ordered)
    for op, v in ops.items():
        s = str(v)
        if op == "gt":
            lo = max(lo, bisect.bisect_right(ordered, s))
        elif op == "gte":
            lo = max(lo, bisect.bisect_left(ordered, s))
        elif op == "lt":
            hi = min(hi, bisect.bisect_left(ordered, s))
        else:
            hi = min(hi, bisect.bisect_right(ordered, s))
    return ords[lo:hi] if lo < hi else ords[:0]


def kw_mask(idx: MemIndex, fname: str, ords: np.ndarray) -> np.ndarray:
    """The slots holding any of the value ordinals ``ords`` of a keyword field: their slots as
    grouped by value (:meth:`MemIndex.kw_slots_by_value`), plus the pairs added since; when the
    values hold a large share of the pairs, one pass over all of them instead."""
    mask = np.zeros(idx.n, dtype=bool)
    if not len(ords):
        return mask
    ps, po = idx.kw_ps[fname], idx.kw_po[fname]
    slots, starts, upto = idx.kw_slots_by_value(fname)
    ords = np.asarray(ords, dtype=np.int64)
    grouped = ords[ords < len(starts) - 1]
    lo, hi = starts[grouped], starts[grouped + 1]
    total = int((hi - lo).sum())
    if total * 4 > upto:  # a large share: linear in the pairs, whatever the ordinals
        return _scan(mask, ps, po, ords, len(idx.kw_vals[fname]))
    if total:
        cnt = hi - lo
        mask[slots[np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)]] = True
    if len(ps) > upto:
        _scan(mask, ps[upto:], po[upto:], ords, len(idx.kw_vals[fname]))
    return mask


def _scan(mask: np.ndarray, ps: np.ndarray, po: np.ndarray, ords: np.ndarray, values: int) -> np.ndarray:
    """``mask`` with the slots of the pairs ``(ps, po)`` whose value is one of ``ords`` set."""
    if len(ords) == 1:
        sel = po == ords[0]
    else:  # a lookup table over the dictionary
        wanted = np.zeros(values, dtype=bool)
        wanted[ords] = True
        sel = wanted[po]
    mask[ps[sel]] = True
    return mask


def compile_filters(idx: MemIndex, flt: dict | None, id_field: str, deadline: Deadline = NO_DEADLINE,
                    hierarchies: Mapping[str, str] | None = None) -> list[tuple[str | None, np.ndarray]]:
    """Top-level clauses as (field or None, mask); AND them all for the result set. A field of
    ``hierarchies`` (field -> separator) holds paths: its values match their paths and those below."""
    out: list[tuple[str | None, np.ndarray]] = []
    if not flt:
        return out
    if not isinstance(flt, dict):
        raise EngineError("filters must be an object", "FILTER_INVALID", [{"path": "filters", "message": "must be an object"}])
    n = idx.n
    for key, cond in flt.items():
        deadline.check()
        if key == "not":
            sub = compile_filters(idx, cond, id_field, deadline, hierarchies)
            m = np.ones(n, dtype=bool)
            for _, sm in sub:
                m &= sm
            out.append((None, ~m))
        elif key in ("and", "or") and isinstance(cond, list):
            acc = np.ones(n, dtype=bool) if key == "and" else np.zeros(n, dtype=bool)
            for sub_f in cond:
                m = np.ones(n, dtype=bool)
                for _, sm in compile_filters(idx, sub_f, id_field, deadline, hierarchies):
                    m &= sm
                acc = (acc & m) if key == "and" else (acc | m)
            out.append((None, acc))
        else:
            out.append((key, _kept_field_mask(idx, key, cond, id_field, hierarchies)))
    return out


def and_masks(n: int, masks: Sequence[np.ndarray | None]) -> np.ndarray:
    """AND of boolean arrays of length ``n`` (``None`` entries skipped; none at all: all true)."""
    m = np.ones(n, dtype=bool)
    for x in masks:
        if x is not None:
            m &= x
    return m
