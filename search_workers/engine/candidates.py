"""Stage 2 of a shard's search: the clauses' posting lists per queried field (the *plans*) and the
candidate slots, the documents that can match.

Evaluation follows the matches, not the shard: :func:`plan_clauses` finds each clause's posting
lists per field, :func:`candidate_slots` takes the rarest clause's docs and keeps those every
other clause has (binary search of few candidates in long lists, a slot map otherwise, masks for
broad words); only those are scored (``scoring.py``).

Typo discipline (:func:`plan_candidates`): a word whose exact/glued/prefix forms find
TYPO_WORD_THRESHOLD documents loses its typo variants ("iphone" does not find every "phone"),
unless the query then finds fewer than TYPO_QUERY_THRESHOLD documents; synonyms are never pruned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np

from shared.contract import FieldWeight

from .clauses import TYPO_WORD_THRESHOLD, Alt, Clause
from .errors import NO_DEADLINE, Deadline
from .filters import and_masks
from .memindex import MAX_TF, MemIndex, Postings

#: ... unless the query finds fewer documents than this without them
TYPO_QUERY_THRESHOLD = 8
EMPTY_SLOTS = np.zeros(0, dtype=np.int32)


def idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))



@dataclass
class FieldPlan:
    """One clause in one field: the alternatives found there and the clause's idf in that field."""

    field: str
    weight: float
    idf: float
    present: list[tuple[Alt, list[Postings]]]


def plan_clauses(idx: MemIndex, clauses: list[Clause], fields: Mapping[str, FieldWeight],
                 field_clauses: dict[str, list[Clause]] | None = None) -> list[list[FieldPlan]]:
    """Per clause, per queried field: the posting lists of the alternatives present there.
    ``field_clauses``: a field's own clauses (from its analyzer) instead of ``clauses``."""
    n_live = max(idx.n_live, 1)
    plans: list[list[FieldPlan]] = []
    for i, base_clause in enumerate(clauses):
        fps: list[FieldPlan] = []
        for fname, fcfg in fields.items():
            plist = idx.postings.get(fname)
            if not plist:
                continue
            c = field_clauses[fname][i] if field_clauses and fname in field_clauses else base_clause
            use_typo = fcfg.typo
            use_prefix = fcfg.prefix
            present: list[tuple[Alt, list[Postings]]] = []
            for a in c.alts:
                if (not use_typo and a.kind == "typo") or (not use_prefix and a.kind == "prefix"):
                    continue
                if a.kind in ("phrase", "split"):
                    ph = phrase_postings(idx, fname, a.terms)
                    if ph is not None:
                        present.append((a, [ph]))
                    continue
                got = [plist.get(t) for t in a.terms]
                if all(p is not None and len(p.docs) for p in got):
                    present.append((a, cast(list[Postings], got)))
            if not present:
                continue
            fps.append(FieldPlan(fname, float(fcfg.weight), _planidf(n_live, present), present))
        plans.append(fps)
    return plans


def _planidf(n_live: int, present: list[tuple[Alt, list[Postings]]]) -> float:
    """The clause's idf in a field: that of its most frequent (single-word) alternative."""
    singles = [len(ps[0].docs) for a, ps in present if len(a.terms) == 1]
    # posting lists still hold deleted docs until compaction: df never above the live count
    max_df = max(singles) if singles else max(len(ps[0].docs) for _, ps in present)
    return idf(n_live, min(max_df, n_live))


def _plain_docs(idx: MemIndex, fps: list[FieldPlan], enough: int) -> int:
    """Documents a clause finds without typos (exact, glued, prefix alternatives), counted
    exactly only below ``enough``."""
    arrays = [ps[0].docs for fp in fps if fp.weight > 0 for a, ps in fp.present
              if a.kind in ("exact", "join", "prefix", "phrase", "split")]
    if not arrays:
        return 0
    sizes = [len(d) for d in arrays]
    if max(sizes) >= enough or sum(sizes) < enough:
        return max(max(sizes), min(sum(sizes), enough - 1))
    return len(_union(idx, arrays))


