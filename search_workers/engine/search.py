"""The search pipeline of one shard: a :class:`~shared.contract.Query` in, an
:class:`~shared.contract.Answer` out, evaluated over the shard's :class:`~.memindex.MemIndex`.

* **Queries never touch Whoosh.**  Per-query posting loops in Python are what made raw Whoosh
  slow (p99 0.5 s, facets 1.7 s).  The in-memory index holds postings as numpy arrays, BM25 field
  lengths, keyword ordinals (``np.bincount`` facets), numeric/date/boolean columns, a live mask
  and a term dictionary (sorted list + deletion index for typos); a query is evaluated with
  vectorised numpy over the candidates that can match (``query.py``).
* **Cross-shard comparable scores.**  Documents are spread over shards by a hash of the id, so
  N, document frequencies and average field lengths are statistically near-identical on every
  shard (for 50k-document shards the idf of any term differing by more than a few percent is
  rare and limited to very rare terms, where it affects every candidate the same way).  Global
  statistics would need a second round trip per query (term expansion happens per shard), so
  none are taken; scores are used as-is by the coordinator's merge.

Semantics of a query (the fields of ``Query``)
----------------------------------------------
* ``limit``/``offset``: hits are ranks ``offset .. offset+limit-1`` of this shard (a coordinator
  asks every shard for ``shard_query(query)`` and slices after merging).  Order is total (sort
  keys, then score, then internal document order), so pages never overlap.
* ``Hit.sort_values`` = one value per sort key (numbers, strings, booleans; dates as epoch
  seconds; ``None`` when missing - missing values sort last in both directions) followed by the
  score.  Relevance-only queries return ``[score]``.
* ``facets``: terms facets return every value with a count > 0 (``size``/``sort`` are applied by
  the coordinator after merging); range facets return one count per range (``start`` inclusive,
  ``end`` exclusive).  Counts are disjunctive (each facet ignores the filters on its own field)
  and respect ``exclude_ids``.
* ``relaxed``/``dropped_words``: with operator ``and`` and no result, words matching nothing are
  dropped, then stop words (with a number after one: "under 200"), bare numbers and words found
  mostly as typo variants, then the most frequent words one by one.  Shards relax
  independently; a coordinator that gets unrelaxed hits from some shard should drop relaxed
  hits of the others (or set ``relax=False``).
* ``boosts``: score x ``(1 + sum(weight * modifier(max(value, 0))))``; ``boost_filters``: score x
  ``max(0, 1 + weight)`` per matching entry.  Both work with an empty ``q`` (base score 1).
* ``distinct``: one hit per value of a keyword field (its best in the order above; a document
  without a value is a group of its own), ``Hit.group_size``; ``total`` counts groups, facets
  count documents; the answer lists every matching group's key and size for the merge.
* ``synonyms``: keys are phrases of one or more query words (compared as the analyzer
  normalises them, consecutive in the query); each alternative is a tuple of words that must
  all match (in one field) and stands for every word of the key.
* a searchable field's ``analyzer`` (mapping) applies to its query clauses, proximity and
  highlighting; one term dictionary serves every analysis.

Known gaps: ``suggest`` is not used by the engine (the suggestion index reads it); no
phrase/position data beyond the first 24 words of each field (used for the proximity bonus).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from shared.contract import Answer, Boost, Facet, FieldWeight, Hit, Query, SortKey, group_key_of

from .errors import Deadline, EngineError
from .mapping import FieldSpec
from .memindex import MemIndex, to_number
from .query import (
    PROXIMITY_BONUS,
    PROXIMITY_WINDOW,
    SAME_FIELD_BONUS,
    Clause,
    and_masks,
    build_clauses,
    compile_filters,
    highlight_text,
    keyword_value_bonus,
    plan_candidates,
    proximity_bonus,
    relax_clauses,
    score_plans,
)

DECODE_BYTES_PER_SECOND = 200e6  # orjson on a slow core, for deadline checks
MAX_FACET_VALUES = 16  # values per document counted through a (slots x values) table; more: pairs

SortFn = tuple[Callable[..., np.ndarray], Callable[..., Any]]
"""(ascending key over (candidate slots, their scores); the hit's sort value of a slot)."""


class ShardSearch:
    """Answers queries over ``mem`` with the shard's compiled ``fields``; the caller holds the
    shard's read lock."""

    def __init__(self, mem: MemIndex, fields: dict[str, FieldSpec], id_field: str, hidden: frozenset[str]) -> None:
        self.mem = mem
        self.fields = fields
        self.id_field = id_field
        self.hidden = hidden  # not retrievable: left out of hits
        self._all_fields = {f: FieldWeight() for f in mem.searchable}
        self._boost_cache: dict[tuple, np.ndarray] = {}
        self._bins: dict[tuple, tuple[tuple[int, int, int], FacetBins]] = {}
        self._gkeys: dict[str, np.ndarray] = {}  # per distinct field: group key per value ordinal

    def run(self, query: Query) -> Answer:
        """Evaluated over the query's candidates (``cands``: sorted live slots that can match) -
        every array below is aligned with them, so the cost follows the matches, not the shard.

        ``timeout_ms``: past it, :class:`~.errors.SearchTimeout` at the next check between stages
        (filter clauses, word clauses, facets, hits), so the work stops there."""
        deadline = Deadline(query.timeout_ms)
        mem = self.mem
        n = mem.n
        q = query.q
        if not isinstance(q, str):
            raise EngineError("q must be a string", "QUERY_INVALID", [{"path": "q", "message": "must be a string"}])
        fields_cfg = query.fields or self._all_fields
        for fname in fields_cfg:
            spec = self.fields.get(fname)
            if spec is None or not spec.searchable:
                raise EngineError(f"field {fname!r} is not searchable", "FIELD_NOT_SEARCHABLE",
                                  [{"path": f"fields.{fname}", "message": "field is not searchable"}])
        limit = max(0, query.limit)
        offset = max(0, query.offset)

        filters = compile_filters(mem, query.filters, self.id_field, deadline)
        pinned = self._pinned(query, filters, deadline) if query.pin_ids else []
        excl = None
        if query.exclude_ids:
            excl = np.ones(n, dtype=bool)
            slots = [mem.id_to_slot.get(str(i)) for i in query.exclude_ids]
            slots = [s for s in slots if s is not None]
            if slots:
                excl[np.asarray(slots, dtype=np.int64)] = False
        restrict = [m for _, m in filters] + ([excl] if excl is not None else [])
        base = and_masks(n, restrict) if restrict else None  # dense; gathered at the candidates

        relaxed = False
        dropped: list[str] = []
        matched_terms: set[str] = set()
        deadline.check()
        clauses, field_clauses = self._clauses(query, fields_cfg, deadline) if q.strip() else ([], {})
        if clauses:
            plans, cands = plan_candidates(mem, clauses, fields_cfg, field_clauses, query.operator == "or", base, deadline)
            deadline.check()
            kept = list(range(len(clauses)))
            may_relax = query.operator == "and" and query.relax and len(clauses) > 1
            # the strict matches are among the candidates: none in base, relax without scoring them
            inbase = _at(base, cands)
            strict = not may_relax or (cands if inbase is None else inbase).any()
            sc = score_plans(mem, plans, cands, deadline=deadline) if strict else None
            if sc is not None and query.operator == "or":
                match = np.logical_or.reduce([s > 0 for s in sc.clause_scores])
            elif sc is not None:
                match = and_masks(len(cands), [s > 0 for s in sc.clause_scores])
                strict = not may_relax or and_masks(len(cands), [match, inbase]).any()
            if not strict:
                kept, cands = relax_clauses(mem, plans, base, deadline, clauses)
                inbase = _at(base, cands)
                sc = score_plans(mem, plans, cands, deadline=deadline)
                match = and_masks(len(cands), [sc.clause_scores[i] > 0 for i in kept])
                if kept != list(range(len(clauses))):
                    relaxed = True
                    dropped = [clauses[i].word for i in range(len(clauses)) if i not in kept]
            assert sc is not None
            matched_terms = sc.matched_terms
            score = np.zeros(len(cands), dtype=np.float32)
            for i in kept:
                score += sc.clause_scores[i]
            kwb = keyword_value_bonus(mem, q, cands, fields_cfg)  # a brand / category named by the query
            if kwb is not None:
                score *= kwb
            if len(kept) >= 2:
                wmax = max(c.weight for c in fields_cfg.values())
                best = np.zeros(len(cands), dtype=np.float32)
                for fname, fc in fields_cfg.items():
                    hits = [sc.clause_field_hit[i].get(fname) for i in kept]
                    if any(h is None for h in hits):
                        continue
                    allhit = and_masks(len(cands), hits)
                    np.maximum(best, allhit * np.float32(fc.weight / wmax), out=best)
                score *= 1.0 + SAME_FIELD_BONUS * best
                # proximity on a fixed-size window of the best candidates
                pc = np.flatnonzero(match if inbase is None else match & inbase)
                if len(pc) > PROXIMITY_WINDOW:
                    ps = score[pc]
                    kth = np.partition(ps, len(ps) - PROXIMITY_WINDOW)[len(ps) - PROXIMITY_WINDOW]
                    pc = pc[ps >= kth]
                deadline.check()
                prox = proximity_bonus(mem, q, cands[pc], fields_cfg)
                if prox is not None:
                    score[pc] *= 1.0 + PROXIMITY_BONUS * prox
        else:
            cands = np.flatnonzero(mem.live[:n])
            match = np.ones(len(cands), dtype=bool)
            score = np.ones(len(cands), dtype=np.float32)
            inbase = _at(base, cands)

        final = match if inbase is None else match & inbase
        if query.boosts:  # popularity boosts
            score = score * self._boost_factor(query.boosts)[cands]
        for bf in query.boost_filters:
            m = and_masks(n, [x for _, x in compile_filters(mem, bf.filters, self.id_field, deadline)])[cands]
            score = np.where(m, score * np.float32(max(0.0, 1.0 + float(bf.weight))), score).astype(np.float32)

        total = int(np.count_nonzero(final))
        facet_match = match if excl is None else match & np.take(excl, cands)
        deadline.check()
        facets_out = self._facets(query.facets, cands, facet_match, filters, deadline)
        deadline.check()

        # ranking: positions into cands, ties broken by slot (cands is sorted)
        k = offset + limit
        pos = np.flatnonzero(final)
        sort_keys = self._sort_keys(query.sort)
        if query.distinct is not None:
            answer = self._distinct(query, cands, pos, score, sort_keys, matched_terms, facets_out, relaxed, dropped,
                                    deadline)
        else:
            top = _ranked(pos, k, cands, score, sort_keys)[offset:]
            answer = Answer(total=total, hits=self._hits(query, cands[top], score[top], sort_keys, matched_terms, deadline),
                            facets=facets_out, relaxed=relaxed, dropped_words=dropped)
        answer.pinned = pinned
        return answer

    def _pinned(self, query: Query, filters: list[tuple[str | None, np.ndarray]], deadline: Deadline) -> list[Hit]:
        """``Query.pin_ids`` held by this shard that pass the filters, whatever ``q`` and
        ``exclude_ids`` say (a pin is excluded from the organic hits, not from itself): score 1,
        no highlights, in the order asked."""
        mem = self.mem
        slots = []
        for doc_id in dict.fromkeys(query.pin_ids):
            slot = mem.id_to_slot.get(doc_id)
            if slot is not None and mem.live[slot] and all(m[slot] for _, m in filters):
                slots.append(slot)
        if not slots:
            return []
        plain = msgspec.structs.replace(query, highlight=())
        return self._hits(plain, np.asarray(slots, dtype=np.int64), np.ones(len(slots), dtype=np.float32), [], set(),
                          deadline)

    def _distinct(self, query: Query, cands: np.ndarray, pos: np.ndarray, score: np.ndarray,
                  sort_keys: list[SortFn], matched_terms: set[str], facets_out: dict[str, Any], relaxed: bool,
                  dropped: list[str], deadline: Deadline) -> Answer:
        """``Query.distinct``: the best hit of each group (value of the field) in the query's order,
        ``total`` = groups, and every matching group's key and size for the merge (see
        ``search_workers.merge``). A document without a value is a group of its own.

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
        gkeys = keys_of[nz]
        k = max(0, query.offset) + max(0, query.limit)
        top = pos[:0]
        m = min(len(pos), 4 * k)
        while k and len(pos):
            deadline.check()
            ranked = _ranked(pos, m, cands, score, sort_keys)
            rg = np.take(first, cands[ranked])
            grouped = np.flatnonzero(rg >= 0)
            _, firsts = np.unique(rg[grouped], return_index=True)
            keep = np.sort(np.concatenate((grouped[firsts], np.flatnonzero(rg < 0))))
            if len(keep) >= k or m >= len(pos):
                top = ranked[keep[:k]]
                break
            m = min(len(pos), 4 * m)
        top = top[max(0, query.offset):]
        hits = self._hits(query, cands[top], score[top], sort_keys, matched_terms, deadline)
        for hit, o in zip(hits, np.take(first, cands[top]).tolist(), strict=True):
            if o >= 0:
                hit.group_size, hit.group_key = int(counts[o]), int(keys_of[o])
            else:
                hit.group_size = 1
        return Answer(total=len(nz) + ungrouped, hits=hits, facets=facets_out, relaxed=relaxed, dropped_words=dropped,
                      group_keys=gkeys.astype("<u8").tobytes(), group_counts=counts[nz].astype("<i8").tobytes(),
                      ungrouped=ungrouped)

    def _group_keys(self, field: str) -> np.ndarray:
        """``group_key_of`` each value ordinal of ``field`` (uint64), extended as values come
        (ordinals are never renumbered)."""
        vals = self.mem.kw_vals[field]
        keys = self._gkeys.get(field)
        if keys is None or len(keys) < len(vals):
            have = 0 if keys is None else len(keys)
            more = np.fromiter((group_key_of(v) for v in vals[have:]), dtype=np.uint64, count=len(vals) - have)
            keys = more if keys is None else np.concatenate((keys, more))
            self._gkeys[field] = keys
        return keys

    def _hits(self, query: Query, slots: np.ndarray, scores: np.ndarray, sort_keys: list[SortFn],
              matched_terms: set[str], deadline: Deadline) -> list[Hit]:
        mem = self.mem
        hidden = self.hidden
        hl_fields = [f for f in query.highlight if f not in hidden]
        keep = None if query.retrieve is None else (set(query.retrieve) | {self.id_field}) - hidden
        seen: dict[str, dict[str, bool]] = {f: {} for f in hl_fields}  # per field: chunk -> highlighted
        out: list[Hit] = []
        for slot, slot_score in zip(slots.tolist(), scores.tolist(), strict=True):
            # decoding a document holds the GIL throughout (~30 ms for 9 MB): not started when it
            # would end past the deadline (an event-loop attempt goes to a thread instead)
            deadline.check(len(mem.blobs[slot] or b"") / DECODE_BYTES_PER_SECOND)
            doc = mem.document(slot) or {}
            hl: dict[str, str] = {}
            for f in hl_fields:
                v = doc.get(f)
                if v is not None:
                    hl[f] = highlight_text(mem, v, matched_terms, f, seen[f])
            if keep is not None:
                out_doc = {k: v for k, v in doc.items() if k in keep}
            else:
                out_doc = {k: v for k, v in doc.items() if k not in hidden} if hidden else doc
            sv = [val(slot) for _, val in sort_keys] + [slot_score]
            out.append(Hit(id=mem.ids[slot], score=slot_score, document=out_doc, highlights=hl, sort_values=sv))
        return out

    def _clauses(self, query: Query, fields_cfg: Mapping[str, FieldWeight],
                 deadline: Deadline) -> tuple[list[Clause], dict[str, list[Clause]]]:
        """The query's clauses in the index language, and per queried field whose analyzer
        differs, the clauses as that analyzer reads the query (built once per analyzer)."""
        mem = self.mem
        q = query.q
        allow_prefix = any(c.prefix for c in fields_cfg.values())
        clauses = build_clauses(mem, q, query.typo, query.synonyms, allow_prefix, deadline=deadline)
        by_an: dict[int, list[Clause]] = {id(mem.analyzer): clauses}
        field_clauses: dict[str, list[Clause]] = {}
        for fname in fields_cfg:
            an = mem.field_an[fname]
            if an is not mem.analyzer:
                if id(an) not in by_an:
                    by_an[id(an)] = build_clauses(mem, q, query.typo, query.synonyms, allow_prefix, an=an,
                                                  deadline=deadline)
                field_clauses[fname] = by_an[id(an)]
        return clauses, field_clauses

    def _boost_factor(self, boosts: tuple[Boost, ...]) -> np.ndarray:
        """``1 + sum(weight * modifier(value))`` per slot, cached until the shard changes."""
        mem = self.mem
        key = (mem.version, mem.n, boosts)
        hit = self._boost_cache.get(key)
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
        if len(self._boost_cache) >= 8 or any(k[0] != mem.version for k in self._boost_cache):
            self._boost_cache.clear()
        self._boost_cache[key] = factor
        return factor

    def _sort_keys(self, sort: Sequence[SortKey]) -> list[SortFn]:
        mem = self.mem
        out: list[SortFn] = []
        for i, item in enumerate(sort):
            fname, desc = item.field, item.desc
            if item.relevance:
                out.append(((lambda c, s, desc=desc: (-s if desc else s).astype(np.float64)),
                            (lambda slot: None)))
                continue
            spec = self.fields.get(fname)
            if spec is None or not spec.sortable:
                raise EngineError(f"field {fname!r} is not sortable", "FIELD_NOT_SORTABLE",
                                  [{"path": f"sort[{i}]", "message": "field is not sortable"}])
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

    def _facets(self, facets: Sequence[Facet], cands: np.ndarray, match: np.ndarray,
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
                cum = np.concatenate(([0], np.cumsum(self._count(("range", fname, tuple(edges.tolist())), docs))))
                out[fname] = [max(0, int(cum[_bin(edges, end, len(edges) + 1)] - cum[_bin(edges, start, 0)]))
                              for start, end in bounds]
                continue
            if spec.type in ("keyword", "keyword[]", "text"):
                vals_list = mem.kw_vals[fname]
                cnt = self._count(("kw", fname, ()), docs)
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

    def _count(self, key: tuple[str, str, tuple], docs: np.ndarray) -> np.ndarray:
        """Documents per bin of a facet among ``docs`` (live slots), see :class:`FacetBins`.
        More than half of the live documents: the counts of all of them (cached) minus those of
        the others, so the work never exceeds half the shard."""
        mem = self.mem
        fb = self._facet_bins(key)
        if fb.codes is None:  # many values per document: the (slot, ordinal) pairs
            return np.bincount(mem.kw_ordinals(key[1], docs), minlength=fb.nbins)
        if len(docs) * 2 > mem.n_live:
            rest = mem.live[: mem.n].copy()
            rest[docs] = False
            return fb.everyone - self._count(key, np.flatnonzero(rest))
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


def _ranked(pos: np.ndarray, k: int, cands: np.ndarray, score: np.ndarray, sort_keys: list[SortFn]) -> np.ndarray:
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


def _at(mask: np.ndarray | None, slots: np.ndarray) -> np.ndarray | None:
    """``mask`` at ``slots`` (``np.take``: int32 slots index at a third of the cost of ``mask[slots]``)."""
    return None if mask is None else np.take(mask, slots)


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
