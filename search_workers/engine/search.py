"""The search pipeline of one shard: a :class:`~shared.contract.Query` in, an
:class:`~shared.contract.Answer` out, evaluated over the shard's :class:`~.memindex.MemIndex`.

Stages, a module each: ``clauses.py`` (the query's words and their alternatives) ->
``candidates.py`` (their posting lists, the documents that can match; ``relax.py`` when all words
find nothing together) -> ``filters.py`` (masks gathered at the candidates) -> ``scoring.py`` ->
``facets.py`` and ``ranking.py`` (order, top ``k``, groups) -> ``highlight.py`` (the page's hits).

* **Queries never touch Whoosh.**  Per-query posting loops in Python are what made raw Whoosh
  slow (p99 0.5 s, facets 1.7 s).  The in-memory index holds postings as numpy arrays, BM25 field
  lengths, keyword ordinals (``np.bincount`` facets), numeric/date/boolean columns, a live mask
  and a term dictionary (sorted list + deletion index for typos); a query is evaluated with
  vectorised numpy over the candidates that can match.
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
* ``semantic`` (``semantic.py``): the nearest documents by a vector field join the keyword
  matches and the score blends the two; with ``ratio`` 1 or no words, the nearest alone.
* a searchable field's ``analyzer`` (mapping) applies to its query clauses, proximity and
  highlighting; one term dictionary serves every analysis.

Known gaps: ``suggest`` is not used by the engine (the suggestion index reads it); no
phrase/position data beyond the first 24 words of each field (used for the proximity bonus).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec
import numpy as np

from shared.contract import Answer, FieldWeight, Hit, Query, Semantic

from .candidates import plan_candidates
from .clauses import Clause, build_clauses
from .errors import Deadline, EngineError
from .facets import FacetCounter
from .filters import and_masks, compile_filters
from .highlight import page_hits
from .mapping import FieldSpec
from .memindex import MemIndex
from .ranking import BoostFactors, Groups, SortFn, ranked, sort_keys
from .relax import relax_clauses
from .scoring import combine, score_plans
from .semantic import blended, ideal_score, nearest, query_vector, vector_field


@dataclass
class Matches:
    """What a query's words match (positions aligned with ``cands``, sorted live slots)."""

    cands: np.ndarray
    match: np.ndarray  # the candidate matches the words kept
    score: np.ndarray
    inbase: np.ndarray | None  # the candidate passes the filters and exclusions (None: no filter)
    matched_terms: set[str] = field(default_factory=set)
    relaxed: bool = False
    dropped: list[str] = field(default_factory=list)
    ideal: float = 1.0  # the score of a document matching every word well (semantic.ideal_score)
    window: np.ndarray | None = None  # the matches the best by score alone are among (scoring.combine)


