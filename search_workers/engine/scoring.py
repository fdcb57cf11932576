"""Stage 4 of a shard's search: the candidates' scores (per shard, comparable across shards, see
``search.py``).

* per field: BM25 (k1=1.2, b=0.75) of the best alternative, using one idf per clause and field
  (that of the clause's most frequent alternative, ``candidates.FieldPlan``) so that a rare
  misspelt term never outranks the exact word; the field score is multiplied by the field weight.
  A clause scores its best field plus 20 % of the other fields (a word in the name and the
  description is not worth twice a word in the name); the clause scores are summed.
* docs whose every clause matched inside one field get a bonus (up to +50 % for the heaviest
  field): ``iphone 7`` in the name beats ``iphone`` in the name and ``7`` in the description.
* proximity: among the PROXIMITY_WINDOW best documents (a fixed window, so paging stays
  consistent), up to +30 % for the share of adjacent query words found adjacent, in order, in
  the first 24 words of a field (the best field, whatever its weight): "iphone 6s 16gb" ranks
  "iPhone 6s 16GB" above "iPhone 6s Plus 16GB"; and up to 3 % more (COVERAGE_SHARE) for the
  share of the heaviest field's words that are query words (exactness: "Case for iPhone 6"
  above "Wrap Case for iPhone 6").
* a query naming a value of a queried keyword field (a brand, a category) multiplies the
  score of the documents holding it by ``1 + KEYWORD_VALUE_BONUS * share**2`` (the share of the
  query's words the value covers): :func:`keyword_value_bonus`.
* ``boosts`` multiply by ``1 + sum(weight * modifier(value))``; each matching ``boost_filters``
  entry multiplies by ``max(0, 1 + weight)`` (weight -1 sinks a document to score 0): ``ranking.py``.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import cast

import numpy as np

from shared.contract import FieldWeight

from .analysis import CHUNK_RE, TextAnalyzer
from .candidates import FieldPlan, locate
from .clauses import MAX_ATOMS
from .errors import NO_DEADLINE, Deadline
from .filters import and_masks, kw_mask
from .memindex import MemIndex, Postings

K1 = 1.2
B = 0.75
#: a query naming a value of a searchable keyword field (a brand, a category): documents holding
#: it get up to this much more score (the share of the query's words the value covers)
KEYWORD_VALUE_BONUS = 1.0
SAME_FIELD_BONUS = 0.5
PROXIMITY_BONUS = 0.3
PROXIMITY_WINDOW = 1000
#: part of the proximity bonus for the share of a field's words that are query words
COVERAGE_SHARE = 0.1
OTHER_FIELDS_FACTOR = 0.2


def tf_norm(idx: MemIndex, p: Postings, lens: np.ndarray, avg: float, j: np.ndarray | None = None) -> np.ndarray:
    """BM25 tf part of a posting list (at its positions ``j``, else all), computed for an average
    field length within 1 % (it moves slowly as documents come and go).  A whole list's is kept
    while ``idx.tf_norms`` has room for it; a few positions of a long list that is not kept are
    computed alone."""
    key = int(round(math.log(avg) / 0.01))
    tfn = idx.tf_norms.get(p, key)
    if tfn is None:
        a = math.exp(key * 0.01)
        if j is not None and len(j) * 4 < len(p.docs):
            return _tf_part(p.tfs[j], lens[p.docs[j]], a)
        tfn = _tf_part(p.tfs, lens[p.docs], a)
        idx.tf_norms.keep(p, key, tfn)
    return tfn if j is None else tfn[j]


def _tf_part(tfs: np.ndarray, lens: np.ndarray, avg: float) -> np.ndarray:
    t = tfs.astype(np.float32)  # (the same float32 arithmetic as ever)
    return ((K1 + 1.0) * t / (t + K1 * (1.0 - B + B * (lens / avg)))).astype(np.float32)  # type: ignore[no-any-return]


class Scored:
    __slots__ = ("clause_scores", "clause_field_hit", "matched_terms")

    def __init__(self) -> None:
        self.clause_scores: list[np.ndarray] = []
        self.clause_field_hit: list[dict[str, np.ndarray]] = []
        self.matched_terms: set[str] = set()



def score_plans(idx: MemIndex, plans: list[list[FieldPlan]], cands: np.ndarray, dense: bool | None = None,
                deadline: Deadline = NO_DEADLINE) -> Scored:
    """Clause scores over ``cands`` (positions aligned with it), see the module docstring.

    Work follows the candidates and the posting lists, never the shard size.  When the candidates
    are a large share of the shard, scores are accumulated by slot (no per-posting lookups) and
    gathered at the candidates once per clause and field."""
    m = len(cands)
    out = Scored()
    if dense is None:
        dense = m * 16 > idx.n
    size = idx.n if dense else m
    s2c = idx.slot_positions()
    if not dense:
        s2c[cands] = np.arange(m, dtype=np.int32)
    try:
        for fps in plans:
            deadline.check()
            total = np.zeros(m, dtype=np.float32)
            best = np.zeros(m, dtype=np.float32)
            hits: dict[str, np.ndarray] = {}
            for fp in fps:
                lens = idx.lengths[fp.field]
                avg = idx.avg_len(fp.field)
                fs = np.zeros(size, dtype=np.float32)
                first = True
                for a, ps in fp.present:
                    out.matched_terms.update(a.terms)
                    if len(ps) == 1:
                        p = ps[0]
                        if dense:  # (intp: an int32 index is converted on each use, twice below)
                            at, s = p.docs.astype(np.intp), tf_norm(idx, p, lens, avg) * np.float32(fp.idf * a.factor)
                        else:
                            at, j = locate(p.docs, cands, s2c)
                            if not len(at):
                                continue
                            s = tf_norm(idx, p, lens, avg, j) * np.float32(fp.idf * a.factor)
                        if first:  # fs is all zeros: plain scatter
                            fs[at] = s
                        else:
                            fs[at] = np.maximum(fs[at], s)
                        first = False
                    else:  # multi-word synonym: every word in this field, mean of their scores
                        acc = np.zeros(size, dtype=np.float32)
                        cnt = np.zeros(size, dtype=np.int8)
                        for p in ps:
                            if dense:
                                at, s = p.docs, tf_norm(idx, p, lens, avg) * np.float32(fp.idf)
                            else:
                                at, j = locate(p.docs, cands, s2c)
                                s = tf_norm(idx, p, lens, avg, j) * np.float32(fp.idf)
                            acc[at] += s
                            cnt[at] += 1
                        ok = cnt == len(ps)
                        np.maximum(fs, np.where(ok, acc / len(ps) * a.factor, 0).astype(np.float32), out=fs)
                        first = False
                if dense and m != idx.n:  # (m == n: every slot is a candidate, in order)
                    fs = np.take(fs, cands)  # (int32 slots: a third of the cost of fs[cands])
                hit = fs > 0
                if hit.any():
                    hits[fp.field] = hit
                    fs *= fp.weight
                    total += fs
                    np.maximum(best, fs, out=best)
            # best field counts fully, the other fields a little (a word found in the name and the
            # description is not worth twice a word found in the name)
            total = best + OTHER_FIELDS_FACTOR * (total - best)
            out.clause_scores.append(total)
            out.clause_field_hit.append(hits)
    finally:
        if not dense:
            s2c[cands] = -1
    return out


def proximity_bonus(idx: MemIndex, text: str, cands: np.ndarray, fields: Mapping[str, FieldWeight]) -> np.ndarray | None:
    """Per candidate in [0, 1 + COVERAGE_SHARE], the best of the queried fields (with a weight
    above 0): the share of adjacent query-word pairs found adjacent and in order in the field (its
    first POSITIONS words); in the heaviest fields (the product's name), plus COVERAGE_SHARE times
    the share of the field's words that are query words (Meilisearch's exactness, Typesense's
    verbatim match, as a degree: of two names holding the query as a phrase, the one with fewer
    other words - "Case for iPhone 6" over "Wrap Case for iPhone 6" - is the closer match; the
    lighter fields are left out: a third of the cost, no figure of ``benchmarks.relevance`` moves).

    How closely the words are found together does not depend on the field's weight (Algolia's
    proximity: the best attribute), the field scores do: a document holding "Wireless Chargers"
    as its category is as close a match of that query as one naming "Wireless Charger"."""
    chunks = CHUNK_RE.findall(text)[:MAX_ATOMS]
    if len(chunks) < 2 or not len(cands):
        return None
    best = np.zeros(len(cands), dtype=np.float32)
    npairs = len(chunks) - 1
    wmax = max(float(c.weight) for c in fields.values())
    for fname, fc in fields.items():
        pos = idx.pos.get(fname)
        if pos is None or fc.weight <= 0:
            continue
        an = idx.field_an.get(fname, idx.analyzer)
        qids = [idx.chunk_ids.get(an.chunk_main(c), -2) for c in chunks]  # -2: a word in no document
        pairs = [(a, b) for a, b in zip(qids, qids[1:], strict=False) if a >= 0 and b >= 0]
        if not pairs:
            continue
        # rows laid end to end: word b right after word a, not across two rows
        width = pos.shape[1]
        rows = np.take(pos, cands, axis=0)
        flat = rows.ravel()
        eqs = {q: flat == q for q in {q for pair in pairs for q in pair}}
        cnt = np.zeros(len(cands), dtype=np.float32)
        adj = np.zeros(len(flat), dtype=bool)
        for a, b in pairs:
            np.logical_and(eqs[a][:-1], eqs[b][1:], out=adj[:-1])
            adj[width - 1::width] = False
            cnt += _rows_any(adj, width)
        cnt *= np.float32(1.0 / npairs)
        if COVERAGE_SHARE and float(fc.weight) >= wmax:
            # the field's words that are query words, of its words (a row ends at its first -1)
            qset = {q for q in qids if q >= 0}
            for q in qset - eqs.keys():
                eqs[q] = flat == q
            inq = np.logical_or.reduce([eqs[q] for q in qset])
            own = _rows_count(inq, width).astype(np.float32)
            cnt += np.float32(COVERAGE_SHARE) * own / np.take(_row_words(idx, fname), cands)
        np.maximum(best, cnt, out=best)
    return best


def keyword_value_bonus(idx: MemIndex, text: str, cands: np.ndarray, fields: Mapping[str, FieldWeight]) -> np.ndarray | None:
    """Per candidate, the factor of documents holding a value of a queried keyword field that
    the query names (Algolia's attribute and exact criteria): "samsung" ranks Samsung's own
    products above cases "for Samsung Galaxy"; "iphone 7 case" the category "iPhone 7 Cases".
    ``1 + KEYWORD_VALUE_BONUS * share**2``, ``share``: of the query's words covered (the
    longest value of any field; squared: a value named by a few words of a long query is weak
    evidence); ``None`` when the query names no value."""
    if not len(cands):
        return None
    cover: np.ndarray | None = None
    n_words = 0
    for fname, fc in fields.items():
        spec = idx.fields.get(fname)
        if (fc.weight <= 0 or spec is None or spec.type not in ("keyword", "keyword[]") or fname not in idx.kw_ord
                or len(idx.kw_vals[fname]) > MAX_NAMED_VALUES):
            continue
        an = idx.field_an.get(fname, idx.analyzer)
        table, longest = _value_table(idx, fname, an)
        if not table:
            continue
        norms = [a.norm for a in an.query_atoms(text)[:MAX_ATOMS]]
        n_words = max(n_words, len(norms))
        fcover: np.ndarray | None = None
        for i in range(len(norms)):
            for j in range(min(len(norms), i + longest), i, -1):
                ords = table.get(tuple(norms[i:j]))
                if ords is None:
                    continue
                held = _holds(idx, fname, np.asarray(ords, dtype=np.int32), cands) * np.float32(j - i)
                fcover = held if fcover is None else np.maximum(fcover, held)
                break
        if fcover is not None:
            cover = fcover if cover is None else np.maximum(cover, fcover)
    if cover is None or not n_words:
        return None
    share = np.minimum(cover / np.float32(n_words), 1.0)
    return (1.0 + KEYWORD_VALUE_BONUS * share * share).astype(np.float32)


def _holds(idx: MemIndex, fname: str, ords: np.ndarray, cands: np.ndarray) -> np.ndarray:
    """Per candidate: holds one of the value ordinals ``ords`` of keyword field ``fname`` (work
    follows the candidates: a keyword's one value, or the candidates' runs of (slot, ordinal)
    pairs; a large share of the shard through a mask)."""
    if len(cands) * 8 > idx.n:  # the value's mask over the shard, kept until the shard changes
        key = ("held", fname, ords.tobytes())
        _, mask = idx.cached(key)
        if mask is None:
            mask = kw_mask(idx, fname, ords)
            idx.keep_mask(key, mask)
        return np.take(cast(np.ndarray, mask), cands)
    if idx.fields[fname].type == "keyword":
        first = np.take(idx.kw_first[fname], cands)
        return first == ords[0] if len(ords) == 1 else np.isin(first, ords)
    ps, po = idx.kw_ps[fname], idx.kw_po[fname]
    lo = np.searchsorted(ps, cands, "left")
    cnt = np.searchsorted(ps, cands, "right") - lo
    out = np.zeros(len(cands), dtype=bool)
    total = int(cnt.sum())
    if total:
        at = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        owner = np.repeat(np.arange(len(cands)), cnt)
        out[owner[np.isin(po[at], ords)]] = True
    return out


_VALUE_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
MAX_VALUE_WORDS = 6
#: a keyword field of more distinct values (SKUs, not brands or categories) is not read for names
MAX_NAMED_VALUES = 20_000  # (its table takes ~10 us a value to build, once per shard)


def _value_table(idx: MemIndex, fname: str, an: TextAnalyzer) -> tuple[dict[tuple[str, ...], list[int]], int]:
    """A keyword field's values as query atoms (normalised words) -> their ordinals, and the
    most words of a value; kept per shard and extended as values are added (ordinals only
    grow: a rebuilt value list starts the table over)."""
    per = _VALUE_TABLES.get(idx)
    if per is None:
        per = _VALUE_TABLES[idx] = {}
    vals = idx.kw_vals[fname]
    hit = per.get(fname)
    if hit is None or hit[0] is not vals or hit[1] > len(vals) or hit[4] is not an:
        hit = [vals, 0, {}, 0, an]
        per[fname] = hit
    if hit[1] < len(vals):
        table: dict[tuple[str, ...], list[int]] = hit[2]
        longest = hit[3]
        for o in range(hit[1], len(vals)):
            words = tuple(a.norm for a in an.query_atoms(vals[o][:200]))
            if 0 < len(words) <= MAX_VALUE_WORDS:
                table.setdefault(words, []).append(o)
                longest = max(longest, len(words))
        hit[1], hit[3] = len(vals), longest
    return hit[2], hit[3]


def _row_words(idx: MemIndex, fname: str) -> np.ndarray:
    """Per slot, the words of field ``fname`` in its proximity row (at least 1, as float32), kept
    until the shard changes."""
    key = ("row words", fname)
    cache, hit = idx.cached(key)
    if hit is None:
        pos = idx.pos[fname]
        hit = cache[key] = np.maximum(_rows_count((pos >= 0).ravel(), pos.shape[1]), 1).astype(np.float32)
    return cast(np.ndarray, hit)


def _rows_count(flags: np.ndarray, width: int) -> np.ndarray:
    """Per row of ``width`` booleans laid end to end: how many are set (8 at a time when rows
    allow: a row's uint64 words added, then their bytes, a tenth of ``count_nonzero(axis=1)``)."""
    if width % 8 or width > 255:
        return np.count_nonzero(flags.reshape(-1, width), axis=1)
    w = flags.view(np.uint64).reshape(-1, width // 8)
    s = w[:, 0].copy()
    for j in range(1, width // 8):
        s += w[:, j]  # (each byte of the sum counts at most width / 8: no carry)
    return (s * np.uint64(0x0101010101010101)) >> np.uint64(56)  # type: ignore[no-any-return]


def _rows_any(flags: np.ndarray, width: int) -> np.ndarray:
    """Per row of ``width`` booleans laid end to end: any set (8 at a time when rows allow)."""
    if width % 8 == 0:
        return flags.view(np.uint64).reshape(-1, width // 8).any(axis=1)  # type: ignore[return-value]
    return flags.reshape(-1, width).any(axis=1)  # type: ignore[return-value]


def combine(idx: MemIndex, text: str, sc: Scored, kept: list[int], cands: np.ndarray, match: np.ndarray,
            inbase: np.ndarray | None, fields: Mapping[str, FieldWeight],
            deadline: Deadline = NO_DEADLINE) -> tuple[np.ndarray, np.ndarray | None]:
    """Per candidate, the query's score: the kept clauses' scores summed, times the bonuses of a
    keyword value the query names, of every clause found in one field, and of proximity (among the
    PROXIMITY_WINDOW best matches that pass the filters, ``inbase``).

    And that window when it left matches out (positions into ``cands``, ascending): every match
    outside it scores below every match in it (ties at its edge are all in, and the bonus only
    raises), so the first ``k <= len(window)`` by score alone are among its matches."""
    score = np.zeros(len(cands), dtype=np.float32)
    for i in kept:
        score += sc.clause_scores[i]
    kwb = keyword_value_bonus(idx, text, cands, fields)  # a brand / category named by the query
    if kwb is not None:
        score *= kwb
    if len(kept) >= 2:
        wmax = max(c.weight for c in fields.values())
        best = np.zeros(len(cands), dtype=np.float32)
        for fname, fc in fields.items():
            hits = [sc.clause_field_hit[i].get(fname) for i in kept]
            if any(h is None for h in hits):
                continue
            allhit = and_masks(len(cands), hits)
            np.maximum(best, allhit * np.float32(fc.weight / wmax), out=best)
        score *= 1.0 + SAME_FIELD_BONUS * best
        # proximity on a fixed-size window of the best candidates
        pc = np.flatnonzero(match if inbase is None else match & inbase)
        window = None
        if len(pc) > PROXIMITY_WINDOW:
            ps = score[pc]
            kth = np.partition(ps, len(ps) - PROXIMITY_WINDOW)[len(ps) - PROXIMITY_WINDOW]
            pc = window = pc[ps >= kth]
        deadline.check()
        prox = proximity_bonus(idx, text, cands[pc], fields)
        if prox is not None:
            score[pc] *= 1.0 + PROXIMITY_BONUS * prox
        return score, window
    return score, None