def gate_typos(idx: MemIndex, plans: list[list[FieldPlan]], enough: int = TYPO_WORD_THRESHOLD) -> list[list[FieldPlan]] | None:
    """The plans without the typo variants of the words whose exact form (or glued or prefix
    alternatives) finds ``enough`` documents (Typesense's ``typo_tokens_threshold``, per word):
    "iphone" must not find every "phone". ``None``: no word has typo variants to lose.
    Synonyms stay (the merchant's explicit intent)."""
    n_live = max(idx.n_live, 1)
    out: list[list[FieldPlan]] = []
    changed = False
    for fps in plans:
        if not any(a.kind == "typo" for fp in fps for a, _ in fp.present) or _plain_docs(idx, fps, enough) < enough:
            out.append(fps)
            continue
        changed = True
        kept: list[FieldPlan] = []
        for fp in fps:
            present = [(a, ps) for a, ps in fp.present if a.kind != "typo"]
            if present:
                kept.append(FieldPlan(fp.field, fp.weight, _planidf(n_live, present), present))
        out.append(kept)
    return out if changed else None


def plan_candidates(idx: MemIndex, clauses: list[Clause], fields: Mapping[str, FieldWeight],
                    field_clauses: dict[str, list[Clause]] | None, any_clause: bool, base: np.ndarray | None,
                    deadline: Deadline = NO_DEADLINE) -> tuple[list[list[FieldPlan]], np.ndarray]:
    """The plans and candidate slots of a query: first without the typo variants of words
    found often enough as typed (:func:`gate_typos`); with them all when that finds fewer
    than TYPO_QUERY_THRESHOLD documents within ``base`` (then typos come before dropping words)."""
    plans = plan_clauses(idx, clauses, fields, field_clauses)
    deadline.check()
    gated = gate_typos(idx, plans)
    if gated is not None:
        cands = candidate_slots(idx, gated, any_clause)
        found = len(cands) if base is None else int(np.count_nonzero(np.take(base, cands)))
        if found >= TYPO_QUERY_THRESHOLD:
            return gated, cands
        deadline.check()
    return plans, candidate_slots(idx, plans, any_clause)


def phrase_postings(idx: MemIndex, fname: str, terms: tuple[str, ...]) -> Postings | None:
    """Postings of the documents holding ``terms`` as consecutive words of ``fname`` (its first
    POSITIONS words: the proximity rows), tf = times found; ``None``: nowhere. Cached until the
    shard changes."""
    key = ("phrase", fname, terms)
    cache, hit = idx.cached(key)
    if hit is not None:
        return hit or None  # type: ignore[return-value]
    out: Postings | None = None
    plist = idx.postings.get(fname) or {}
    got = [plist.get(t) for t in terms]
    ids = [idx.chunk_ids.get(t, -2) for t in terms]
    pos = idx.pos.get(fname)
    # a phrase longer than the rows (as wide as the field's longest document, at most POSITIONS
    # words) is in none of them
    if pos is not None and all(p is not None and len(p.docs) for p in got) and min(ids) >= 0 \
            and len(terms) <= pos.shape[1]:
        docs = cast(Postings, got[0]).docs
        for p in got[1:]:
            docs = np.intersect1d(docs, cast(Postings, p).docs, assume_unique=True)
        if len(docs):
            rows = np.take(pos, docs, axis=0)
            width = rows.shape[1]
            k = len(terms)
            hit_at = np.ones((len(docs), width - k + 1), dtype=bool)
            for j, cid in enumerate(ids):
                hit_at &= rows[:, j:width - k + 1 + j] == cid
            tf = np.count_nonzero(hit_at, axis=1)
            keep = tf > 0
            if keep.any():
                out = Postings()
                out.docs = docs[keep].astype(np.int32)
                out.tfs = np.minimum(tf[keep], MAX_TF).astype(np.uint8)
    cache[key] = out if out is not None else False
    return out


