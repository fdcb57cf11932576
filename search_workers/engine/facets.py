"""Facet counts over a query's matches: each facet ignores the filters on its own field
(disjunctive counts); terms facets count every value found, range facets one count per range
(``start`` inclusive, ``end`` exclusive), hierarchy facets the nodes of a category tree
(``hierarchy.py``), a facet value search the values matching what was typed (``facet_search.py``). A facet's bins per slot are cached per shard version."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shared.contract import Facet

from .errors import Deadline, EngineError
from .facet_search import FacetSearch
from .filters import and_masks
from .hierarchy import Hierarchies
from .mapping import FieldSpec
from .memindex import MemIndex
from .values import to_number

MAX_FACET_VALUES = 16  # values per document counted through a (slots x values) table; more: pairs


class FacetCounter:
    """The facet counts of queries over ``mem`` with the shard's compiled ``fields``."""

    def __init__(self, mem: MemIndex, fields: dict[str, FieldSpec]) -> None:
        self.mem = mem
        self.fields = fields
        self._bins: dict[tuple, tuple[tuple[int, int, int], FacetBins]] = {}
        self._trees = Hierarchies(mem)
        self._values = FacetSearch(mem)

    def count(self, facets: Sequence[Facet], cands: np.ndarray, match: np.ndarray,
                filters: list[tuple[str | None, np.ndarray]], deadline: Deadline) -> dict[str, Any]:
        """Counts over the matching candidates; each facet ignores the filters on its own field
        (disjunctive counts). The filters are gathered at the candidates once, and the facets of
        unfiltered fields share one document set."""
        mem = self.mem
        out: dict[str, Any] = {}
        if not facets:
            return out
        at_cands = [(f, np.take(m, cands)) for f, m in filters]
        shared: np.ndarray | None = None  # the docs of every facet whose field has no filter
        others: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(docs) -> (docs, the other live slots)
        for i, fdef in enumerate(facets):
            deadline.check()
            fname = fdef.field
            spec = self.fields.get(fname)
            if spec is None or not spec.facetable:
                raise EngineError(f"field {fname!r} is not facetable", "FIELD_NOT_FACETABLE",
                                  [{"path": f"facets[{i}].field", "message": "field is not facetable"}])
            if any(f == fname for f, _ in at_cands):
                docs = cands[and_masks(len(cands), [match] + [m for f, m in at_cands if f != fname])]
            else:
                if shared is None:
                    shared = cands[and_masks(len(cands), [match] + [m for _, m in at_cands])]
                docs = shared
            if fdef.type == "range":
                if not spec.is_numeric:
                    raise EngineError("range facet on non-numeric field", "FACET_INVALID",
                                      [{"path": f"facets[{i}].type", "message": "range needs a numeric/date field"}])
                bounds = [(None if r.start is None else _num(r.start, spec.type),
                           None if r.end is None else _num(r.end, spec.type)) for r in fdef.ranges]
                edges = np.unique(np.asarray([b for r in bounds for b in r if b is not None], dtype=np.float64))
                # bin k: edges[k-1] <= value < edges[k]; a range sums the bins between its bounds
                cum = np.concatenate(([0], np.cumsum(self._count(("range", fname, tuple(edges.tolist())), docs, others))))
                out[fname] = [max(0, int(cum[_bin(edges, end, len(edges) + 1)] - cum[_bin(edges, start, 0)]))
                              for start, end in bounds]
                continue
            if fdef.type in ("hierarchy", "values") and spec.type not in ("keyword", "keyword[]"):
                raise EngineError(f"{fdef.type} facet on a field that is not a keyword field", "FACET_INVALID",
                                  [{"path": f"facets[{i}].type", "message": "needs a keyword or keyword[] field"}])
            if fdef.type == "hierarchy":
                out[fname] = self._trees.counts(fname, fdef.separator, fdef.expand, docs)
            elif spec.type in ("keyword", "keyword[]", "text"):
                vals_list = mem.kw_vals[fname]
                cnt = self._count(("kw", fname, ()), docs, others)
                if fdef.type == "values":
                    matching = self._values.matching(fname, fdef.prefix)
                    if matching is not None:
                        cnt = np.where(matching[: len(cnt)], cnt, 0)
                nz = np.flatnonzero(cnt)
                out[fname] = dict(zip([vals_list[j] for j in nz.tolist()], cnt[nz].tolist(), strict=True))
            elif spec.type == "boolean":
                col = mem.boo[fname][docs]
                res = {}
                t, f_ = int(np.count_nonzero(col == 1)), int(np.count_nonzero(col == 0))
                if t:
                    res["true"] = t
                if f_:
                    res["false"] = f_
                out[fname] = res
            else:
                col = mem.num[fname][docs]
                col = col[~np.isnan(col)]
                u, c = np.unique(col, return_counts=True)
                out[fname] = {_fmt_num(x, spec.type): int(y) for x, y in zip(u.tolist(), c.tolist(), strict=False)}
        return out

    def _count(self, key: tuple[str, str, tuple], docs: np.ndarray,
               others: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Documents per bin of a facet among ``docs`` (live slots), see :class:`FacetBins`.
        More than half of the live documents: the counts of all of them (cached) minus those of
        the others, so the work never exceeds half the shard; ``others`` keeps those other slots
        for the query's next facet over the same ``docs``."""
        mem = self.mem
        fb = self._facet_bins(key)
        if fb.codes is None:  # many values per document: the (slot, ordinal) pairs
            return np.bincount(mem.kw_ordinals(key[1], docs), minlength=fb.nbins)
        if len(docs) * 2 > mem.n_live:
            held = others.get(id(docs))
            if held is None or held[0] is not docs:
                rest = mem.live[: mem.n].copy()
                rest[docs] = False
                held = others[id(docs)] = (docs, np.flatnonzero(rest))  # (holding docs: its id stays its own)
            return fb.everyone - _count_codes(fb, held[1])
        return _count_codes(fb, docs)

    def _facet_bins(self, key: tuple[str, str, tuple]) -> FacetBins:
        """The bins of ``("kw", field, ())`` (value ordinals) or ``("range", field, edges)``,
        cached until the shard changes."""
        mem = self.mem
        kind, fname, edges = key
        n = mem.n
        version = (mem.version, n, len(mem.kw_ps[fname]) if kind == "kw" else 0)
        hit = self._bins.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        sets: np.ndarray | None = None
        codes: np.ndarray | None
        if kind == "range":
            col = mem.num[fname][:n]
            nbins = len(edges) + 1
            codes = np.searchsorted(np.asarray(edges, dtype=np.float64), col, "right").astype(np.int32)
            codes[np.isnan(col)] = nbins
        else:
            ps, po = mem.kw_ps[fname], mem.kw_po[fname]
            nbins = len(mem.kw_vals[fname])
            per_slot = np.bincount(ps, minlength=n) if len(ps) else np.zeros(n, dtype=np.int64)
            width = int(per_slot.max()) if n else 0
            if width > MAX_FACET_VALUES:
                codes = None
            else:
                codes = np.full((n, max(width, 1)), nbins, dtype=np.int32)
                starts = np.cumsum(per_slot) - per_slot
                at = ps.astype(np.int64) * codes.shape[1] + np.arange(len(ps)) - starts[ps]  # (ps is in slot order)
                codes.reshape(-1)[at] = po  # (a flat scatter: a tenth of the time of codes[rows, cols])
                if width <= 1:
                    codes = codes[:, 0]
                elif (nbins + 1) ** width < 2**63:  # few sets of values shared (categories): a number per set
                    # a row as one integer (np.unique over rows took 110 ms for 50k documents, this 4)
                    row_keys = codes.astype(np.int64) @ ((nbins + 1) ** np.arange(width, dtype=np.int64))
                    _, first, which = np.unique(row_keys, return_index=True, return_inverse=True)
                    if len(first) * 4 <= n:
                        sets, codes = codes[first], which.reshape(-1).astype(np.int32)
        live = mem.live[:n]
        fb = FacetBins(codes, nbins, sets, np.zeros(nbins, dtype=np.int64))
        if codes is None:
            fb.everyone = np.bincount(mem.kw_ordinals(fname, np.flatnonzero(live)), minlength=nbins)
        else:
            fb.everyone = _count_codes(fb, np.flatnonzero(live))
        if len(self._bins) >= 16 or any(v[0][0] != mem.version for v in self._bins.values()):
            self._bins.clear()
        self._bins[key] = (version, fb)
        return fb


@dataclass
class FacetBins:
    """A facet's bins per slot (cached per shard version).

    ``codes``: per slot, its bin (``nbins``: none) - a value ordinal, or the range bin ``k``
    holding ``edges[k-1] <= value < edges[k]``; for a keyword[] field a row of ordinals per slot,
    or, when documents share few sets of values, the number of the slot's set in ``sets`` (rows
    of ordinals); ``None``: more than MAX_FACET_VALUES values in a document (the (slot, ordinal)
    pairs are read instead). ``everyone``: the counts over every live document."""

    codes: np.ndarray | None
    nbins: int
    sets: np.ndarray | None
    everyone: np.ndarray


def _count_codes(fb: FacetBins, docs: np.ndarray) -> np.ndarray:
    """Documents per bin among ``docs`` from the facet's codes (not ``None``)."""
    assert fb.codes is not None
    # (np.take: a fifth of the time of codes[docs] for rows of a 2-d table)
    picked = np.take(fb.codes, docs, axis=0).ravel()
    if fb.sets is None:
        return np.bincount(picked, minlength=fb.nbins + 1)[: fb.nbins]
    per_set = np.bincount(picked, minlength=len(fb.sets))
    counts = np.bincount(fb.sets.ravel(), weights=np.repeat(per_set, fb.sets.shape[1]), minlength=fb.nbins + 1)
    return counts[: fb.nbins].astype(np.int64)  # (float weights: exact below 2**53)


def _bin(edges: np.ndarray, bound: float | None, unbounded: int) -> int:
    """The first bin at or above ``bound`` (see ``_facet_codes``)."""
    return unbounded if bound is None else int(np.searchsorted(edges, bound)) + 1


def _num(v: Any, ftype: str) -> float:
    x = to_number(v, ftype)
    if math.isnan(x):
        raise EngineError("bad range bound", "FACET_INVALID", [{"path": "facets.ranges", "message": "not a number/date"}])
    return x


def _fmt_num(x: float, ftype: str) -> str:
    if ftype == "integer" or float(x).is_integer():
        return str(int(x))
    return repr(float(x))