class ShardSearch:
    """Answers queries over ``mem`` with the shard's compiled ``fields``; the caller holds the
    shard's read lock."""

    def __init__(self, mem: MemIndex, fields: dict[str, FieldSpec], id_field: str, hidden: frozenset[str]) -> None:
        self.mem = mem
        self.fields = fields
        self.id_field = id_field
        self.hidden = hidden  # not retrievable: left out of hits
        self._all_fields = {f: FieldWeight() for f in mem.searchable}
        self._boosts = BoostFactors(mem)
        self._facets = FacetCounter(mem, fields)
        self._groups = Groups(mem)

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

        filters = compile_filters(mem, query.filters, self.id_field, deadline, query.hierarchies)
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

        deadline.check()
        sem = query.semantic
        qv = self._query_vector(sem)
        vector_only = qv is not None and sem is not None and (sem.ratio >= 1 or not q.strip())
        found: Matches | None = None
        clauses, field_clauses = self._clauses(query, fields_cfg, deadline) if q.strip() and not vector_only else ([], {})
        if clauses:
            found = self._match(query, clauses, field_clauses, fields_cfg, base, deadline)
        elif not vector_only:
            cands = np.flatnonzero(mem.live[:n])
            found = Matches(cands, np.ones(len(cands), dtype=bool), np.ones(len(cands), dtype=np.float32),
                            _at(base, cands))
        if qv is not None and sem is not None:
            deadline.check()
            found = self._nearest(found, sem, qv, base, offset + limit)
        assert found is not None
        cands, match, score, inbase = found.cands, found.match, found.score, found.inbase

        final = match if inbase is None else match & inbase
        if query.boosts:  # popularity boosts
            score = score * self._boosts.factor(query.boosts)[cands]
        for bf in query.boost_filters:
            m = and_masks(n, [x for _, x in compile_filters(mem, bf.filters, self.id_field, deadline, query.hierarchies)])[cands]
            score = np.where(m, score * np.float32(max(0.0, 1.0 + float(bf.weight))), score).astype(np.float32)

        total = int(np.count_nonzero(final))
        facet_match = match if excl is None else match & np.take(excl, cands)
        deadline.check()
        facets_out = self._facets.count(query.facets, cands, facet_match, filters, deadline)
        deadline.check()

        # ranking: positions into cands, ties broken by slot (cands is sorted)
        pos = np.flatnonzero(final)
        keys = sort_keys(mem, self.fields, query.sort)
        if query.distinct is not None:
            g = self._groups.page(query, cands, pos, score, keys, deadline)
            hits = self._hits(query, cands[g.top], score[g.top], keys, found.matched_terms, deadline)
            for hit, o in zip(hits, np.take(g.first, cands[g.top]).tolist(), strict=True):
                if o >= 0:
                    hit.group_size, hit.group_key = int(g.counts[o]), int(g.keys_of[o])
                else:
                    hit.group_size = 1
            answer = Answer(total=g.total, hits=hits, facets=facets_out, relaxed=found.relaxed,
                            dropped_words=found.dropped, group_keys=g.keys_of[g.nz].astype("<u8").tobytes(),
                            group_counts=g.counts[g.nz].astype("<i8").tobytes(), ungrouped=g.ungrouped)
        else:
            # by score alone (nothing reorders the matches after combine), the page is among the
            # proximity window's matches: ranking them skips a partition of every match
            if (found.window is not None and not keys and not query.boosts and not query.boost_filters
                    and offset + limit <= len(found.window)):
                pos = found.window
            top = ranked(pos, offset + limit, cands, score, keys)[offset:]
            answer = Answer(total=total, hits=self._hits(query, cands[top], score[top], keys, found.matched_terms,
                                                         deadline),
                            facets=facets_out, relaxed=found.relaxed, dropped_words=found.dropped)
        answer.pinned = pinned
        return answer

    def _match(self, query: Query, clauses: list[Clause], field_clauses: dict[str, list[Clause]],
               fields_cfg: Mapping[str, FieldWeight], base: np.ndarray | None, deadline: Deadline) -> Matches:
        """The words' candidates, scored; with operator ``and`` and nothing matching within
        ``base``, the words that stay after relaxation (:func:`relax_clauses`), scored."""
        mem = self.mem
        plans, cands = plan_candidates(mem, clauses, fields_cfg, field_clauses, query.operator == "or", base, deadline)
        deadline.check()
        kept = list(range(len(clauses)))
        relaxed = False
        dropped: list[str] = []
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
        score, window = combine(mem, query.q, sc, kept, cands, match, inbase, fields_cfg, deadline)
        return Matches(cands, match, score, inbase, sc.matched_terms, relaxed, dropped,
                       ideal_score(mem, plans, fields_cfg), window)

    def _query_vector(self, sem: Semantic | None) -> np.ndarray | None:
        """The unit vector a semantic query ranks by (None: the keyword search alone)."""
        if sem is None:
            return None
        spec = vector_field(self.fields, sem.field)  # a wrong field is refused even at ratio 0
        return query_vector(spec, sem) if sem.ratio > 0 else None

    def _nearest(self, found: Matches | None, sem: Semantic, qv: np.ndarray, base: np.ndarray | None,
                 wanted: int) -> Matches:
        """The documents nearest ``qv`` alone (``found`` None: vector ranking only), or joined to
        the keyword matches ``found`` with blended scores (``semantic.blended``)."""
        mem = self.mem
        near = nearest(mem, self.fields[sem.field], qv, base, max(sem.depth, wanted))
        column = mem.vectors[sem.field]
        if found is None:
            return Matches(near, np.ones(len(near), dtype=bool), column.cosines(near, qv), _at(base, near))
        union, blend, matched = blended(found.cands, found.score / found.ideal, found.match, near, column, qv,
                                        sem.ratio)
        return Matches(union, matched, blend, _at(base, union), found.matched_terms, found.relaxed, found.dropped)

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
        # the sort values too: an answer shows some of them (a distance from ``near``)
        keys = sort_keys(mem, self.fields, query.sort)
        return self._hits(plain, np.asarray(slots, dtype=np.int64), np.ones(len(slots), dtype=np.float32), keys, set(),
                          deadline)

    def _hits(self, query: Query, slots: np.ndarray, scores: np.ndarray, keys: list[SortFn],
              matched_terms: set[str], deadline: Deadline) -> list[Hit]:
        return page_hits(self.mem, query, slots, scores, keys, matched_terms, self.id_field, self.hidden, deadline)

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


def _at(mask: np.ndarray | None, slots: np.ndarray) -> np.ndarray | None:
    """``mask`` at ``slots`` (``np.take``: int32 slots index at a third of the cost of ``mask[slots]``)."""
    return None if mask is None else np.take(mask, slots)