def _union(idx: MemIndex, arrays: list[np.ndarray]) -> np.ndarray:
    """Sorted live slots found in any of ``arrays`` (sorted posting doc lists)."""
    if not arrays:
        return EMPTY_SLOTS
    if len(arrays) == 1:
        c = arrays[0]
    elif sum(len(d) for d in arrays) * 16 > idx.n:  # a large union: through a mask over the shard
        mask = np.zeros(idx.n, dtype=bool)
        for d in arrays:
            mask[d] = True
        return np.flatnonzero(mask & idx.live[: idx.n]).astype(np.int32)
    else:
        c = np.concatenate(arrays)
        c.sort()
        c = c[np.concatenate(([True], c[1:] != c[:-1]))]
    return c[idx.live[c]]


def locate(docs: np.ndarray, cands: np.ndarray, s2c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in ``cands``, indices in ``docs``) of the candidates found in a posting list.

    Few candidates against a long list: binary search them in it; else look every posting up in
    the slot -> position map (``s2c`` must hold ``cands``)."""
    n_docs = len(docs)
    if len(cands) * 16 < n_docs:
        j = np.searchsorted(docs, cands)
        np.minimum(j, n_docs - 1, out=j)
        ok = docs[j] == cands
        return np.flatnonzero(ok), j[ok]
    pos = np.take(s2c, docs)
    sel = np.flatnonzero(pos >= 0)
    return pos[sel], sel


def candidate_slots(idx: MemIndex, plans: list[list[FieldPlan]], any_clause: bool) -> np.ndarray:
    """Sorted live slots that can match.  Any word: every clause's docs.  All words: the docs of
    the clause with the fewest postings, kept when every other clause has them too."""
    groups = [[ps[0].docs for fp in fps for _, ps in fp.present] for fps in plans]
    if any_clause:
        return _union(idx, [d for g in groups for d in g])
    groups.sort(key=lambda g: sum(len(d) for d in g))
    n = idx.n
    if sum(len(d) for d in groups[0]) * 16 > n:  # broad words: masks over the shard
        return np.flatnonzero(and_masks(n, [clause_mask(idx, fps) for fps in plans])).astype(np.int32)
    cands = _union(idx, groups[0])
    s2c = idx.slot_positions()
    for g in groups[1:]:
        if not len(cands):
            break
        s2c[cands] = np.arange(len(cands), dtype=np.int32)
        try:
            member = np.zeros(len(cands), dtype=bool)
            for d in g:
                member[locate(d, cands, s2c)[0]] = True
        finally:
            s2c[cands] = -1
        cands = cands[member]
    return cands


def clause_mask(idx: MemIndex, fps: list[FieldPlan]) -> np.ndarray:
    """The live slots a clause scores above zero in (see :func:`score_plans`), as a mask."""
    n = idx.n
    m = np.zeros(n, dtype=bool)
    for fp in fps:
        if fp.weight <= 0:  # scores nothing, so matches nothing
            continue
        for a, ps in fp.present:
            if len(ps) == 1:
                if len(ps[0].docs) * 16 > n:
                    m |= _posting_mask(idx, fp.field, " ".join(a.terms), ps[0])
                else:
                    m[ps[0].docs] = True
            else:  # a multi-word synonym matches where every word is in this field
                every = np.zeros(n, dtype=bool)
                every[ps[0].docs] = True
                for p in ps[1:]:
                    has = np.zeros(n, dtype=bool)
                    has[p.docs] = True
                    every &= has
                m |= every
    return m & idx.live[:n]


def _posting_mask(idx: MemIndex, fname: str, term: str, p: Postings) -> np.ndarray:
    """The slots of a long posting list as a mask over the shard, kept with the expansions until
    the shard changes (OR-ing it costs a tenth of scattering its int32 slots), within its pool
    (``memindex.MASK_POOLS``)."""
    key = ("mask", fname, term)
    _, hit = idx.cached(key)
    if hit is not None:
        return hit  # type: ignore[return-value]
    m = np.zeros(idx.n, dtype=bool)
    m[p.docs] = True
    idx.keep_mask(key, m)
    return m
